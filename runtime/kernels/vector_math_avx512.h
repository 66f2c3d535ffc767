// The AVX-512 half of vector_math.cpp, in its own file because only it is compiled with
// -mavx512f: nothing here may run before best_vector_isa() has found AVX-512F on the CPU.
#pragma once

#include <cstdint>

namespace ipu::kernels::avx512 {

void exp(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);

// libm_exp and libm_sigmoid (vector_math.h) in whole groups of sixteen, given the C library's expf
// for the lanes they cannot vouch for (vector_math_avx2.h says why it is passed in); they return
// how many they took, the rest being the caller's.
using ScalarExp = float (*)(float);
int64_t libm_exp(const float* x, float* y, int64_t n, ScalarExp scalar_exp);
int64_t libm_sigmoid(const float* x, float* y, int64_t n, ScalarExp scalar_exp);
void relu(const float* x, float* y, int64_t n);
void relu_grad(const float* y, const float* dy, float* dx, int64_t n);
// max_pool_2x2_cols_stride2 (vector_math.h) of one row.
void max_pool_2x2_cols_stride2_row(const float* top, const float* bottom, float* y, int64_t cols);
void unblock16(const float* blocked, int64_t positions, float* planes, int64_t plane, bool relu);
void block16(const float* planes, int64_t plane, int64_t positions, float* blocked);

} // namespace ipu::kernels::avx512
