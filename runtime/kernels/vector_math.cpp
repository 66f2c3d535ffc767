#include "runtime/kernels/vector_math.h"

#include <sleef.h>

#include <cmath>
#include <cstring>

#include "runtime/kernels/vector_math_avx2.h"
#include "runtime/kernels/vector_math_avx512.h"

#if !defined(__x86_64__)
#error "vector_math.cpp calls SLEEF's x86-64 entry points"
#endif

namespace ipu::kernels {
namespace {

constexpr int64_t kLanes = 4;

template <typename F> void apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    _mm_storeu_ps(y + i, f(_mm_loadu_ps(x + i)));
  if (i == n) return;
  // As in vector_math_avx2.cpp: the tail goes through the vector function too.
  const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
  alignas(16) float lanes[kLanes] = {};
  std::memcpy(lanes, x + i, rest);
  _mm_store_ps(lanes, f(_mm_load_ps(lanes)));
  std::memcpy(y + i, lanes, rest);
}

float scalar_exp(float x) {
  return std::exp(x);
}

void max_pool_2x2_cols_stride2_row(const float* top, const float* bottom, float* y, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    float best = top[2 * j];
    best = top[2 * j + 1] > best ? top[2 * j + 1] : best;
    best = bottom[2 * j] > best ? bottom[2 * j] : best;
    best = bottom[2 * j + 1] > best ? bottom[2 * j + 1] : best;
    y[j] = best;
  }
}

} // namespace

VectorIsa best_vector_isa() {
  static const VectorIsa isa = [] {
    __builtin_cpu_init(); // may run before libgcc's own initialisation (static constructors)
    // libgcc reports AVX2 and AVX-512 only if the OS also saves their registers.
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return VectorIsa::kSse2;
    return __builtin_cpu_supports("avx512f") ? VectorIsa::kAvx512 : VectorIsa::kAvx2Fma;
  }();
  return isa;
}

void vector_exp(const float* x, float* y, int64_t n, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) return avx512::exp(x, y, n);
  if (isa == VectorIsa::kAvx2Fma) return avx2::exp(x, y, n);
  apply(x, y, n, [](__m128 v) { return Sleef_expf4_u10(v); });
}

void vector_erf(const float* x, float* y, int64_t n, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) return avx512::erf(x, y, n);
  if (isa == VectorIsa::kAvx2Fma) return avx2::erf(x, y, n);
  apply(x, y, n, [](__m128 v) { return Sleef_erff4_u10(v); });
}

void libm_exp(const float* x, float* y, int64_t n, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) {
    const int64_t done = avx512::libm_exp(x, y, n, scalar_exp); // a short tail still gets eight lanes
    return avx2::libm_exp(x + done, y + done, n - done, scalar_exp);
  }
  if (isa != VectorIsa::kSse2) return avx2::libm_exp(x, y, n, scalar_exp);
  for (int64_t i = 0; i < n; ++i)
    y[i] = std::exp(x[i]);
}

void libm_sigmoid(const float* x, float* y, int64_t n, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) {
    const int64_t done = avx512::libm_sigmoid(x, y, n, scalar_exp);
    return avx2::libm_sigmoid(x + done, y + done, n - done, scalar_exp);
  }
  if (isa != VectorIsa::kSse2) return avx2::libm_sigmoid(x, y, n, scalar_exp);
  for (int64_t i = 0; i < n; ++i)
    y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void vector_relu(const float* x, float* y, int64_t n, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) return avx512::relu(x, y, n);
  if (isa == VectorIsa::kAvx2Fma) return avx2::relu(x, y, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void vector_relu_grad(const float* y, const float* dy, float* dx, int64_t n, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) return avx512::relu_grad(y, dy, dx, n);
  const int64_t done = isa == VectorIsa::kAvx2Fma ? avx2::relu_grad(y, dy, dx, n) : 0;
  for (int64_t i = done; i < n; ++i)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void max_pool_2x2_cols_stride2(const PoolRows& pool, VectorIsa isa) {
  for (int64_t r = 0; r < pool.rows; ++r) {
    const float* top = pool.x + r * pool.x_row;
    const float* bottom = top + pool.below;
    float* y = pool.y + r * pool.y_row;
    if (isa == VectorIsa::kAvx512) {
      avx512::max_pool_2x2_cols_stride2_row(top, bottom, y, pool.cols);
      continue;
    }
    const int64_t done =
        isa == VectorIsa::kAvx2Fma ? avx2::max_pool_2x2_cols_stride2_row(top, bottom, y, pool.cols) : 0;
    max_pool_2x2_cols_stride2_row(top + 2 * done, bottom + 2 * done, y + done, pool.cols - done);
  }
}

void unblock16(const float* blocked, int64_t positions, float* planes, int64_t plane, bool relu,
               VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) return avx512::unblock16(blocked, positions, planes, plane, relu);
  for (int64_t c = 0; c < 16; ++c) {
    for (int64_t p = 0; p < positions; ++p) {
      const float x = blocked[p * 16 + c];
      planes[c * plane + p] = !relu || x > 0.0f ? x : 0.0f;
    }
  }
}

void block16(const float* planes, int64_t plane, int64_t positions, float* blocked, VectorIsa isa) {
  if (isa == VectorIsa::kAvx512) return avx512::block16(planes, plane, positions, blocked);
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t c = 0; c < 16; ++c)
      blocked[p * 16 + c] = planes[c * plane + p];
}

void sum_rows_in_double(const float* x, int64_t stride, int64_t count, int64_t n, double* sums,
                        VectorIsa isa) {
  const int64_t done = isa != VectorIsa::kSse2 ? avx2::sum_rows_in_double(x, stride, count, n, sums) : 0;
  for (int64_t c = done; c < n; ++c) {
    double sum = 0.0;
    for (int64_t j = 0; j < count; ++j)
      sum += x[j * stride + c];
    sums[c] = sum;
  }
}

} // namespace ipu::kernels
