// ColumnSum (bias gradients), AccumulateGrad (gradient accumulation) and the optimizers' updates,
// all in place: SgdUpdate (SGD with momentum, dampening, Nesterov and weight decay), AdamUpdate
// (Adam and AdamW), RmsPropUpdate, AdagradUpdate and AdaMaxUpdate (docs/training.md).
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "runtime/format/host_contract.h"

namespace ipu::ops {
using ir::AdaptiveUpdateAttrs;
using ir::Graph;
using ir::Op;
using ir::OpKind;
using ir::RmsPropUpdateAttrs;
using ir::SgdUpdateAttrs;
using ir::TensorType;

namespace {

using lowering::LowerContext;

Status infer_column_sum(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() != 2) return invalid_argument("expects a rank-2 input, got " + x.to_string());
  out.push_back({ir::DType::kFloat32, {x.shape[1]}});
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
// `step`, a one-element step count, then the hyper-parameters (format::kHyperParameterCount
// values, runtime/format/host_contract.h).
Status check_update_inputs(const Graph& g, const Op& op, size_t elementwise, bool step) {
  const size_t count = elementwise + (step ? 1 : 0) + 1;
  if (op.inputs.size() != count) return invalid_argument("expects " + std::to_string(count) + " inputs");
  const auto& w = g.value(op.inputs[0]).type;
  for (size_t i = 1; i < elementwise; ++i) {
    if (g.value(op.inputs[i]).type.shape != w.shape)
      return invalid_argument("weight, gradient and optimizer state shapes differ");
  }
  if (step && g.value(op.inputs[count - 2]).type.elements() != 1)
    return invalid_argument("the step count must be a scalar");
  if (g.value(op.inputs.back()).type.elements() != format::kHyperParameterCount)
    return invalid_argument("the hyper-parameters must have " + std::to_string(format::kHyperParameterCount) +
                            " elements");
  return Status();
}

// Emits one `codelet` vertex per slice of the weight, each reading its slice of the first
// `elementwise` operands, with `step` the step count, and the hyper-parameters (the last operand);
// a StepCount vertex in the compute set after theirs then advances the count, so every slice
// reads the same step. `params(begin, end)` gives a vertex's integer params; the only float
// param is the gradient scale (1 / micro-batches), which the program's structure fixes.
template <typename Params>
void lower_update(LowerContext& ctx, const Op& op, format::Codelet codelet, double flops_per_element,
                  size_t elementwise, bool step, Params&& params, float gradient_scale) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const uint32_t hyper = operands.back();
  const uint32_t step_count = step ? operands[operands.size() - 2] : 0;
  const double per_element = flops_per_element / ctx.target().cycles.vector_flops_per_cycle;
  const double bytes_per_element = 4.0 * static_cast<double>(elementwise);
  const lowering::ElementwiseWork work{n,
                                       1,
                                       per_element,
                                       bytes_per_element,
                                       {operands.begin(), operands.begin() + static_cast<long>(elementwise)}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = codelet;
    v.operands = operands;
    v.params = params(begin, end);
    v.fparams = {gradient_scale};
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    for (size_t i = 0; i < elementwise; ++i) {
      v.reads.push_back(lowering::flat_region(operands[i], begin, end));
      // The weight and its state; the gradient (operand 1) is an fp32 value or accumulator.
      if (i != 1) v.in_place.push_back(lowering::flat_region(operands[i], begin, end));
    }
    if (step) v.reads.push_back(lowering::flat_region(step_count, 0, 1));
    v.reads.push_back(lowering::flat_region(hyper, 0, format::kHyperParameterCount));
    return v;
  });
  if (!step) return;
  lowering::VertexSpec count;
  count.codelet = format::Codelet::kStepCount;
  count.operands = {step_count};
  using P = format::params::StepCount;
  count.params = format::make_params<P>({{P::kIncrement, 1}});
  count.reads = {lowering::flat_region(step_count, 0, 1)};
  ctx.emit_after(ctx.take_tiles(1)[0], std::move(count));
}

// Inputs: weight, gradient, square average, momentum buffer (has_momentum), gradient average
// (centered), hyper-parameters. Updates all but the gradient in place (the gradient too when it
// is an accumulator); no outputs.
Status infer_rms_prop_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  const RmsPropUpdateAttrs& a = op.attrs<RmsPropUpdateAttrs>();
  return check_update_inputs(g, op, 3 + (a.has_momentum ? 1 : 0) + (a.centered ? 1 : 0), false);
}

Status lower_rms_prop_update(LowerContext& ctx, const Op& op) {
  const RmsPropUpdateAttrs& a = op.attrs<RmsPropUpdateAttrs>();
  using P = format::params::RmsProp;
  lower_update(
      ctx, op, format::Codelet::kRmsProp, a.centered ? 12.0 : 9.0, op.inputs.size() - 1, false,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>({{P::kBegin, begin},
                                       {P::kEnd, end},
                                       {P::kClearGradient, a.clear_gradient},
                                       {P::kCentered, a.centered}});
      },
      a.gradient_scale);
  return Status();
}

// Inputs: weight, gradient, sum of squared gradients, hyper-parameters. Updates the weight and
// the sum in place (the gradient too when it is an accumulator); no outputs.
Status infer_adagrad_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  return check_update_inputs(g, op, 3, false);
}

Status lower_adagrad_update(LowerContext& ctx, const Op& op) {
  const AdaptiveUpdateAttrs& a = op.attrs<AdaptiveUpdateAttrs>();
  using P = format::params::Adagrad;
  lower_update(
      ctx, op, format::Codelet::kAdagrad, 8.0, 3, false,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>(
            {{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, a.clear_gradient}});
      },
      a.gradient_scale);
  return Status();
}

// Inputs: weight, gradient, first moment, infinity norm, step count [1], hyper-parameters.
// Updates all but the gradient in place (the gradient too when it is an accumulator); no outputs.
Status infer_ada_max_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  return check_update_inputs(g, op, 4, true);
}

Status lower_ada_max_update(LowerContext& ctx, const Op& op) {
  const AdaptiveUpdateAttrs& a = op.attrs<AdaptiveUpdateAttrs>();
  using P = format::params::AdaMax;
  lower_update(
      ctx, op, format::Codelet::kAdaMax, 10.0, 4, true,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>(
            {{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, a.clear_gradient}});
      },
      a.gradient_scale);
  return Status();
}

// Inputs: weight, gradient, velocity (has_momentum), step count [1] (has_dampening),
// hyper-parameters. Updates weight, velocity and step in place; no outputs.
Status infer_sgd_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  const SgdUpdateAttrs& sgd = op.attrs<SgdUpdateAttrs>();
  return check_update_inputs(g, op, sgd.has_momentum ? 3 : 2, sgd.has_dampening);
}

// Plain SGD (no dampening, Nesterov or weight decay) keeps the SgdMomentum codelet, so its
// results are what they were; the rest lowers to Sgd.
Status lower_sgd_update(LowerContext& ctx, const Op& op) {
  const SgdUpdateAttrs& sgd = op.attrs<SgdUpdateAttrs>();
  const size_t elementwise = sgd.has_momentum ? 3 : 2;
  if (sgd.has_dampening || sgd.nesterov || sgd.has_weight_decay) {
    using P = format::params::Sgd;
    lower_update(
        ctx, op, format::Codelet::kSgd, 6.0, elementwise, sgd.has_dampening,
        [&](int64_t begin, int64_t end) {
          return format::make_params<P>({{P::kBegin, begin},
                                         {P::kEnd, end},
                                         {P::kClearGradient, sgd.clear_gradient},
                                         {P::kNesterov, sgd.nesterov}});
        },
        sgd.gradient_scale);
    return Status();
  }
  using P = format::params::SgdMomentum;
  lower_update(
      ctx, op, format::Codelet::kSgdMomentum, 3.0, elementwise, false,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>(
            {{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, sgd.clear_gradient}});
      },
      sgd.gradient_scale);
  return Status();
}

// Inputs: weight, gradient, first moment, second moment, step count [1], hyper-parameters.
// Updates all but the gradient in place (the gradient too when it is an accumulator); no outputs.
Status infer_adam_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  return check_update_inputs(g, op, 4, true);
}

Status lower_adam_update(LowerContext& ctx, const Op& op) {
  const ir::AdamUpdateAttrs& adam = op.attrs<ir::AdamUpdateAttrs>();
  using P = format::params::Adam;
  lower_update(
      ctx, op, format::Codelet::kAdam, 12.0, 4, true,
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>({{P::kBegin, begin},
                                       {P::kEnd, end},
                                       {P::kClearGradient, adam.clear_gradient},
                                       {P::kDecoupledWeightDecay, adam.decoupled_weight_decay}});
      },
      adam.gradient_scale);
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
  lowering::lower_where_operands_live(
      ctx, {n, 1, per_element, 8.0, {acc, grad}}, [&](int64_t begin, int64_t end) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kAccumulate;
        v.operands = {acc, grad};
        using P = format::params::Accumulate;
        v.params = format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}});
        v.compute_cycles = per_element * static_cast<double>(end - begin);
        v.reads = {lowering::flat_region(acc, begin, end), lowering::flat_region(grad, begin, end)};
        return v;
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
  static const OpDefinition def{{OpKind::kAdamUpdate, 6, infer_adam_update, nullptr}, lower_adam_update};
  return def;
}

const OpDefinition& rms_prop_update_op() {
  static const OpDefinition def{{OpKind::kRmsPropUpdate, ir::kVariadic, infer_rms_prop_update, nullptr},
                                lower_rms_prop_update};
  return def;
}
const OpDefinition& adagrad_update_op() {
  static const OpDefinition def{{OpKind::kAdagradUpdate, 4, infer_adagrad_update, nullptr},
                                lower_adagrad_update};
  return def;
}
const OpDefinition& ada_max_update_op() {
  static const OpDefinition def{{OpKind::kAdaMaxUpdate, 6, infer_ada_max_update, nullptr},
                                lower_ada_max_update};
  return def;
}

const OpDefinition& column_sum_op() {
  static const OpDefinition def{{OpKind::kColumnSum, 1, infer_column_sum, nullptr}, lower_column_sum};
  return def;
}
const OpDefinition& sgd_update_op() {
  static const OpDefinition def{{OpKind::kSgdUpdate, ir::kVariadic, infer_sgd_update, nullptr},
                                lower_sgd_update};
  return def;
}

} // namespace ipu::ops
