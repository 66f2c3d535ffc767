#include "runtime/kernels/kernel_fault.h"

#include <cmath>
#include <cstdio>

namespace ipu::kernels {
namespace {

// Indices and labels are integers held as floats: print them as integers, anything else
// (a fraction, NaN, a huge value) as the float it is.
std::string value_text(double value) {
  if (std::nearbyint(value) == value && std::abs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

} // namespace

KernelFault out_of_range(const char* quantity, const char* operand, int64_t element, double value,
                         int64_t low, int64_t high, std::optional<int64_t> ignore_index) {
  KernelFault fault;
  fault.quantity = quantity;
  fault.operand = operand;
  fault.element = element;
  fault.value = value;
  fault.low = low;
  fault.high = high;
  fault.ignore_index = ignore_index;
  return fault;
}

std::string describe(const KernelFault& fault) {
  std::string text = std::string(fault.quantity) + " " + value_text(fault.value) + " at " + fault.operand +
                     "[" + std::to_string(fault.element) + "] is outside [" + std::to_string(fault.low) +
                     ", " + std::to_string(fault.high) + ")";
  if (fault.ignore_index) text += " and is not the ignore_index " + std::to_string(*fault.ignore_index);
  return text;
}

} // namespace ipu::kernels
