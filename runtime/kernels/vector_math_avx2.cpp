// Compiled with -mavx2 -mfma. Includes no C++ library header with inline functions, so that no
// AVX2 copy of one can stand in for the baseline copy elsewhere in the program.
#include "runtime/kernels/vector_math_avx2.h"

#include <immintrin.h>
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

// e^x of four floats in double, good to about 2^-37 relative for x in [-87, 88]: x = n·ln 2 + r
// with |r| ≤ ln 2 / 2 (ln 2 in two parts, so r is exact to double rounding), e^r by its Taylor
// series to r^9 (truncation below 2^-37) in Estrin's scheme (a short dependency chain), times
// 2^n from the exponent bits.
__m256d exp_in_double(__m256d x) {
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
  const auto c = [](double reciprocal) { return _mm256_set1_pd(1.0 / reciprocal); }; // 1 / k!
  const __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2), r8 = _mm256_mul_pd(r4, r4);
  const __m256d q0 = _mm256_fmadd_pd(c(1), r, c(1)), q1 = _mm256_fmadd_pd(c(6), r, c(2)),
                q2 = _mm256_fmadd_pd(c(120), r, c(24)), q3 = _mm256_fmadd_pd(c(5040), r, c(720)),
                q4 = _mm256_fmadd_pd(c(362880), r, c(40320));
  const __m256d s0 = _mm256_fmadd_pd(q1, r2, q0), s1 = _mm256_fmadd_pd(q3, r2, q2);
  const __m256d p = _mm256_fmadd_pd(q4, r8, _mm256_fmadd_pd(s1, r4, s0));
  const __m256i exponent = _mm256_slli_epi64(
      _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n)), _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(exponent));
}

// e^x of eight floats as the C library's expf rounds them, and a bit mask of the lanes it cannot
// vouch for. Both the double value here and expf's own before its rounding lie within 2^-32 of
// e^x, relatively, so both round to the same float unless e^x lies that near a rounding
// boundary. A lane is unsure when its double value lies within m of a boundary, m being 2^-31
// times the float's power of two (so at least 2^-32 relative). The boundaries lie half a float
// ulp from the float, and a quarter of one below a power of two (where the ulp halves). Lanes
// with x outside [-87, 88] (near overflow and underflow) or NaN are unsure too.
__m256 libm_exp8(__m256 x, int& unsure) {
  const __m256 in_range = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ),
                                        _mm256_cmp_ps(x, _mm256_set1_ps(88.0f), _CMP_LE_OQ));
  const __m256d halves[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(x)),
                             _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))};
  const __m256i exponent_bits = _mm256_set1_epi64x(0x7ff0000000000000);
  __m128 rounded[2];
  int near_boundary = 0;
  for (int h = 0; h < 2; ++h) {
    const __m256d e = exp_in_double(halves[h]);
    rounded[h] = _mm256_cvtpd_ps(e);
    const __m256d back = _mm256_cvtps_pd(rounded[h]);
    const __m256d off = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(e, back));
    const __m256d power = _mm256_and_pd(back, _mm256_castsi256_pd(exponent_bits)); // 2^23 float ulps
    const __m256d above = _mm256_mul_pd(power, _mm256_set1_pd(0x1p-24 - 0x1p-31));
    const __m256d below_power = _mm256_mul_pd(power, _mm256_set1_pd(0x1p-25 - 0x1p-31));
    const __m256d is_power = _mm256_cmp_pd(back, power, _CMP_EQ_OQ);
    const __m256d limit =
        _mm256_blendv_pd(above, below_power, _mm256_and_pd(is_power, _mm256_cmp_pd(e, back, _CMP_LT_OQ)));
    near_boundary |= _mm256_movemask_pd(_mm256_cmp_pd(off, limit, _CMP_GT_OQ)) << (4 * h);
  }
  unsure = near_boundary | (~_mm256_movemask_ps(in_range) & 0xff);
  return _mm256_set_m128(rounded[1], rounded[0]);
}

} // namespace

void libm_exp(const float* x, float* y, int64_t n, ScalarExp scalar_exp) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 in = _mm256_loadu_ps(x + i);
    int unsure = 0;
    const __m256 out = libm_exp8(in, unsure);
    alignas(32) float inputs[kLanes];
    _mm256_store_ps(inputs, in);
    _mm256_storeu_ps(y + i, out);
    for (; unsure != 0; unsure &= unsure - 1) {
      const int lane = __builtin_ctz(static_cast<unsigned>(unsure));
      y[i + lane] = scalar_exp(inputs[lane]);
    }
  }
  for (; i < n; ++i)
    y[i] = scalar_exp(x[i]);
}

void libm_sigmoid(const float* x, float* y, int64_t n, ScalarExp scalar_exp) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 negated = _mm256_xor_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(-0.0f));
    int unsure = 0;
    const __m256 e = libm_exp8(negated, unsure);
    alignas(32) float inputs[kLanes];
    _mm256_store_ps(inputs, negated);
    _mm256_storeu_ps(y + i, _mm256_div_ps(one, _mm256_add_ps(one, e)));
    for (; unsure != 0; unsure &= unsure - 1) {
      const int lane = __builtin_ctz(static_cast<unsigned>(unsure));
      y[i + lane] = 1.0f / (1.0f + scalar_exp(inputs[lane]));
    }
  }
  for (; i < n; ++i)
    y[i] = 1.0f / (1.0f + scalar_exp(-x[i]));
}

// Sixteen columns at a time in four registers of doubles, every row added before the next
// columns: the sums stay in registers instead of going back to memory once per row.
int64_t sum_rows_in_double(const float* x, int64_t stride, int64_t count, int64_t n, double* sums) {
  constexpr int64_t kColumns = 16;
  int64_t c = 0;
  for (; c + kColumns <= n; c += kColumns) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t j = 0; j < count; ++j) {
      const float* row = x + j * stride + c;
      s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(row)));
      s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm_loadu_ps(row + 4)));
      s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm_loadu_ps(row + 8)));
      s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm_loadu_ps(row + 12)));
    }
    _mm256_storeu_pd(sums + c, s0);
    _mm256_storeu_pd(sums + c + 4, s1);
    _mm256_storeu_pd(sums + c + 8, s2);
    _mm256_storeu_pd(sums + c + 12, s3);
  }
  for (; c + 4 <= n; c += 4) {
    __m256d s = _mm256_setzero_pd();
    for (int64_t j = 0; j < count; ++j)
      s = _mm256_add_pd(s, _mm256_cvtps_pd(_mm_loadu_ps(x + j * stride + c)));
    _mm256_storeu_pd(sums + c, s);
  }
  return c;
}

void exp(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m256 v) { return Sleef_expf8_u10avx2(v); });
}

void erf(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m256 v) { return Sleef_erff8_u10avx2(v); });
}

void relu(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m256 v) { return _mm256_max_ps(v, _mm256_setzero_ps()); });
}

int64_t relu_grad(const float* y, const float* dy, float* dx, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 positive = _mm256_cmp_ps(_mm256_loadu_ps(y + i), _mm256_setzero_ps(), _CMP_GT_OQ);
    _mm256_storeu_ps(dx + i, _mm256_and_ps(positive, _mm256_loadu_ps(dy + i)));
  }
  return i;
}

int64_t max_pool_2x2_cols_stride2_row(const float* top, const float* bottom, float* y, int64_t cols) {
  // Taps 2j, 2j + 2, ... (odd false) or 2j + 1, 2j + 3, ... (odd true) of outputs [j, j + 8):
  // shufps picks them per 128-bit half, in the order 0 1 4 5 2 3 6 7 of 64-bit pairs.
  const auto taps8 = [&](const float* row, int64_t j, bool odd) {
    const __m256 a = _mm256_loadu_ps(row + 2 * j), b = _mm256_loadu_ps(row + 2 * j + 8);
    const __m256 mixed = odd ? _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))
                             : _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), _MM_SHUFFLE(3, 1, 2, 0)));
  };
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 best = taps8(top, j, false);
    best = _mm256_max_ps(taps8(top, j, true), best);
    best = _mm256_max_ps(taps8(bottom, j, false), best);
    best = _mm256_max_ps(taps8(bottom, j, true), best);
    _mm256_storeu_ps(y + j, best);
  }
  const auto taps4 = [&](const float* row, bool odd) {
    const __m128 a = _mm_loadu_ps(row + 2 * j), b = _mm_loadu_ps(row + 2 * j + 4);
    return odd ? _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))
               : _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  };
  if (j + 4 <= cols) {
    __m128 best = taps4(top, false);
    best = _mm_max_ps(taps4(top, true), best);
    best = _mm_max_ps(taps4(bottom, false), best);
    best = _mm_max_ps(taps4(bottom, true), best);
    _mm_storeu_ps(y + j, best);
    j += 4;
  }
  return j;
}

} // namespace ipu::kernels::avx2
