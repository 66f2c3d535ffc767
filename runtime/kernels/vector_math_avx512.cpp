// Compiled with -mavx512f -mavx2 -mfma. Includes no C++ library header with inline functions, so
// that no AVX-512 copy of one can stand in for the baseline copy elsewhere in the program.
#include "runtime/kernels/vector_math_avx512.h"

#include <immintrin.h>
#include <sleef.h>

namespace ipu::kernels::avx512 {
namespace {

constexpr int64_t kLanes = 16;

// The tail goes through the same vector function in a masked register, zeros in the lanes past
// the end, as vector_math_avx2.cpp's does: results stay independent of range ends.
template <typename F> void apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i == n) return;
  const __mmask16 rest = static_cast<__mmask16>((1u << (n - i)) - 1);
  _mm512_mask_storeu_ps(y + i, rest, f(_mm512_maskz_loadu_ps(rest, x + i)));
}

} // namespace

void exp(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return Sleef_expf16_u10avx512f(v); });
}

void erf(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return Sleef_erff16_u10avx512f(v); });
}

} // namespace ipu::kernels::avx512
