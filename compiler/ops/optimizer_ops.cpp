// ColumnSum (bias gradients), AccumulateGrad (gradient accumulation) and SgdUpdate (Keras SGD
// with momentum, in place).
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

// Inputs: weight, gradient[, velocity] (velocity only with momentum). Updates weight and velocity in place;
// no outputs.
Status infer_sgd_update(const Graph& g, const Op& op, std::vector<TensorType>&) {
  const auto& w = g.value(op.inputs[0]).type;
  for (int in : op.inputs) {
    if (g.value(in).type.shape != w.shape)
      return invalid_argument("weight, gradient and velocity shapes differ");
  }
  if (op.inputs.size() != 2 && op.inputs.size() != 3)
    return invalid_argument("expects weight, gradient[, velocity]");
  return Status();
}

Status lower_sgd_update(LowerContext& ctx, const Op& op) {
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const SgdUpdateAttrs& sgd = op.attrs<SgdUpdateAttrs>();
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

const OpDefinition& column_sum_op() {
  static const OpDefinition def{{OpKind::kColumnSum, 1, infer_column_sum, nullptr}, lower_column_sum};
  return def;
}
const OpDefinition& sgd_update_op() {
  static const OpDefinition def{{OpKind::kSgdUpdate, kVariadic, infer_sgd_update, nullptr}, lower_sgd_update};
  return def;
}

} // namespace ipu::ir
