// The AVX-512 half of vector_math.cpp, in its own file because only it is compiled with
// -mavx512f: nothing here may run before best_vector_isa() has found AVX-512F on the CPU.
#pragma once

#include <cstdint>

namespace ipu::kernels::avx512 {

void exp(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);

} // namespace ipu::kernels::avx512
