// Deterministic weight initializers. The random stream is the splitmix64 counter generator of
// the synthetic data set, so initial weights are identical on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/frontend/graph_spec.h"

namespace ipu::frontend {

// Glorot uniform: `count` values from U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
std::vector<float> glorot_uniform(int64_t fan_in, int64_t fan_out, int64_t count, uint64_t seed);

std::vector<float> initial_values(const InitializerSpec& init, int64_t fan_in, int64_t fan_out,
                                  int64_t count);

} // namespace ipu::frontend
