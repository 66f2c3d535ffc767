#include "runtime/engine/rounding.h"

#include "runtime/base/half.h"
#include "runtime/base/splitmix64.h"

namespace ipu::engine {

RoundingStream RoundingStream::of(uint64_t seed, uint32_t compute_set, uint64_t execution, uint32_t tensor,
                                  uint32_t replica) {
  uint64_t key = splitmix64(seed, compute_set);
  key = splitmix64(key, execution);
  key = splitmix64(key, (uint64_t{tensor} << 32) | replica);
  return {key};
}

void round_to_half(float* data, uint64_t begin, uint64_t end, const RoundingStream* stream) {
  if (stream == nullptr) {
    for (uint64_t i = begin; i < end; ++i)
      data[i] = ipu::round_to_half(data[i]);
    return;
  }
  for (uint64_t i = begin; i < end; ++i) {
    const auto random = static_cast<uint32_t>(splitmix64(stream->key, i) >> 32);
    data[i] = round_to_half_stochastic(data[i], random);
  }
}

} // namespace ipu::engine
