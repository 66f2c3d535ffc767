// Loss scaling (docs/training.md, "Loss scaling"): LossScaleFactor, the static loss scale the
// stage's hyper-parameters hold (or the dynamic scale its state holds), or its reciprocal, as a
// one-element factor that ScaleGradient (clip_ops.cpp) applies; LossScaleUpdate, the dynamic
// scale's schedule; ZeroGradient, an accumulator zeroed in place when the update is skipped.
// compiler/passes/loss_scaling.h builds them.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "runtime/format/host_contract.h"

namespace ipu::ops {
using ir::DType;
using ir::Op;
using ir::TensorType;

namespace {

using lowering::LowerContext;

// The dynamic loss scale's state, {scale, counter} (format::kLossScaleStateTensor).
constexpr int64_t kStateSize = 2;

bool is_state(const ir::Value& v) {
  return v.role == ir::Role::kOptimizerState && v.type.elements() == kStateSize;
}

// Input: the hyper-parameters [kHyperParameterCount] or the dynamic state [2]. Output: the
// factor, [1].
Status infer_loss_scale_factor(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& hyper = g.value(op.inputs[0]).type;
  const bool state = is_state(g.value(op.inputs[0]));
  if (hyper.dtype != DType::kFloat32 || (!state && hyper.elements() != format::kHyperParameterCount)) {
    return invalid_argument("expects the hyper-parameters, float32 [" +
                            std::to_string(format::kHyperParameterCount) +
                            "], or the loss scale's state, float32 [2], got " + hyper.to_string());
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
  const bool state = is_state(ctx.graph().value(op.inputs[0]));
  v.params =
      format::make_params<P>({{P::kReciprocal, op.attrs<ir::LossScaleFactorAttrs>().reciprocal ? 1 : 0},
                              {P::kFromState, state ? 1 : 0}});
  v.compute_cycles = 1.0;
  v.reads = {lowering::flat_region(hyper, 0, state ? kStateSize : int64_t{format::kHyperParameterCount})};
  v.writes = {lowering::flat_region(factor, 0, 1)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

// Inputs: the state [2] (updated in place) and every stage's finite check, [stages]. Outputs:
// finite [1] (1 or 0: the condition of the stage's update) and the report [2] (the scale the
// update used, 1 if skipped: the host's kLossScaleStream).
Status infer_loss_scale_update(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  if (!is_state(g.value(op.inputs[0])))
    return invalid_argument("expects the loss scale's state, float32 [2], got " +
                            g.value(op.inputs[0]).type.to_string());
  const TensorType& checks = g.value(op.inputs[1]).type;
  if (checks.dtype != DType::kFloat32 || checks.shape.size() != 1)
    return invalid_argument("expects the finite checks as a float32 vector, got " + checks.to_string());
  const int64_t growth_steps = op.attrs<ir::LossScaleUpdateAttrs>().growth_steps;
  if (growth_steps < 1 || growth_steps > format::kMaxLossScaleGrowthSteps)
    return invalid_argument("growth steps must be in [1, 2^24], got " + std::to_string(growth_steps));
  out.push_back({DType::kFloat32, {1}});
  out.push_back({DType::kFloat32, {2}});
  return Status();
}

// One vertex of a handful of flops, on one tile. The state is written in place (declared read,
// as the optimizers' updates declare their state), so its mapping stays where it was put.
Status lower_loss_scale_update(LowerContext& ctx, const Op& op) {
  const uint32_t state = ctx.tensor(op.inputs[0]), checks = ctx.tensor(op.inputs[1]);
  const uint32_t finite = ctx.tensor(op.outputs[0]), report = ctx.tensor(op.outputs[1]);
  const int64_t stages = ctx.graph().value(op.inputs[1]).type.elements();
  lowering::VertexSpec v;
  v.codelet = format::Codelet::kLossScaleUpdate;
  v.operands = {state, finite, report, checks};
  using P = format::params::LossScaleUpdate;
  v.params = format::make_params<P>(
      {{P::kGrowthSteps, op.attrs<ir::LossScaleUpdateAttrs>().growth_steps}, {P::kStages, stages}});
  v.compute_cycles = static_cast<double>(stages + 8) / ctx.target().cycles.vector_flops_per_cycle;
  v.reads = {lowering::flat_region(state, 0, kStateSize), lowering::flat_region(checks, 0, stages)};
  v.writes = {lowering::flat_region(finite, 0, 1), lowering::flat_region(report, 0, 2)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

// Input: an accumulator, zeroed in place. No outputs.
Status infer_zero_gradient(const ir::Graph& g, const Op& op, std::vector<TensorType>&) {
  if (g.value(op.inputs[0]).role != ir::Role::kAccumulator)
    return invalid_argument("expects an accumulator, got '" + g.value(op.inputs[0]).name + "'");
  return Status();
}

// Where the accumulator lives, as the update that would have cleared it.
Status lower_zero_gradient(LowerContext& ctx, const Op& op) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const uint32_t x = ctx.tensor(op.inputs[0]);
  const double per_element = 1.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_where_operands_live(ctx, {n, 1, per_element, 4.0, {x}}, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kZeroInPlace;
    v.operands = {x};
    using P = format::params::ZeroInPlace;
    v.params = format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads = {lowering::flat_region(x, begin, end)};
    return v;
  });
  return Status();
}

} // namespace

const OpDefinition& loss_scale_update_op() {
  static const OpDefinition def{{ir::OpKind::kLossScaleUpdate, 2, infer_loss_scale_update, nullptr},
                                lower_loss_scale_update};
  return def;
}

const OpDefinition& zero_gradient_op() {
  static const OpDefinition def{{ir::OpKind::kZeroGradient, 1, infer_zero_gradient, nullptr},
                                lower_zero_gradient};
  return def;
}

const OpDefinition& loss_scale_factor_op() {
  static const OpDefinition def{{ir::OpKind::kLossScaleFactor, 1, infer_loss_scale_factor, nullptr},
                                lower_loss_scale_factor};
  return def;
}

} // namespace ipu::ops
