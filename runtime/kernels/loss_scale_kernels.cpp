// Loss scaling (docs/training.md, "Loss scaling"): the factor the loss gradient is multiplied by
// (the scale) and the one every gradient is multiplied by before the update (its reciprocal).
#include "runtime/format/host_contract.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// LossScaleFactor: factor[0] = S, or 1 / S with reciprocal, S = H[kLossScale] (the static loss
// scale the host streams). A power-of-two S makes both exact, so scaling changes no gradient
// unless it overflows.
//   operands: H [kHyperParameterCount], factor [1];  params: format::params::LossScaleFactor
void run_loss_scale_factor(const PreparedVertex& v) {
  const float scale = v.f32(0)[format::HyperParameter::kLossScale];
  v.f32(1)[0] = v.params[format::params::LossScaleFactor::kReciprocal] != 0 ? 1.0f / scale : scale;
}

Status validate_loss_scale_factor(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::LossScaleFactor;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(expect_elements({format::kHyperParameterCount}, ops[0].elements, "hyper-parameters"));
  IPU_RETURN_IF_ERROR(expect_elements({1}, ops[1].elements, "factor"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("the factor aliases the hyper-parameters");
  if (v.params(P::kReciprocal) != 0 && v.params(P::kReciprocal) != 1)
    return invalid_argument("reciprocal must be 0 or 1");
  return Status();
}

} // namespace

const KernelDef& loss_scale_factor_kernel() {
  static const KernelDef def{Codelet::kLossScaleFactor, run_loss_scale_factor, validate_loss_scale_factor};
  return def;
}

} // namespace ipu::kernels
