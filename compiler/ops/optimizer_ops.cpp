// ColumnSum (bias gradients), AccumulateGrad (gradient accumulation) and the optimizers' updates,
// all in place: SgdUpdate (SGD with momentum, dampening, Nesterov and weight decay), AdamUpdate
// (Adam and AdamW), RmsPropUpdate, AdagradUpdate and AdaMaxUpdate (docs/training.md).
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"

namespace ipu::ir {
namespace {

using lowering::LowerContext;

Status infer_column_sum(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() != 2) return invalid_argument("expects a rank-2 input, got " + x.to_string());
  out.push_back({DType::kFloat32, {x.shape[1]}});
  return Status();
}

Status lower_column_sum(LowerContext& ctx, const Op& op) {
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], N = shape[1];
  const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
  const double per_col = static_cast<double>(M) / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(
      ctx, N, per_col, 4.0 * static_cast<double>(M), [&](uint32_t tile, int64_t cb, int64_t ce) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kColumnSum;
        v.operands = {x, y};
        using P = format::params::ColumnSum;
        v.params = format::make_params<P>({{P::kM, M}, {P::kN, N}, {P::kColBegin, cb}, {P::kColEnd, ce}});
        v.compute_cycles = per_col * static_cast<double>(ce - cb);
        v.reads = {lowering::block_region(x, 0, M, cb, ce, N)};
        v.writes = {lowering::flat_region(y, cb, ce)};
        ctx.emit(tile, std::move(v));
      });
  return Status();
}

// Inputs: weight, gradient, `elementwise - 2` state tensors shaped like the weight, then, with
// `step`, a one-element step count. Checked for every update op but SgdUpdate's plain form.
Status check_update_inputs(const Graph& g, const Op& op, size_t elementwise, bool step) {
  if (op.inputs.size() != elementwise + (step ? 1 : 0))
    return invalid_argument("expects " + std::to_string(elementwise + (step ? 1 : 0)) + " inputs");
  const auto& w = g.value(op.inputs[0]).type;
  for (size_t i = 1; i < elementwise; ++i) {
    if (g.value(op.inputs[i]).type.shape != w.shape)
      return invalid_argument("weight, gradient and optimizer state shapes differ");
  }
  if (step && g.value(op.inputs.back()).type.elements() != 1)
    return invalid_argument("the step count must be a scalar");
  return Status();
}

// Emits one `codelet` vertex per slice of the weight, each reading its slice of the first
// `elementwise` operands and, with `step` (the last operand), the step count; a StepCount vertex
// in the compute set after theirs then advances the count, so every slice reads the same step.
// `params(begin, end)` gives a vertex's integer params.
template <typename Params>
void lower_update(LowerContext& ctx, const Op& op, format::Codelet codelet, double flops_per_element,
                  size_t elementwise, bool step, Params&& params, const std::vector<float>& fparams) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const double per_element = flops_per_element / ctx.target().cycles.vector_flops_per_cycle;
  const double bytes_per_element = 4.0 * static_cast<double>(elementwise);
  lowering::lower_split(ctx, n, per_element, bytes_per_element,
                        [&](uint32_t tile, int64_t begin, int64_t end) {
                          lowering::VertexSpec v;
                          v.codelet = codelet;
                          v.operands = operands;
                          v.params = params(begin, end);
                          v.fparams = fparams;
                          v.compute_cycles = per_element * static_cast<double>(end - begin);
                          for (size_t i = 0; i < elementwise; ++i)
                            v.reads.push_back(lowering::flat_region(operands[i], begin, end));
                          if (step) v.reads.push_back(lowering::flat_region(operands.back(), 0, 1));
                          ctx.emit(tile, std::move(v));
                        });
  if (!step) return;
  lowering::VertexSpec count;
  count.codelet = format::Codelet::kStepCount;
  count.operands = {operands.back()};
  using P = format::params::StepCount;
  count.params = format::make_params<P>({{P::kIncrement, 1}});
  count.reads = {lowering::flat_region(operands.back(), 0, 1)};
  ctx.emit_after(ctx.take_tiles(1)[0], std::move(count));
}

// Inputs: weight, gradient, square average, momentum buffer (momentum ≠ 0), gradient average
// (centered). Updates all but the gradient in place (the gradient too when it is an
// accumulator); no outputs.
Status infer_rms_prop_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  const RmsPropUpdateAttrs& a = op.attrs<RmsPropUpdateAttrs>();
  return check_update_inputs(g, op, 3 + (a.momentum != 0.0f ? 1 : 0) + (a.centered ? 1 : 0), false);
}

Status lower_rms_prop_update(LowerContext& ctx, const Op& op) {
  const RmsPropUpdateAttrs& a = op.attrs<RmsPropUpdateAttrs>();
  using P = format::params::RmsProp;
  using F = format::fparams::RmsProp;
  lower_update(
      ctx, op, format::Codelet::kRmsProp, a.centered ? 12.0 : 9.0, op.inputs.size(), false,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>({{P::kBegin, begin},
                                       {P::kEnd, end},
                                       {P::kClearGradient, a.clear_gradient},
                                       {P::kCentered, a.centered}});
      },
      format::make_fparams<F>({{F::kLearningRate, a.learning_rate},
                               {F::kRho, a.rho},
                               {F::kMomentum, a.momentum},
                               {F::kEpsilon, a.epsilon},
                               {F::kWeightDecay, a.weight_decay},
                               {F::kGradientScale, a.gradient_scale}}));
  return Status();
}

// Inputs: weight, gradient, sum of squared gradients. Updates the weight and the sum in place
// (the gradient too when it is an accumulator); no outputs.
Status infer_adagrad_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  return check_update_inputs(g, op, 3, false);
}

Status lower_adagrad_update(LowerContext& ctx, const Op& op) {
  const AdaptiveUpdateAttrs& a = op.attrs<AdaptiveUpdateAttrs>();
  using P = format::params::Adagrad;
  using F = format::fparams::Adagrad;
  lower_update(
      ctx, op, format::Codelet::kAdagrad, 8.0, 3, false,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>(
            {{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, a.clear_gradient}});
      },
      format::make_fparams<F>({{F::kLearningRate, a.learning_rate},
                               {F::kEpsilon, a.epsilon},
                               {F::kWeightDecay, a.weight_decay},
                               {F::kGradientScale, a.gradient_scale}}));
  return Status();
}

// Inputs: weight, gradient, first moment, infinity norm, step count [1]. Updates all but the
// gradient in place (the gradient too when it is an accumulator); no outputs.
Status infer_ada_max_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  return check_update_inputs(g, op, 4, true);
}

Status lower_ada_max_update(LowerContext& ctx, const Op& op) {
  const AdaptiveUpdateAttrs& a = op.attrs<AdaptiveUpdateAttrs>();
  using P = format::params::AdaMax;
  using F = format::fparams::AdaMax;
  lower_update(
      ctx, op, format::Codelet::kAdaMax, 10.0, 4, true,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>(
            {{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, a.clear_gradient}});
      },
      format::make_fparams<F>({{F::kLearningRate, a.learning_rate},
                               {F::kBeta1, a.beta_1},
                               {F::kBeta2, a.beta_2},
                               {F::kEpsilon, a.epsilon},
                               {F::kWeightDecay, a.weight_decay},
                               {F::kGradientScale, a.gradient_scale}}));
  return Status();
}

// Inputs: weight, gradient, velocity (momentum ≠ 0), step count [1] (momentum and dampening ≠ 0).
// Updates weight, velocity and step in place; no outputs.
Status infer_sgd_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  const SgdUpdateAttrs& sgd = op.attrs<SgdUpdateAttrs>();
  const bool momentum = sgd.momentum != 0.0f;
  return check_update_inputs(g, op, momentum ? 3 : 2, momentum && sgd.dampening != 0.0f);
}

// Plain SGD (no dampening, Nesterov or weight decay) keeps the SgdMomentum codelet, so its
// executables and results are what they were; the rest lowers to Sgd.
Status lower_sgd_update(LowerContext& ctx, const Op& op) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const SgdUpdateAttrs& sgd = op.attrs<SgdUpdateAttrs>();
  if (sgd.dampening != 0.0f || sgd.nesterov || sgd.weight_decay != 0.0f) {
    const bool momentum = sgd.momentum != 0.0f;
    using P = format::params::Sgd;
    using F = format::fparams::Sgd;
    lower_update(
        ctx, op, format::Codelet::kSgd, 6.0, momentum ? 3 : 2, momentum && sgd.dampening != 0.0f,
        [&](int64_t begin, int64_t end) {
          return format::make_params<P>({{P::kBegin, begin},
                                         {P::kEnd, end},
                                         {P::kClearGradient, sgd.clear_gradient},
                                         {P::kNesterov, sgd.nesterov}});
        },
        format::make_fparams<F>({{F::kLearningRate, sgd.learning_rate},
                                 {F::kMomentum, sgd.momentum},
                                 {F::kDampening, sgd.dampening},
                                 {F::kWeightDecay, sgd.weight_decay},
                                 {F::kGradientScale, sgd.gradient_scale}}));
    return Status();
  }
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const double per_element = 3.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(ctx, n, per_element, 8.0, [&](uint32_t tile, int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kSgdMomentum;
    v.operands = operands;
    using P = format::params::SgdMomentum;
    using F = format::fparams::SgdMomentum;
    v.params =
        format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, sgd.clear_gradient}});
    v.fparams = format::make_fparams<F>({{F::kLearningRate, sgd.learning_rate},
                                         {F::kMomentum, sgd.momentum},
                                         {F::kGradientScale, sgd.gradient_scale}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    for (uint32_t t : v.operands)
      v.reads.push_back(lowering::flat_region(t, begin, end));
    ctx.emit(tile, std::move(v));
  });
  return Status();
}

// Inputs: weight, gradient, first moment, second moment, step count [1]. Updates all but the
// gradient in place (the gradient too when it is an accumulator); no outputs.
Status infer_adam_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  const auto& w = g.value(op.inputs[0]).type;
  for (size_t i = 1; i < 4; ++i) {
    if (g.value(op.inputs[i]).type.shape != w.shape)
      return invalid_argument("weight, gradient and moment shapes differ");
  }
  if (g.value(op.inputs[4]).type.elements() != 1) return invalid_argument("the step count must be a scalar");
  return Status();
}

// The Adam vertices all read the step count; StepCount advances it in the compute set after
// theirs, so every vertex of the update sees the same step.
Status lower_adam_update(LowerContext& ctx, const Op& op) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const AdamUpdateAttrs& adam = op.attrs<AdamUpdateAttrs>();
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const uint32_t step = operands[4];
  const double per_element = 12.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(ctx, n, per_element, 16.0, [&](uint32_t tile, int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kAdam;
    v.operands = operands;
    using P = format::params::Adam;
    using F = format::fparams::Adam;
    v.params = format::make_params<P>({{P::kBegin, begin},
                                       {P::kEnd, end},
                                       {P::kClearGradient, adam.clear_gradient},
                                       {P::kDecoupledWeightDecay, adam.decoupled_weight_decay}});
    v.fparams = format::make_fparams<F>({{F::kLearningRate, adam.learning_rate},
                                         {F::kBeta1, adam.beta_1},
                                         {F::kBeta2, adam.beta_2},
                                         {F::kEpsilon, adam.epsilon},
                                         {F::kWeightDecay, adam.weight_decay},
                                         {F::kGradientScale, adam.gradient_scale}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    for (size_t i = 0; i < 4; ++i)
      v.reads.push_back(lowering::flat_region(operands[i], begin, end));
    v.reads.push_back(lowering::flat_region(step, 0, 1));
    ctx.emit(tile, std::move(v));
  });
  lowering::VertexSpec count;
  count.codelet = format::Codelet::kStepCount;
  count.operands = {step};
  using P = format::params::StepCount;
  count.params = format::make_params<P>({{P::kIncrement, 1}});
  count.reads = {lowering::flat_region(step, 0, 1)};
  ctx.emit_after(ctx.take_tiles(1)[0], std::move(count));
  return Status();
}

// Inputs: accumulator, gradient. Adds the gradient into the accumulator in place; no outputs.
Status infer_accumulate_grad(const Graph& g, const Op& op, std::vector<TensorType>&) {
  if (g.value(op.inputs[0]).type.shape != g.value(op.inputs[1]).type.shape) {
    return invalid_argument("accumulator and gradient shapes differ");
  }
  return Status();
}

Status lower_accumulate_grad(LowerContext& ctx, const Op& op) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const uint32_t acc = ctx.tensor(op.inputs[0]), grad = ctx.tensor(op.inputs[1]);
  const double per_element = 1.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(ctx, n, per_element, 8.0, [&](uint32_t tile, int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kAccumulate;
    v.operands = {acc, grad};
    using P = format::params::Accumulate;
    v.params = format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads = {lowering::flat_region(acc, begin, end), lowering::flat_region(grad, begin, end)};
    ctx.emit(tile, std::move(v));
  });
  return Status();
}

} // namespace

const OpDefinition& accumulate_grad_op() {
  static const OpDefinition def{{OpKind::kAccumulateGrad, 2, infer_accumulate_grad, nullptr},
                                lower_accumulate_grad};
  return def;
}

const OpDefinition& adam_update_op() {
  static const OpDefinition def{{OpKind::kAdamUpdate, 5, infer_adam_update, nullptr}, lower_adam_update};
  return def;
}

const OpDefinition& rms_prop_update_op() {
  static const OpDefinition def{{OpKind::kRmsPropUpdate, kVariadic, infer_rms_prop_update, nullptr},
                                lower_rms_prop_update};
  return def;
}
const OpDefinition& adagrad_update_op() {
  static const OpDefinition def{{OpKind::kAdagradUpdate, 3, infer_adagrad_update, nullptr},
                                lower_adagrad_update};
  return def;
}
const OpDefinition& ada_max_update_op() {
  static const OpDefinition def{{OpKind::kAdaMaxUpdate, 5, infer_ada_max_update, nullptr},
                                lower_ada_max_update};
  return def;
}

const OpDefinition& column_sum_op() {
  static const OpDefinition def{{OpKind::kColumnSum, 1, infer_column_sum, nullptr}, lower_column_sum};
  return def;
}
const OpDefinition& sgd_update_op() {
  static const OpDefinition def{{OpKind::kSgdUpdate, kVariadic, infer_sgd_update, nullptr}, lower_sgd_update};
  return def;
}

} // namespace ipu::ir
