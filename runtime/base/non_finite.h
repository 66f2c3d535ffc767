// Finding a NaN or an infinity in float data: the engine's finite check, the session's check of
// the weights after every execution and the finite check of dynamic loss scaling share it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace ipu {

// Whether every value is finite. A float is not when its exponent bits are all ones; testing the
// bits and or-ing the answers has no order and no early exit, so the compiler runs it in vector
// lanes (std::isfinite in a loop that stops at the first hit stays scalar).
inline bool all_finite(std::span<const float> values) {
  constexpr uint32_t kExponentBits = 0x7f800000u;
  uint32_t non_finite = 0;
  for (const float value : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    non_finite |= static_cast<uint32_t>((bits & kExponentBits) == kExponentBits);
  }
  return non_finite == 0;
}

// The index of the first NaN or infinity in `values`, if any: blocks that all_finite passes are
// skipped whole, and only a block that fails is searched element by element.
inline std::optional<size_t> first_non_finite(std::span<const float> values) {
  constexpr size_t kBlock = 4096;
  for (size_t start = 0; start < values.size(); start += kBlock) {
    const std::span<const float> block = values.subspan(start, std::min(kBlock, values.size() - start));
    if (all_finite(block)) continue;
    for (size_t i = 0; i < block.size(); ++i) {
      if (!std::isfinite(block[i])) return start + i;
    }
  }
  return std::nullopt;
}

} // namespace ipu
