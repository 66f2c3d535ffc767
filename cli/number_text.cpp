#include "cli/number_text.h"

#include <cmath>
#include <cstdio>

namespace ipu::cli {
namespace {

std::string grouped(std::string digits) {
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

} // namespace

std::string with_commas(uint64_t n) {
  return grouped(std::to_string(n));
}

std::string rounded_with_commas(double value) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%.0f", std::abs(value));
  return (value < -0.5 ? "-" : "") + grouped(digits);
}

} // namespace ipu::cli
