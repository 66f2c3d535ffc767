// Rounding of FLOAT16 tensors' elements to binary16 (runtime/base/half.h), as the device rounds
// each value it writes to an fp16 tensor: to nearest even, or stochastically (docs/executable_format.md).
#pragma once

#include <cstdint>
#include <vector>

namespace ipu::engine {

struct RoundingOptions {
  // Rounds the values compute sets write stochastically instead of to nearest (the IPU's
  // stochastic rounding). Values from the host and all-reduce results round to nearest.
  bool stochastic = false;
  uint64_t seed = 0;
};

// Identifies one write of one tensor for stochastic rounding: the random number of an element is
// a hash of (seed, compute set, how many times it has run, tensor, replica of the job, element),
// so a result does not depend on threads, task splits or the order in which work runs.
struct RoundingStream {
  uint64_t key = 0;
  static RoundingStream of(uint64_t seed, uint32_t compute_set, uint64_t execution, uint32_t tensor,
                           uint32_t replica);
};

// Rounds data[begin, end) to binary16 values: to nearest even, or stochastically with `stream`'s
// random numbers when it is given.
void round_to_half(float* data, uint64_t begin, uint64_t end, const RoundingStream* stream);

// The loops that round to nearest, one per instruction set this CPU runs, widest first:
// round_to_half uses the first, and the tests run each.
struct NearestRoundingLoop {
  const char* isa;
  void (*round)(float* data, uint64_t n);
};
std::vector<NearestRoundingLoop> nearest_rounding_loops();

} // namespace ipu::engine
