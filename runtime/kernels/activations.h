// Tanh of one float, written once for every codelet that applies it: the Activation and Unary
// kernels. A model must compute bitwise what another route to the same op did, so it is one
// expression, in float, everywhere. Relu (also the fused epilogue of MatMul and Conv) and Sigmoid,
// 1 / (1 + e^-x) in float, run over arrays only: vector_relu and libm_sigmoid (vector_math.h).
#pragma once

#include <cmath>

namespace ipu::kernels::activation {

inline float tanh(float x) {
  return std::tanh(x);
}

} // namespace ipu::kernels::activation
