// Layer normalization over the last axis, as the nine ops of PyTorch's exported LayerNorm compute
// it (compiler/passes/fuse_layer_norm.h): each rounding where those ops round, so a fused model
// gives bitwise what the unfused one did. Built with -ffp-contract=off: a contracted
// multiply-add would skip a rounding the separate Mul and Add kernels make.
#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// Rows a vertex normalizes together: a row's sums are chains of dependent double additions (four
// cycles each), so eight rows' chains interleave where one row's would stall. Each row is still
// summed alone and in order, so results are the same bits.
constexpr int64_t kRows = 8;

// LayerNorm: per row of X, with m = mean(x), d = x − m, v = mean(d·d), s = √(v + ε):
// Y = d / s · γ + β, each step rounded to float. A mean is taken as the Reduce kernel takes it:
// summed in order in double, divided in double, rounded once.
//   operands: X [rows, n], γ [n], β [n], Y [rows, n] (Y may be X)
//   params:   format::params::LayerNorm;  fparams: format::fparams::LayerNorm
void run_layer_norm(const PreparedVertex& v) {
  using P = format::params::LayerNorm;
  const int64_t n = v.params[P::kN];
  const float* gamma = v.f32(1);
  const float* beta = v.f32(2);
  const float epsilon = v.fparams[format::fparams::LayerNorm::kEpsilon];
  const double count = static_cast<double>(n);
  for (int64_t first = v.params[P::kRowBegin]; first < v.params[P::kRowEnd]; first += kRows) {
    // A short last group repeats its last row in the spare lanes, which write nothing.
    const int64_t rows = std::min(kRows, v.params[P::kRowEnd] - first);
    std::array<const float*, kRows> x{};
    std::array<float*, kRows> y{};
    for (int64_t k = 0; k < kRows; ++k) {
      x[k] = v.f32(0) + (first + std::min(k, rows - 1)) * n;
      y[k] = v.f32(3) + (first + std::min(k, rows - 1)) * n;
    }
    std::array<double, kRows> sums{};
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < kRows; ++k)
        sums[k] += x[k][j];
    std::array<float, kRows> mean{};
    for (int64_t k = 0; k < kRows; ++k)
      mean[k] = static_cast<float>(sums[k] / count);
    // y holds d, then the result (a row's x is read only before its y is written, so Y may be X).
    std::array<double, kRows> squares{};
    for (int64_t k = 0; k < rows; ++k)
      for (int64_t j = 0; j < n; ++j)
        y[k][j] = x[k][j] - mean[k];
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < kRows; ++k) {
        const float square = y[k][j] * y[k][j];
        squares[k] += square;
      }
    for (int64_t k = 0; k < rows; ++k) {
      const float variance = static_cast<float>(squares[k] / count);
      const float s = std::sqrt(variance + epsilon);
      for (int64_t j = 0; j < n; ++j) {
        const float scaled = y[k][j] / s * gamma[j];
        y[k][j] = scaled + beta[j];
      }
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
