// A kernel's report of data outside what its op defines, and the text the engine's error gives
// for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ipu::kernels {

// An index or class label out of range, reported instead of writing a wrong answer: the element,
// its value and the valid range [low, high). Shapes and params cannot fault; they were validated
// when the executable loaded.
struct KernelFault {
  const char* quantity = nullptr; // what was out of range: "index", "target", "label"; null: none
  const char* operand = nullptr;  // the operand holding it
  int64_t element = 0;            // its element in that operand
  double value = 0;
  int64_t low = 0;
  int64_t high = 0;
  std::optional<int64_t> ignore_index; // a value outside the range that is valid all the same

  explicit operator bool() const { return quantity != nullptr; }
};

KernelFault out_of_range(const char* quantity, const char* operand, int64_t element, double value,
                         int64_t low, int64_t high, std::optional<int64_t> ignore_index = std::nullopt);

// "index 17 at indices[4] is outside [-10, 10)".
std::string describe(const KernelFault& fault);

} // namespace ipu::kernels
