#include "runtime/engine/rounding.h"

#include "runtime/base/half.h"
#include "runtime/base/splitmix64.h"

namespace ipu::engine {
namespace {

// Rounds data[0, n) to the nearest binary16 values. The loop is compiled three times, for
// AVX-512, AVX2 and x86-64's baseline SSE2, and the widest this CPU has runs: the same operations
// on 16, 8 or 4 lanes, so the same bits. SSE2 alone has no unsigned compare or blend and takes
// about 0.7 ns an element here; AVX-512, about 0.13. Chosen by a test of the CPU, not by an ifunc
// (target_clones): clang's ThreadSanitizer instruments an ifunc's resolver, which then runs
// before the sanitizer is ready and crashes the program as it loads.
[[gnu::always_inline]] inline void round_span_to_nearest(float* data, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    data[i] = ipu::round_to_half(data[i]);
}
void round_baseline(float* data, uint64_t n) {
  round_span_to_nearest(data, n);
}
#if defined(__x86_64__)
[[gnu::target("avx2")]] void round_avx2(float* data, uint64_t n) {
  round_span_to_nearest(data, n);
}
[[gnu::target("avx512f")]] void round_avx512(float* data, uint64_t n) {
  round_span_to_nearest(data, n);
}
#endif

void round_to_nearest_half(float* data, uint64_t n) {
  static const NearestRoundingLoop widest = nearest_rounding_loops().front();
  widest.round(data, n);
}

} // namespace

std::vector<NearestRoundingLoop> nearest_rounding_loops() {
  std::vector<NearestRoundingLoop> loops;
#if defined(__x86_64__)
  __builtin_cpu_init(); // may run before libgcc's own initialisation (static constructors)
  if (__builtin_cpu_supports("avx512f")) loops.push_back({"avx512f", round_avx512});
  if (__builtin_cpu_supports("avx2")) loops.push_back({"avx2", round_avx2});
#endif
  loops.push_back({"baseline", round_baseline});
  return loops;
}

RoundingStream RoundingStream::of(uint64_t seed, uint32_t compute_set, uint64_t execution, uint32_t tensor,
                                  uint32_t replica) {
  uint64_t key = splitmix64(seed, compute_set);
  key = splitmix64(key, execution);
  key = splitmix64(key, (uint64_t{tensor} << 32) | replica);
  return {key};
}

void round_to_half(float* data, uint64_t begin, uint64_t end, const RoundingStream* stream) {
  if (stream == nullptr) return round_to_nearest_half(data + begin, end - begin);
  for (uint64_t i = begin; i < end; ++i) {
    const auto random = static_cast<uint32_t>(splitmix64(stream->key, i) >> 32);
    data[i] = round_to_half_stochastic(data[i], random);
  }
}

} // namespace ipu::engine
