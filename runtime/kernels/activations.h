// Relu and Tanh of one float, written once for every codelet that applies them: the Activation
// and Unary kernels and the fused epilogues of MatMul and Conv. A fused model must compute
// bitwise what the unfused one did, so each is one expression, in float, everywhere. Sigmoid,
// 1 / (1 + e^-x) in float, runs over arrays only: libm_sigmoid (vector_math.h).
#pragma once

#include <cmath>

namespace ipu::kernels::activation {

// 0 for a NaN, as for -0 and every negative.
inline float relu(float x) {
  return x > 0.0f ? x : 0.0f;
}

inline float tanh(float x) {
  return std::tanh(x);
}

} // namespace ipu::kernels::activation
