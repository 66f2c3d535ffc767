// SparseCrossEntropy (mean over the batch), its gradient, and the CountCorrect metric.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::Op;
using ir::OpKind;
using ir::TensorType;

namespace {

using lowering::LowerContext;

Status check_scores_labels(const ir::Graph& g, const Op& op) {
  const TensorType& s = g.value(op.inputs[0]).type;
  const TensorType& l = g.value(op.inputs[1]).type;
  if (s.shape.size() != 2 || s.dtype != ir::DType::kFloat32) {
    return invalid_argument("expects float32 scores [batch, classes], got " + s.to_string());
  }
  if (l.dtype != ir::DType::kInt32 || l.shape != std::vector<int64_t>{s.shape[0]}) {
    return invalid_argument("expects int32 labels [" + std::to_string(s.shape[0]) + "], got " +
                            l.to_string());
  }
  return Status();
}

Status infer_sparse_loss(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  IPU_RETURN_IF_ERROR(check_scores_labels(g, op));
  out.push_back({ir::DType::kFloat32, {1}});
  return Status();
}

Status infer_scores_grad(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  IPU_RETURN_IF_ERROR(check_scores_labels(g, op));
  out.push_back(g.value(op.inputs[0]).type);
  return Status();
}

// The loss is the root of autodiff, so d loss / d loss = 1 and the gradient op needs no seed.
Status grad_sparse_cross_entropy(ir::GradContext& ctx, const Op& op) {
  if (!ctx.needs_gradient(op.inputs[0])) return Status();
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kSparseCrossEntropyGrad, op.name + "/grad",
                                                  {op.inputs[0], op.inputs[1]}, op.attributes,
                                                  ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(op.inputs[0], ctx.graph().op(id).outputs[0]);
}

// Whole-batch reductions to a scalar are tiny: one vertex, with the params make(M, C) gives.
template <typename Make>
Status lower_scalar(LowerContext& ctx, const Op& op, format::Codelet codelet, double cycles_per_element,
                    Make make) {
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], C = shape[1];
  const uint32_t s = ctx.tensor(op.inputs[0]), l = ctx.tensor(op.inputs[1]), y = ctx.tensor(op.outputs[0]);
  lowering::VertexSpec v;
  v.codelet = codelet;
  v.operands = {s, l, y};
  v.params = make(M, C);
  v.compute_cycles = static_cast<double>(M * C) * cycles_per_element;
  v.reads = {lowering::flat_region(s, 0, M * C), lowering::flat_region(l, 0, M)};
  v.writes = {lowering::flat_region(y, 0, 1)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

Status lower_sparse_cross_entropy(LowerContext& ctx, const Op& op) {
  using P = format::params::SparseCrossEntropy;
  const bool from_logits = op.attrs<ir::CrossEntropyAttrs>().from_logits;
  // A softmax per row, then the label's log: the log is once per row, lost in the softmax.
  const double per_element = softmax_cycles_per_element(ctx.target().cycles);
  return lower_scalar(ctx, op, format::Codelet::kSparseCrossEntropy, per_element, [&](int64_t M, int64_t C) {
    return format::make_params<P>({{P::kM, M}, {P::kC, C}, {P::kFromLogits, from_logits}});
  });
}

Status lower_count_correct(LowerContext& ctx, const Op& op) {
  using P = format::params::CountCorrect;
  // An argmax: one compare-and-select per element.
  const double per_element = 1.0 / ctx.target().cycles.vector_flops_per_cycle;
  return lower_scalar(ctx, op, format::Codelet::kCountCorrect, per_element, [](int64_t M, int64_t C) {
    return format::make_params<P>({{P::kM, M}, {P::kC, C}});
  });
}

Status lower_sparse_cross_entropy_grad(LowerContext& ctx, const Op& op) {
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], C = shape[1];
  const bool from_logits = op.attrs<ir::CrossEntropyAttrs>().from_logits;
  const uint32_t s = ctx.tensor(op.inputs[0]), l = ctx.tensor(op.inputs[1]), ds = ctx.tensor(op.outputs[0]);
  // The softmax again, minus the one-hot label.
  const double per_row = static_cast<double>(C) * (softmax_cycles_per_element(ctx.target().cycles) +
                                                   1.0 / ctx.target().cycles.vector_flops_per_cycle);
  lowering::lower_split(
      ctx, M, per_row, 4.0 * static_cast<double>(C + 1), [&](uint32_t tile, int64_t rb, int64_t re) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kSparseCrossEntropyGrad;
        v.operands = {s, l, ds};
        using P = format::params::SparseCrossEntropyGrad;
        v.params = format::make_params<P>(
            {{P::kM, M}, {P::kC, C}, {P::kFromLogits, from_logits}, {P::kRowBegin, rb}, {P::kRowEnd, re}});
        v.compute_cycles = per_row * static_cast<double>(re - rb);
        v.reads = {lowering::flat_region(s, rb * C, re * C), lowering::flat_region(l, rb, re)};
        v.writes = {lowering::flat_region(ds, rb * C, re * C)};
        ctx.emit(tile, std::move(v));
      });
  return Status();
}

} // namespace

const OpDefinition& sparse_cross_entropy_op() {
  static const OpDefinition def{
      {OpKind::kSparseCrossEntropy, 2, infer_sparse_loss, grad_sparse_cross_entropy},
      lower_sparse_cross_entropy};
  return def;
}
const OpDefinition& sparse_cross_entropy_grad_op() {
  static const OpDefinition def{{OpKind::kSparseCrossEntropyGrad, 2, infer_scores_grad, nullptr},
                                lower_sparse_cross_entropy_grad};
  return def;
}
const OpDefinition& count_correct_op() {
  static const OpDefinition def{{OpKind::kCountCorrect, 2, infer_sparse_loss, nullptr}, lower_count_correct};
  return def;
}

} // namespace ipu::ops
