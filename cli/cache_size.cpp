#include "cli/cache_size.h"

#include <cctype>
#include <cstdlib>

namespace ipu::cli {

std::optional<uint64_t> parse_size(const std::string& text) {
  size_t i = 0;
  uint64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (i == 0) return std::nullopt;
  std::string unit = text.substr(i);
  for (char& c : unit)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.ends_with("B")) unit.pop_back(); // "MB"
  if (unit.size() >= 2 && unit.ends_with("I")) unit.pop_back(); // "MiB"
  int shift = 0;
  if (unit.empty() || unit == "B")
    shift = 0;
  else if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else
    return std::nullopt;
  if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::string default_cache_max_size() {
  const char* env = std::getenv("IPUCC_CACHE_MAX_SIZE");
  return env && *env ? env : "5G";
}

} // namespace ipu::cli
