// The AVX2 + FMA half of vector_math.cpp, in its own file because only it is compiled with
// -mavx2 -mfma: nothing here may run before best_vector_isa() has found those on the CPU.
#pragma once

#include <cstdint>

namespace ipu::kernels::avx2 {

void exp(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);
// libm_exp and libm_sigmoid (vector_math.h), given the C library's expf for the lanes they cannot
// vouch for: it comes from vector_math.cpp, since this file may not include <cmath>.
using ScalarExp = float (*)(float);
void libm_exp(const float* x, float* y, int64_t n, ScalarExp scalar_exp);
void libm_sigmoid(const float* x, float* y, int64_t n, ScalarExp scalar_exp);
// sum_rows_in_double (vector_math.h) for the columns in whole groups of four; returns how many
// it summed, the rest being the caller's.
int64_t sum_rows_in_double(const float* x, int64_t stride, int64_t count, int64_t n, double* sums);

void relu(const float* x, float* y, int64_t n);
// vector_relu_grad (vector_math.h) in whole groups of eight; returns how many it took, the rest
// being the caller's.
int64_t relu_grad(const float* y, const float* dy, float* dx, int64_t n);
// max_pool_2x2_cols_stride2 (vector_math.h) of one row's outputs in whole groups of four;
// returns how many it took, the rest being the caller's.
int64_t max_pool_2x2_cols_stride2_row(const float* top, const float* bottom, float* y, int64_t cols);

} // namespace ipu::kernels::avx2
