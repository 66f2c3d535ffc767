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

// maxps(a, b) = a > b ? a : b. Through the zero-masking form with every lane taken: GCC 12's
// _mm512_max_ps starts from _mm512_undefined_ps, which -Wmaybe-uninitialized reports.
__m512 max(__m512 a, __m512 b) {
  return _mm512_maskz_max_ps(0xffff, a, b);
}

} // namespace

void exp(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return Sleef_expf16_u10avx512f(v); });
}

void erf(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return Sleef_erff16_u10avx512f(v); });
}

void relu(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return max(v, _mm512_setzero_ps()); });
}

void relu_grad(const float* y, const float* dy, float* dx, int64_t n) {
  const auto step = [&](int64_t i, __mmask16 take) {
    const __mmask16 positive =
        _mm512_mask_cmp_ps_mask(take, _mm512_maskz_loadu_ps(take, y + i), _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_mask_storeu_ps(dx + i, take, _mm512_maskz_loadu_ps(positive, dy + i));
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    step(i, 0xffff);
  if (i < n) step(i, static_cast<__mmask16>((1u << (n - i)) - 1));
}

void max_pool_2x2_cols_stride2_row(const float* top, const float* bottom, float* y, int64_t cols) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // The outputs [j, j + 16) of `take`, reading only the taps they need (a row's last output may
  // end the input's allocation).
  const auto block = [&](int64_t j, __mmask16 take) {
    const int64_t pairs = cols - j; // outputs left, so 2·pairs taps in each row
    const __mmask16 low = pairs >= 8 ? 0xffff : static_cast<__mmask16>((1u << (2 * pairs)) - 1);
    const __mmask16 high = pairs >= 16  ? 0xffff
                           : pairs <= 8 ? 0
                                        : static_cast<__mmask16>((1u << (2 * pairs - 16)) - 1);
    const auto taps = [&](const float* row, const __m512i& pick) {
      return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(low, row + 2 * j), pick,
                                    _mm512_maskz_loadu_ps(high, row + 2 * j + 16));
    };
    __m512 best = taps(top, even);
    best = max(taps(top, odd), best);
    best = max(taps(bottom, even), best);
    best = max(taps(bottom, odd), best);
    _mm512_mask_storeu_ps(y + j, take, best);
  };
  int64_t j = 0;
  for (; j + kLanes <= cols; j += kLanes)
    block(j, 0xffff);
  if (j < cols) block(j, static_cast<__mmask16>((1u << (cols - j)) - 1));
}

} // namespace ipu::kernels::avx512
