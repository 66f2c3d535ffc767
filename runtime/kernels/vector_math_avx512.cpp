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

// vector_math_avx2.cpp's exp_in_double on eight doubles: the same operations in the same order,
// so each lane's value is the one AVX2 gives it.
__m512d exp_in_double(__m512d x) {
  const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(6.93147180369123816490e-01), x);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(1.90821492927058770002e-10), r);
  const auto c = [](double reciprocal) { return _mm512_set1_pd(1.0 / reciprocal); }; // 1 / k!
  const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2), r8 = _mm512_mul_pd(r4, r4);
  const __m512d q0 = _mm512_fmadd_pd(c(1), r, c(1)), q1 = _mm512_fmadd_pd(c(6), r, c(2)),
                q2 = _mm512_fmadd_pd(c(120), r, c(24)), q3 = _mm512_fmadd_pd(c(5040), r, c(720)),
                q4 = _mm512_fmadd_pd(c(362880), r, c(40320));
  const __m512d s0 = _mm512_fmadd_pd(q1, r2, q0), s1 = _mm512_fmadd_pd(q3, r2, q2);
  const __m512d p = _mm512_fmadd_pd(q4, r8, _mm512_fmadd_pd(s1, r4, s0));
  const __m512i exponent = _mm512_slli_epi64(
      _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(n)), _mm512_set1_epi64(1023)), 52);
  return _mm512_mul_pd(p, _mm512_castsi512_pd(exponent));
}

// vector_math_avx2.cpp's libm_exp8 on sixteen floats, with the same test of which lanes it cannot
// vouch for (see there): bit i of the returned mask is lane i.
__m512 libm_exp16(__m512 x, __mmask16& unsure) {
  const __mmask16 in_range = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ) &
                             _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_LE_OQ);
  const __m512d halves[2] = {
      _mm512_cvtps_pd(_mm512_castps512_ps256(x)),
      _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))};
  const __m512i exponent_bits = _mm512_set1_epi64(0x7ff0000000000000);
  __m256 rounded[2];
  unsigned near_boundary = 0;
  for (int h = 0; h < 2; ++h) {
    const __m512d e = exp_in_double(halves[h]);
    rounded[h] = _mm512_cvtpd_ps(e);
    const __m512d back = _mm512_cvtps_pd(rounded[h]);
    const __m512d off = _mm512_abs_pd(_mm512_sub_pd(e, back));
    const __m512d power = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(back), exponent_bits));
    const __m512d above = _mm512_mul_pd(power, _mm512_set1_pd(0x1p-24 - 0x1p-31));
    const __m512d below_power = _mm512_mul_pd(power, _mm512_set1_pd(0x1p-25 - 0x1p-31));
    const __mmask8 below_a_power =
        _mm512_cmp_pd_mask(back, power, _CMP_EQ_OQ) & _mm512_cmp_pd_mask(e, back, _CMP_LT_OQ);
    const __m512d limit = _mm512_mask_blend_pd(below_a_power, above, below_power);
    near_boundary |= static_cast<unsigned>(_mm512_cmp_pd_mask(off, limit, _CMP_GT_OQ)) << (8 * h);
  }
  unsure = static_cast<__mmask16>(near_boundary | (~static_cast<unsigned>(in_range) & 0xffffu));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(rounded[0])),
                                             _mm256_castps_pd(rounded[1]), 1));
}

} // namespace

int64_t libm_exp(const float* x, float* y, int64_t n, ScalarExp scalar_exp) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 in = _mm512_loadu_ps(x + i);
    __mmask16 unsure = 0;
    const __m512 out = libm_exp16(in, unsure);
    alignas(64) float inputs[kLanes]; // y may be x
    _mm512_store_ps(inputs, in);
    _mm512_storeu_ps(y + i, out);
    for (unsigned lanes = unsure; lanes != 0; lanes &= lanes - 1) {
      const int lane = __builtin_ctz(lanes);
      y[i + lane] = scalar_exp(inputs[lane]);
    }
  }
  return i;
}

int64_t libm_sigmoid(const float* x, float* y, int64_t n, ScalarExp scalar_exp) {
  const __m512 one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 negated = _mm512_castsi512_ps(_mm512_xor_si512(
        _mm512_castps_si512(_mm512_loadu_ps(x + i)), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
    __mmask16 unsure = 0;
    const __m512 e = libm_exp16(negated, unsure);
    alignas(64) float inputs[kLanes]; // y may be x
    _mm512_store_ps(inputs, negated);
    _mm512_storeu_ps(y + i, _mm512_div_ps(one, _mm512_add_ps(one, e)));
    for (unsigned lanes = unsure; lanes != 0; lanes &= lanes - 1) {
      const int lane = __builtin_ctz(lanes);
      y[i + lane] = 1.0f / (1.0f + scalar_exp(inputs[lane]));
    }
  }
  return i;
}

void exp(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return Sleef_expf16_u10avx512f(v); });
}

void erf(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return Sleef_erff16_u10avx512f(v); });
}

void relu(const float* x, float* y, int64_t n) {
  apply(x, y, n, [](__m512 v) { return _mm512_max_ps(v, _mm512_setzero_ps()); });
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
    best = _mm512_max_ps(taps(top, odd), best);
    best = _mm512_max_ps(taps(bottom, even), best);
    best = _mm512_max_ps(taps(bottom, odd), best);
    _mm512_mask_storeu_ps(y + j, take, best);
  };
  int64_t j = 0;
  for (; j + kLanes <= cols; j += kLanes)
    block(j, 0xffff);
  if (j < cols) block(j, static_cast<__mmask16>((1u << (cols - j)) - 1));
}

namespace {

// out[c] = lane c of every r[i], lane i of out[c] being r[i]'s: a 16×16 transpose in four rounds
// of shuffles (32-bit pairs, 64-bit pairs, then 128-bit quarters twice).
[[gnu::always_inline]] inline void transpose16(const __m512 (&r)[16], __m512 (&out)[16]) {
  __m512d pairs[16];
  for (int i = 0; i < 16; i += 2) {
    pairs[i] = _mm512_castps_pd(_mm512_unpacklo_ps(r[i], r[i + 1]));
    pairs[i + 1] = _mm512_castps_pd(_mm512_unpackhi_ps(r[i], r[i + 1]));
  }
  // quads[4q + k], in its quarter L: column 4L + k of rows 4q .. 4q + 3.
  __m512 quads[16];
  for (int q = 0; q < 16; q += 4) {
    quads[q] = _mm512_castpd_ps(_mm512_unpacklo_pd(pairs[q], pairs[q + 2]));
    quads[q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pairs[q], pairs[q + 2]));
    quads[q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pairs[q + 1], pairs[q + 3]));
    quads[q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pairs[q + 1], pairs[q + 3]));
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 even01 = _mm512_shuffle_f32x4(quads[k], quads[4 + k], 0x88); // quarters 0, 2
    const __m512 odd01 = _mm512_shuffle_f32x4(quads[k], quads[4 + k], 0xdd);  // quarters 1, 3
    const __m512 even23 = _mm512_shuffle_f32x4(quads[8 + k], quads[12 + k], 0x88);
    const __m512 odd23 = _mm512_shuffle_f32x4(quads[8 + k], quads[12 + k], 0xdd);
    out[k] = _mm512_shuffle_f32x4(even01, even23, 0x88);
    out[8 + k] = _mm512_shuffle_f32x4(even01, even23, 0xdd);
    out[4 + k] = _mm512_shuffle_f32x4(odd01, odd23, 0x88);
    out[12 + k] = _mm512_shuffle_f32x4(odd01, odd23, 0xdd);
  }
}

__mmask16 first_lanes(int64_t n) {
  return n >= kLanes ? 0xffff : static_cast<__mmask16>((1u << n) - 1);
}

} // namespace

void unblock16(const float* blocked, int64_t positions, float* planes, int64_t plane, bool relu) {
  for (int64_t p = 0; p < positions; p += kLanes) {
    const int64_t n = positions - p < kLanes ? positions - p : kLanes;
    __m512 rows[16], columns[16];
    for (int64_t i = 0; i < kLanes; ++i)
      rows[i] = i < n ? _mm512_loadu_ps(blocked + (p + i) * kLanes) : _mm512_setzero_ps();
    transpose16(rows, columns);
    if (relu) {
      for (__m512& column : columns)
        column = _mm512_max_ps(column, _mm512_setzero_ps()); // relu's own operation
    }
    for (int64_t c = 0; c < kLanes; ++c)
      _mm512_mask_storeu_ps(planes + c * plane + p, first_lanes(n), columns[c]);
  }
}

void block16(const float* planes, int64_t plane, int64_t positions, float* blocked) {
  for (int64_t p = 0; p < positions; p += kLanes) {
    const int64_t n = positions - p < kLanes ? positions - p : kLanes;
    __m512 rows[16], columns[16];
    for (int64_t c = 0; c < kLanes; ++c)
      rows[c] = _mm512_maskz_loadu_ps(first_lanes(n), planes + c * plane + p);
    transpose16(rows, columns);
    for (int64_t i = 0; i < n; ++i)
      _mm512_storeu_ps(blocked + (p + i) * kLanes, columns[i]);
  }
}

} // namespace ipu::kernels::avx512
