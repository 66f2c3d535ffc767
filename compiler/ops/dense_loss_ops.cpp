// DenseLoss (a Keras loss on float labels, mean over the batch), its gradient, DenseCorrect
// (the accuracy count of the cross-entropies) and MetricSum (top-k accuracy, MSE, MAE). The kernels are
// runtime/kernels/dense_loss_kernels.cpp.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::DenseLossAttrs;
using ir::DType;
using ir::Graph;
using ir::Op;
using ir::OpKind;
using ir::TensorType;

namespace {

using format::LossKind;
using lowering::LowerContext;

Status check_predictions_labels(const Graph& g, const Op& op) {
  const TensorType& s = g.value(op.inputs[0]).type;
  const TensorType& y = g.value(op.inputs[1]).type;
  if (s.shape.size() != 2 || s.dtype != DType::kFloat32) {
    return invalid_argument("expects float32 predictions [batch, outputs], got " + s.to_string());
  }
  if (y.dtype != DType::kFloat32 || y.shape != s.shape) {
    return invalid_argument("expects float32 labels " + s.to_string() + ", got " + y.to_string());
  }
  return Status();
}

// Top-k reads class indices [batch]; the errors float labels shaped like the predictions.
Status infer_metric(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& s = g.value(op.inputs[0]).type;
  const TensorType& y = g.value(op.inputs[1]).type;
  if (s.shape.size() != 2 || s.dtype != DType::kFloat32) {
    return invalid_argument("expects float32 predictions [batch, outputs], got " + s.to_string());
  }
  if (op.attrs<ir::MetricAttrs>().kind == format::MetricKind::kSparseTopK) {
    if (y.dtype != DType::kInt32 || y.shape != std::vector<int64_t>{s.shape[0]})
      return invalid_argument("expects int32 class indices [" + std::to_string(s.shape[0]) + "], got " +
                              y.to_string());
  } else if (y.dtype != DType::kFloat32 || y.shape != s.shape) {
    return invalid_argument("expects float32 labels " + s.to_string() + ", got " + y.to_string());
  }
  out.push_back({DType::kFloat32, {1}});
  return Status();
}

Status infer_dense_loss(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  IPU_RETURN_IF_ERROR(check_predictions_labels(g, op));
  out.push_back({DType::kFloat32, {1}});
  return Status();
}

Status infer_predictions_grad(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  IPU_RETURN_IF_ERROR(check_predictions_labels(g, op));
  out.push_back(g.value(op.inputs[0]).type);
  return Status();
}

// The loss is the root of autodiff, so d loss / d loss = 1 and the gradient op needs no seed.
Status grad_dense_loss(ir::GradContext& ctx, const Op& op) {
  if (!ctx.needs_gradient(op.inputs[0])) return Status();
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kDenseLossGrad, op.name + "/grad",
                                                  {op.inputs[0], op.inputs[1]}, op.attributes,
                                                  ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(op.inputs[0], ctx.graph().op(id).outputs[0]);
}

// Cycles per element of the loss (`gradient` false) or its gradient, from the functions each
// applies per element (popops' per-function costs) plus its vector operations.
double loss_cycles_per_element(const target::CycleModel& model, const DenseLossAttrs& attrs, bool gradient) {
  const double op = 1.0 / model.vector_flops_per_cycle;
  const double exp_cycles = unary_cycles_per_element(model, format::UnaryKind::kExp, 0.0);
  const double log_cycles = unary_cycles_per_element(model, format::UnaryKind::kLog, 0.0);
  switch (attrs.kind) {
  case LossKind::kCategoricalCrossEntropy:
    // Logits: a softmax per row, then a multiply-add (loss) or a multiply-subtract (gradient).
    // Probabilities: the row sum and a division, then a clipped log (loss) or a division (gradient).
    if (attrs.from_logits) return softmax_cycles_per_element(model) + op;
    return gradient ? 5.0 * op : log_cycles + 5.0 * op;
  case LossKind::kBinaryCrossEntropy:
    // Logits: exp and log1p (loss) or the sigmoid's exp and division (gradient).
    if (attrs.from_logits) return gradient ? exp_cycles + 3.0 * op : exp_cycles + log_cycles + 4.0 * op;
    return gradient ? 6.0 * op : 2.0 * log_cycles + 6.0 * op;
  case LossKind::kMeanSquaredError:
  case LossKind::kMeanAbsoluteError:
    return 2.0 * op; // a subtraction and a multiply-add (or absolute value, or sign)
  case LossKind::kHuber:
    return 5.0 * op; // subtract, absolute value, compare, two multiply-adds and a select
  }
  return op;
}

// Whole-batch reductions to a scalar are tiny: one vertex.
Status lower_reduction(LowerContext& ctx, const Op& op, format::Codelet codelet, std::vector<int64_t> params,
                       std::vector<float> fparams, double cycles_per_element) {
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], C = shape[1];
  const uint32_t s = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.inputs[1]), out = ctx.tensor(op.outputs[0]);
  lowering::VertexSpec v;
  v.codelet = codelet;
  v.operands = {s, y, out};
  v.params = std::move(params);
  v.fparams = std::move(fparams);
  v.compute_cycles = static_cast<double>(M * C) * cycles_per_element;
  v.reads = {lowering::flat_region(s, 0, M * C), lowering::flat_region(y, 0, M * C)};
  v.writes = {lowering::flat_region(out, 0, 1)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

Status lower_dense_loss(LowerContext& ctx, const Op& op) {
  using P = format::params::DenseLoss;
  using F = format::fparams::DenseLoss;
  const auto& attrs = op.attrs<DenseLossAttrs>();
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  return lower_reduction(ctx, op, format::Codelet::kDenseLoss,
                         format::make_params<P>({{P::kM, shape[0]},
                                                 {P::kC, shape[1]},
                                                 {P::kKind, static_cast<int64_t>(attrs.kind)},
                                                 {P::kFromLogits, attrs.from_logits}}),
                         format::make_fparams<F>({{F::kDelta, attrs.delta}}),
                         loss_cycles_per_element(ctx.target().cycles, attrs, false));
}

Status lower_dense_correct(LowerContext& ctx, const Op& op) {
  using P = format::params::DenseCorrect;
  const auto& attrs = op.attrs<DenseLossAttrs>();
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  // An argmax of both rows, or a threshold and a compare per element.
  const double per_element = 2.0 / ctx.target().cycles.vector_flops_per_cycle;
  return lower_reduction(ctx, op, format::Codelet::kDenseCorrect,
                         format::make_params<P>({{P::kM, shape[0]},
                                                 {P::kC, shape[1]},
                                                 {P::kKind, static_cast<int64_t>(attrs.kind)},
                                                 {P::kFromLogits, attrs.from_logits}}),
                         {}, per_element);
}

Status lower_metric_sum(LowerContext& ctx, const Op& op) {
  using P = format::params::MetricSum;
  const auto& attrs = op.attrs<ir::MetricAttrs>();
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], C = shape[1];
  // Top-k: a compare and a count per element; the errors: a subtraction and a multiply-add.
  const double per_element = 2.0 / ctx.target().cycles.vector_flops_per_cycle;
  const uint32_t s = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.inputs[1]), out = ctx.tensor(op.outputs[0]);
  const bool top_k = attrs.kind == format::MetricKind::kSparseTopK;
  lowering::VertexSpec v;
  v.codelet = format::Codelet::kMetricSum;
  v.operands = {s, y, out};
  v.params = format::make_params<P>(
      {{P::kM, M}, {P::kC, C}, {P::kKind, static_cast<int64_t>(attrs.kind)}, {P::kK, attrs.k}});
  v.compute_cycles = static_cast<double>(M * C) * per_element;
  v.reads = {lowering::flat_region(s, 0, M * C), lowering::flat_region(y, 0, top_k ? M : M * C)};
  v.writes = {lowering::flat_region(out, 0, 1)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

Status lower_dense_loss_grad(LowerContext& ctx, const Op& op) {
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], C = shape[1];
  const auto& attrs = op.attrs<DenseLossAttrs>();
  const uint32_t s = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.inputs[1]), ds = ctx.tensor(op.outputs[0]);
  const double per_row = static_cast<double>(C) * loss_cycles_per_element(ctx.target().cycles, attrs, true);
  // Each row reads its predictions and labels and writes its gradient.
  lowering::lower_split(
      ctx, M, per_row, 12.0 * static_cast<double>(C), [&](uint32_t tile, int64_t rb, int64_t re) {
        using P = format::params::DenseLossGrad;
        using F = format::fparams::DenseLossGrad;
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kDenseLossGrad;
        v.operands = {s, y, ds};
        v.params = format::make_params<P>({{P::kM, M},
                                           {P::kC, C},
                                           {P::kKind, static_cast<int64_t>(attrs.kind)},
                                           {P::kFromLogits, attrs.from_logits},
                                           {P::kRowBegin, rb},
                                           {P::kRowEnd, re}});
        v.fparams = format::make_fparams<F>({{F::kDelta, attrs.delta}});
        v.compute_cycles = per_row * static_cast<double>(re - rb);
        v.reads = {lowering::flat_region(s, rb * C, re * C), lowering::flat_region(y, rb * C, re * C)};
        v.writes = {lowering::flat_region(ds, rb * C, re * C)};
        ctx.emit(tile, std::move(v));
      });
  return Status();
}

} // namespace

const OpDefinition& dense_loss_op() {
  static const OpDefinition def{{OpKind::kDenseLoss, 2, infer_dense_loss, grad_dense_loss}, lower_dense_loss};
  return def;
}
const OpDefinition& dense_loss_grad_op() {
  static const OpDefinition def{{OpKind::kDenseLossGrad, 2, infer_predictions_grad, nullptr},
                                lower_dense_loss_grad};
  return def;
}
const OpDefinition& metric_sum_op() {
  static const OpDefinition def{{OpKind::kMetricSum, 2, infer_metric, nullptr}, lower_metric_sum};
  return def;
}
const OpDefinition& dense_correct_op() {
  static const OpDefinition def{{OpKind::kDenseCorrect, 2, infer_dense_loss, nullptr}, lower_dense_correct};
  return def;
}

} // namespace ipu::ops
