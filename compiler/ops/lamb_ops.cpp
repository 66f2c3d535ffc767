// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning"; PopART's Lamb mode of
// adam.hpp; docs/training.md) in two ops around its two norms: LambMoments updates the moments
// and turns the gradient into the update direction u in place; SquaredNorm ops (clip_ops.cpp)
// reduce ‖W‖² and ‖u‖² over the tiles; LambApply then steps W by the trust ratio ‖W‖/‖u‖.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "runtime/format/host_contract.h"

namespace ipu::ops {
using ir::LambAttrs;
using ir::Op;

namespace {

using lowering::LowerContext;

// The last input of both ops: the hyper-parameters (runtime/format/host_contract.h's slots).
Status check_hyper_parameters(const ir::Graph& g, const Op& op) {
  if (g.value(op.inputs.back()).type.elements() != format::kHyperParameterCount)
    return invalid_argument("the hyper-parameters must have " + std::to_string(format::kHyperParameterCount) +
                            " elements");
  return Status();
}

// Every slice reads all of the hyper-parameters.
lowering::Region hyper_parameters_region(uint32_t hyper) {
  return lowering::flat_region(hyper, 0, format::kHyperParameterCount);
}

// Inputs: weight, gradient, first moment, second moment, step count [1], hyper-parameters.
// Output: u, which shares the gradient's tensor (the moments are updated in place and the step
// advances).
Status infer_lamb_moments(const ir::Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  const ir::TensorType& w = g.value(op.inputs[0]).type;
  for (size_t i = 1; i < 4; ++i) {
    if (g.value(op.inputs[i]).type.shape != w.shape)
      return invalid_argument("weight, gradient and moment shapes differ");
  }
  if (g.value(op.inputs[4]).type.elements() != 1) return invalid_argument("the step count must be a scalar");
  IPU_RETURN_IF_ERROR(check_hyper_parameters(g, op));
  out.push_back(w);
  return Status();
}

// As Adam's update: every slice reads the step count, and a StepCount vertex in the compute set
// after theirs advances it. Reads only, as every in-place update (see lower_scale_gradient).
Status lower_lamb_moments(LowerContext& ctx, const Op& op) {
  ctx.alias(op.outputs[0], op.inputs[1]);
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const LambAttrs& a = op.attrs<LambAttrs>();
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const uint32_t step = operands[4];
  const double per_element = 13.0 / ctx.target().cycles.vector_flops_per_cycle;
  const lowering::ElementwiseWork work{n, 1, per_element, 16.0, {operands.begin(), operands.begin() + 4}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kLambMoments;
    v.operands = operands;
    using P = format::params::LambMoments;
    using F = format::fparams::LambMoments;
    v.params = format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}});
    v.fparams = format::make_fparams<F>({{F::kGradientScale, a.gradient_scale}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    for (size_t i = 0; i < 4; ++i)
      v.reads.push_back(lowering::flat_region(operands[i], begin, end));
    v.reads.push_back(lowering::flat_region(step, 0, 1));
    v.reads.push_back(hyper_parameters_region(operands[5]));
    return v;
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

// Inputs: weight, u, ‖W‖² [1], ‖u‖² [1], hyper-parameters. Updates the weight in place (and
// clears u when it is an accumulator); no outputs.
Status infer_lamb_apply(const ir::Graph& g, const Op& op, std::vector<ir::TensorType>&) {
  if (g.value(op.inputs[1]).type.shape != g.value(op.inputs[0]).type.shape)
    return invalid_argument("weight and update shapes differ");
  if (g.value(op.inputs[2]).type.elements() != 1 || g.value(op.inputs[3]).type.elements() != 1)
    return invalid_argument("the squared norms must be scalars");
  return check_hyper_parameters(g, op);
}

Status lower_lamb_apply(LowerContext& ctx, const Op& op) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const LambAttrs& a = op.attrs<LambAttrs>();
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const double per_element = 3.0 / ctx.target().cycles.vector_flops_per_cycle;
  const lowering::ElementwiseWork work{n, 1, per_element, 8.0, {operands[0], operands[1]}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kLambApply;
    v.operands = operands;
    using P = format::params::LambApply;
    v.params =
        format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}, {P::kClearGradient, a.clear_gradient}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads = {lowering::flat_region(operands[0], begin, end), lowering::flat_region(operands[1], begin, end),
               lowering::flat_region(operands[2], 0, 1), lowering::flat_region(operands[3], 0, 1),
               hyper_parameters_region(operands[4])};
    v.in_place = {lowering::flat_region(operands[0], begin, end)};
    return v;
  });
  return Status();
}

} // namespace

const OpDefinition& lamb_moments_op() {
  static const OpDefinition def{{ir::OpKind::kLambMoments, 6, infer_lamb_moments, nullptr},
                                lower_lamb_moments};
  return def;
}
const OpDefinition& lamb_apply_op() {
  static const OpDefinition def{{ir::OpKind::kLambApply, 5, infer_lamb_apply, nullptr}, lower_lamb_apply};
  return def;
}

} // namespace ipu::ops
