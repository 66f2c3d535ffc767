// Loss scaling (docs/training.md, "Loss scaling"): the factor the loss gradient is multiplied by
// (the scale) and the one every gradient is multiplied by before the update (its reciprocal);
// dynamic scaling's update of the scale (Keras's LossScaleOptimizer schedule) and the zeroing of
// the accumulators an update it skips leaves behind.
#include <algorithm>
#include <cmath>

#include "runtime/format/host_contract.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// The dynamic state's layout (format::kLossScaleStateTensor).
constexpr uint32_t kStateScale = 0, kStateCounter = 1, kStateSize = 2;

// LossScaleFactor: factor[0] = S, or 1 / S with reciprocal, S = H[kLossScale] (the static loss
// scale the host streams) or, given the dynamic state instead, its scale. A power-of-two S makes
// both exact, so scaling changes no gradient unless it overflows.
//   operands: H [kHyperParameterCount] or state [2], factor [1];  params: format::params::LossScaleFactor
void run_loss_scale_factor(const PreparedVertex& v) {
  const float scale = v.params[format::params::LossScaleFactor::kFromState] != 0
                          ? v.f32(0)[kStateScale]
                          : v.f32(0)[format::HyperParameter::kLossScale];
  v.f32(1)[0] = v.params[format::params::LossScaleFactor::kReciprocal] != 0 ? 1.0f / scale : scale;
}

Status validate_loss_scale_factor(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::LossScaleFactor;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  for (int flag : {P::kReciprocal, P::kFromState}) {
    if (v.params(flag) != 0 && v.params(flag) != 1) return invalid_argument("flags must be 0 or 1");
  }
  if (v.params(P::kFromState) != 0) {
    IPU_RETURN_IF_ERROR(expect_elements({kStateSize}, ops[0].elements, "loss scale state"));
  } else {
    IPU_RETURN_IF_ERROR(expect_elements({format::kHyperParameterCount}, ops[0].elements, "hyper-parameters"));
  }
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[1].elements, "factor"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("the factor aliases the hyper-parameters");
  return Status();
}

// LossScaleUpdate: Keras's dynamic schedule, once per weight update. Each stage's finite check is
// Σ (0·g)², 0 when every gradient element of that stage is finite and NaN otherwise; every stage
// runs this on the same checks, so all agree without sending a flag back. Finite:
// counter + 1 >= growth_steps doubles the scale (kept when the double overflows) and zeroes the
// counter, else counter += 1. Not finite: scale = max(scale / 2, 1), counter = 0. finite[0] is 1
// or 0 (the condition of the stage's update); report = {the scale before, 1 if skipped}.
//   operands: state [2], finite [1], report [2], checks [stages];  params: format::params::LossScaleUpdate
void run_loss_scale_update(const PreparedVertex& v) {
  using P = format::params::LossScaleUpdate;
  float* state = v.f32(0);
  const float* checks = v.f32(3);
  bool finite = true;
  for (int64_t s = 0; s < v.params[P::kStages]; ++s)
    finite = finite && std::isfinite(checks[s]);
  const float scale = state[kStateScale];
  v.f32(2)[0] = scale;
  v.f32(2)[1] = finite ? 0.0f : 1.0f;
  v.f32(1)[0] = finite ? 1.0f : 0.0f;
  const auto growth_steps = static_cast<float>(v.params[P::kGrowthSteps]);
  if (!finite) {
    state[kStateScale] = std::max(scale / 2.0f, 1.0f);
    state[kStateCounter] = 0.0f;
  } else if (state[kStateCounter] + 1.0f >= growth_steps) {
    const float doubled = scale * 2.0f;
    if (std::isfinite(doubled)) state[kStateScale] = doubled;
    state[kStateCounter] = 0.0f;
  } else {
    state[kStateCounter] += 1.0f;
  }
}

Status validate_loss_scale_update(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::LossScaleUpdate;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(expect_elements({kStateSize}, ops[0].elements, "state"));
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[1].elements, "finite"));
  IPU_RETURN_IF_ERROR(expect_elements({2}, ops[2].elements, "report"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kStages)}, ops[3].elements, "finite checks"));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < v.operands_size(); ++j) {
      if (i != j && v.operands(i) == v.operands(j))
        return invalid_argument("an output aliases another operand");
    }
  }
  // The counter is a float: exact up to 2^24.
  return expect_range(1, v.params(P::kGrowthSteps), format::kMaxLossScaleGrowthSteps, "growth steps");
}

// ZeroInPlace: X[i] = 0 for begin ≤ i < end (the accumulators of a skipped update, which hold
// the non-finite gradients that made it skip).
//   operands: X;  params: format::params::ZeroInPlace
void run_zero_in_place(const PreparedVertex& v) {
  using P = format::params::ZeroInPlace;
  float* x = v.f32(0);
  std::fill(x + v.params[P::kBegin], x + v.params[P::kEnd], 0.0f);
}

Status validate_zero_in_place(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ZeroInPlace;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& loss_scale_factor_kernel() {
  static const KernelDef def{Codelet::kLossScaleFactor, run_loss_scale_factor, validate_loss_scale_factor};
  return def;
}
const KernelDef& loss_scale_update_kernel() {
  static const KernelDef def{Codelet::kLossScaleUpdate, run_loss_scale_update, validate_loss_scale_update};
  return def;
}
const KernelDef& zero_in_place_kernel() {
  static const KernelDef def{Codelet::kZeroInPlace, run_zero_in_place, validate_zero_in_place,
                             begin_end<format::params::ZeroInPlace>()};
  return def;
}

} // namespace ipu::kernels
