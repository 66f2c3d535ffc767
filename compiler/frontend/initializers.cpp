#include "compiler/frontend/initializers.h"

#include <cmath>

#include "runtime/base/splitmix64.h"

namespace ipu::frontend {
std::vector<float> glorot_uniform(int64_t fan_in, int64_t fan_out, int64_t count, uint64_t seed) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  std::vector<float> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i) {
    const double u = static_cast<double>(splitmix64(seed, i) >> 11) * 0x1.0p-53; // [0, 1)
    values[i] = static_cast<float>((2.0 * u - 1.0) * limit);
  }
  return values;
}

std::vector<float> initial_values(const InitializerSpec& init, int64_t fan_in, int64_t fan_out,
                                  int64_t count) {
  if (init.type == "glorot_uniform") return glorot_uniform(fan_in, fan_out, count, init.seed);
  return std::vector<float>(static_cast<size_t>(count), 0.0f);
}

} // namespace ipu::frontend
