// Layer normalization over the last axis, as the nine ops of PyTorch's exported LayerNorm compute
// it (compiler/passes/fuse_layer_norm.h): each rounding where those ops round, so a fused model
// gives bitwise what the unfused one did. Built with -ffp-contract=off: a contracted
// multiply-add would skip a rounding the separate Mul and Add kernels make.
#include <cmath>

#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// The mean of n floats as the Reduce kernel takes it: summed in order in double, divided in
// double, rounded once.
float mean(const float* x, int64_t n) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j)
    sum += x[j];
  return static_cast<float>(sum / static_cast<double>(n));
}

// LayerNorm: per row of X, with m = mean(x), d = x − m, v = mean(d·d), s = √(v + ε):
// Y = d / s · γ + β, each step rounded to float.
//   operands: X [rows, n], γ [n], β [n], Y [rows, n] (Y may be X)
//   params:   format::params::LayerNorm;  fparams: format::fparams::LayerNorm
void run_layer_norm(const PreparedVertex& v) {
  using P = format::params::LayerNorm;
  const int64_t n = v.params[P::kN];
  const float* gamma = v.f32(1);
  const float* beta = v.f32(2);
  const float epsilon = v.fparams[format::fparams::LayerNorm::kEpsilon];
  for (int64_t r = v.params[P::kRowBegin]; r < v.params[P::kRowEnd]; ++r) {
    const float* x = v.f32(0) + r * n;
    float* y = v.f32(3) + r * n;
    const float m = mean(x, n);
    // y holds d, then the result (x is read only before y is written, so Y may be X).
    double squares = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const float d = x[j] - m;
      y[j] = d;
      const float square = d * d;
      squares += square;
    }
    const float variance = static_cast<float>(squares / static_cast<double>(n));
    const float s = std::sqrt(variance + epsilon);
    for (int64_t j = 0; j < n; ++j) {
      const float scaled = y[j] / s * gamma[j];
      y[j] = scaled + beta[j];
    }
  }
}

Status validate_layer_norm(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::LayerNorm;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::LayerNorm::kCount));
  if (v.params(P::kN) < 1)
    return invalid_argument("rows of " + std::to_string(v.params(P::kN)) + " elements");
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows), v.params(P::kN)}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kN)}, ops[1].elements, "gamma"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kN)}, ops[2].elements, "beta"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows), v.params(P::kN)}, ops[3].elements, "Y"));
  if (v.operands(3) == v.operands(1) || v.operands(3) == v.operands(2))
    return invalid_argument("output aliases a parameter");
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kRows), "row");
}

} // namespace

const KernelDef& layer_norm_kernel() {
  static const KernelDef def{Codelet::kLayerNorm,
                             run_layer_norm,
                             validate_layer_norm,
                             {format::params::LayerNorm::kRowBegin, format::params::LayerNorm::kRowEnd}};
  return def;
}

} // namespace ipu::kernels
