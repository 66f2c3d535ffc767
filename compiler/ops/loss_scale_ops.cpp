// Loss scaling (docs/training.md, "Loss scaling"): LossScaleFactor, the static loss scale the
// stage's hyper-parameters hold, or its reciprocal, as a one-element factor that ScaleGradient
// (clip_ops.cpp) applies. compiler/passes/loss_scaling.h builds them.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "runtime/format/host_contract.h"

namespace ipu::ir {
namespace {

using lowering::LowerContext;

// Input: the hyper-parameters [kHyperParameterCount]. Output: the factor, [1].
Status infer_loss_scale_factor(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& hyper = g.value(op.inputs[0]).type;
  if (hyper.dtype != DType::kFloat32 || hyper.elements() != format::kHyperParameterCount) {
    return invalid_argument("expects the hyper-parameters, float32 [" +
                            std::to_string(format::kHyperParameterCount) + "], got " + hyper.to_string());
  }
  out.push_back({DType::kFloat32, {1}});
  return Status();
}

// One vertex: a division at most, on one tile.
Status lower_loss_scale_factor(LowerContext& ctx, const Op& op) {
  const uint32_t hyper = ctx.tensor(op.inputs[0]), factor = ctx.tensor(op.outputs[0]);
  lowering::VertexSpec v;
  v.codelet = format::Codelet::kLossScaleFactor;
  v.operands = {hyper, factor};
  using P = format::params::LossScaleFactor;
  v.params = format::make_params<P>({{P::kReciprocal, op.attrs<LossScaleFactorAttrs>().reciprocal ? 1 : 0}});
  v.compute_cycles = 1.0;
  v.reads = {lowering::flat_region(hyper, 0, format::kHyperParameterCount)};
  v.writes = {lowering::flat_region(factor, 0, 1)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

} // namespace

const OpDefinition& loss_scale_factor_op() {
  static const OpDefinition def{{OpKind::kLossScaleFactor, 1, infer_loss_scale_factor, nullptr},
                                lower_loss_scale_factor};
  return def;
}

} // namespace ipu::ir
