// Finding a NaN or an infinity in float data: the engine's finite check and the session's check of
// the weights after every execution share it.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <span>

namespace ipu::engine {

// The index of the first NaN or infinity in `values`, if any.
inline std::optional<size_t> first_non_finite(std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) return i;
  }
  return std::nullopt;
}

} // namespace ipu::engine
