// LAMB's two elementwise halves (docs/training.md; You et al. 2019, Algorithm 2): the moments
// and update direction, and the step by the trust ratio. The norms between them are
// SumOfSquares shares summed by a Reduce (clip_kernels.cpp).
#include <algorithm>
#include <cmath>

#include "runtime/kernels/update_operands.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;
using H = format::HyperParameter;

// LambMoments, on g = gradient_scale·G at step t = S[0] + 1 (StepCount advances S after every
// vertex of the update has read it):
//   M = β1·M + (1 − β1)·g;  V = β2·V + (1 − β2)·g²
//   G = u = (M / (1 − β1^t)) / (sqrt(V / (1 − β2^t)) + ε) + weight_decay·W
// The bias corrections in double from the stored step, rounded to float32 once (as Adam's).
//   operands: W, G, M, V (same size, distinct), S [1], H (hyper-parameters: beta_1, beta_2,
//             epsilon, weight_decay)
//   params:   format::params::LambMoments;  fparams: format::fparams::LambMoments
void run_lamb_moments(const PreparedVertex& v) {
  using P = format::params::LambMoments;
  using F = format::fparams::LambMoments;
  const float* w = v.f32(0);
  float* g = v.f32(1);
  float* m = v.f32(2);
  float* second = v.f32(3);
  const float* hyper = hyper_parameters(v);
  const float beta1 = hyper[H::kBeta1], beta2 = hyper[H::kBeta2], epsilon = hyper[H::kEpsilon],
              decay = hyper[H::kWeightDecay], scale = v.fparams[F::kGradientScale];
  const double t = static_cast<double>(v.f32(4)[0]) + 1.0;
  const auto first_correction = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), t));
  const auto second_correction = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), t));
  for (int64_t i = v.params[P::kBegin]; i < v.params[P::kEnd]; ++i) {
    const float grad = scale * g[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * grad;
    second[i] = beta2 * second[i] + (1.0f - beta2) * grad * grad;
    g[i] = (m[i] / first_correction) / (std::sqrt(second[i] / second_correction) + epsilon) + decay * w[i];
  }
}

Status validate_lamb_moments(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::LambMoments;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::LambMoments::kCount));
  return validate_update(v, ops, 4, true, v.params(P::kBegin), v.params(P::kEnd));
}

// LambApply: W −= lr·r·U with the trust ratio r = ‖W‖ / ‖U‖ from the squared norms (in double),
// or 1 when either norm is 0 (the paper's φ is the identity here, as PopART's and most LAMB
// implementations'). With clear_gradient, U (an accumulator) is zeroed after use.
//   operands: W, U (same size, distinct), ‖W‖² [1], ‖U‖² [1], H (hyper-parameters: learning_rate)
//   params:   format::params::LambApply
void run_lamb_apply(const PreparedVertex& v) {
  using P = format::params::LambApply;
  float* w = v.f32(0);
  float* u = v.f32(1);
  const double weight_norm = std::sqrt(static_cast<double>(v.f32(2)[0]));
  const double update_norm = std::sqrt(static_cast<double>(v.f32(3)[0]));
  const double ratio = weight_norm > 0.0 && update_norm > 0.0 ? weight_norm / update_norm : 1.0;
  const auto step = static_cast<float>(hyper_parameters(v)[H::kLearningRate] * ratio);
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  for (int64_t i = begin; i < end; ++i)
    w[i] -= step * u[i];
  if (v.params[P::kClearGradient] != 0) std::fill(u + begin, u + end, 0.0f);
}

Status validate_lamb_apply(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::LambApply;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  if (ops[1].elements != ops[0].elements)
    return invalid_argument("the update's size differs from the weight");
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[2].elements, "weight norm"));
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[3].elements, "update norm"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("weight and update must be distinct tensors");
  for (int i = 2; i < 4; ++i) {
    if (v.operands(i) == v.operands(0) || v.operands(i) == v.operands(1))
      return invalid_argument("a norm aliases the weight or the update");
  }
  IPU_RETURN_IF_ERROR(expect_hyper_parameters(v, ops));
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& lamb_moments_kernel() {
  static const KernelDef def{Codelet::kLambMoments, run_lamb_moments, validate_lamb_moments,
                             begin_end<format::params::LambMoments>()};
  return def;
}
const KernelDef& lamb_apply_kernel() {
  static const KernelDef def{Codelet::kLambApply, run_lamb_apply, validate_lamb_apply,
                             begin_end<format::params::LambApply>()};
  return def;
}

} // namespace ipu::kernels
