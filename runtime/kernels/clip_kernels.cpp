// Gradient clipping by global norm (docs/training.md): the squares of a gradient's slice, the
// clip factor from the stages' squared norms, and a gradient scaled by it in place.
#include <algorithm>
#include <cmath>

#include "runtime/base/non_finite.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// The ε torch.nn.utils.clip_grad_norm_ adds to the norm before dividing by it.
constexpr double kNormEpsilon = 1e-6;

// SumOfSquares: partials[share] = Σ_{begin ≤ i < end} (scale·X[i])², summed in double and rounded
// once: the slice of one weight's gradient a tile holds (scale is the mean over micro-batches).
// Scale 0 is dynamic loss scaling's finite check: every term is +0 when X[i] is finite, so the sum
// of a finite slice is +0 in any order and only a slice with a NaN or an infinity is summed (its
// NaN is then the one the in-order sum makes).
//   operands: X, partials [shares];  params: format::params::SumOfSquares;  fparams: kScale
void run_sum_of_squares(const PreparedVertex& v) {
  using P = format::params::SumOfSquares;
  const float* x = v.f32(0);
  const float scale = v.fparams[format::fparams::SumOfSquares::kScale];
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  if (scale == 0.0f && all_finite({x + begin, static_cast<size_t>(end - begin)})) {
    v.f32(1)[v.params[P::kShare]] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t i = begin; i < end; ++i) {
    const double scaled = static_cast<double>(scale * x[i]);
    sum += scaled * scaled;
  }
  v.f32(1)[v.params[P::kShare]] = static_cast<float>(sum);
}

Status validate_sum_of_squares(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::SumOfSquares;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::SumOfSquares::kCount));
  if (v.operands(0) == v.operands(1)) return invalid_argument("the partials alias the input");
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kShare), v.params(P::kShare) + 1,
                                   static_cast<int64_t>(ops[1].elements), "share"));
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

// ClipFactor: factor[0] = min(1, clip_norm / (sqrt(Σ_s squares[s]) + 1e-6)), in double, the
// stages' squared norms added in stage order (torch.nn.utils.clip_grad_norm_'s formula).
//   operands: squares [stages], factor [1];  params: format::params::ClipFactor;  fparams: kClipNorm
void run_clip_factor(const PreparedVertex& v) {
  const float* squares = v.f32(0);
  double total = 0.0;
  for (int64_t s = 0; s < v.params[format::params::ClipFactor::kStages]; ++s)
    total += static_cast<double>(squares[s]);
  const double clip = v.fparams[format::fparams::ClipFactor::kClipNorm];
  v.f32(1)[0] = static_cast<float>(std::min(1.0, clip / (std::sqrt(total) + kNormEpsilon)));
}

Status validate_clip_factor(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ClipFactor;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::ClipFactor::kCount));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kStages)}, ops[0].elements, "squares"));
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[1].elements, "factor"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("the factor aliases the squared norms");
  if (!(v.fparams(format::fparams::ClipFactor::kClipNorm) > 0.0f))
    return invalid_argument("the clip norm must be positive");
  return Status();
}

// ScaleInPlace: X[i] ·= factor[0] for begin ≤ i < end.
//   operands: X, factor [1];  params: format::params::ScaleInPlace
void run_scale_in_place(const PreparedVertex& v) {
  using P = format::params::ScaleInPlace;
  float* x = v.f32(0);
  const float factor = v.f32(1)[0];
  for (int64_t i = v.params[P::kBegin]; i < v.params[P::kEnd]; ++i)
    x[i] *= factor;
}

Status validate_scale_in_place(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ScaleInPlace;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[1].elements, "factor"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("the factor aliases the scaled tensor");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

// Each SumOfSquares vertex writes its own share: no two may run as one.
const KernelDef& sum_of_squares_kernel() {
  static const KernelDef def{Codelet::kSumOfSquares, run_sum_of_squares, validate_sum_of_squares};
  return def;
}
const KernelDef& clip_factor_kernel() {
  static const KernelDef def{Codelet::kClipFactor, run_clip_factor, validate_clip_factor};
  return def;
}
const KernelDef& scale_in_place_kernel() {
  static const KernelDef def{Codelet::kScaleInPlace, run_scale_in_place, validate_scale_in_place,
                             begin_end<format::params::ScaleInPlace>()};
  return def;
}

} // namespace ipu::kernels
