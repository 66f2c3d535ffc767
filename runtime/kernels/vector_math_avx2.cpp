// Compiled with -mavx2 -mfma. Includes no C++ library header with inline functions, so that no
// AVX2 copy of one can stand in for the baseline copy elsewhere in the program.
#include "runtime/kernels/vector_math_avx2.h"

#include <sleef.h>
#include <string.h>

namespace ipu::kernels::avx2 {
namespace {

constexpr int64_t kLanes = 8;

template <typename F> void apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i == n) return;
  // The tail runs through the same vector function in a zero-padded register rather than a
  // scalar one, which may round differently: that keeps results independent of range ends.
  const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
  alignas(32) float lanes[kLanes] = {};
  memcpy(lanes, x + i, rest);
  _mm256_store_ps(lanes, f(_mm256_load_ps(lanes)));
  memcpy(y + i, lanes, rest);
}

} // namespace

void exp(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m256 v) { return Sleef_expf8_u10avx2(v); });
}

void erf(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m256 v) { return Sleef_erff8_u10avx2(v); });
}

} // namespace ipu::kernels::avx2
