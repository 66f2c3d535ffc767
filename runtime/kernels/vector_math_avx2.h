// The AVX2 + FMA half of vector_math.cpp, in its own file because only it is compiled with
// -mavx2 -mfma: nothing here may run before best_vector_isa() has found those on the CPU.
#pragma once

#include <cstdint>

namespace ipu::kernels::avx2 {

void exp(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);
void libm_exp(const float* x, float* y, int64_t n);
void libm_sigmoid(const float* x, float* y, int64_t n);

} // namespace ipu::kernels::avx2
