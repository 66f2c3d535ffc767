// NllLoss (ONNX NegativeLogLikelihoodLoss; SoftmaxCrossEntropyLoss is AxisSoftmax's log-softmax
// followed by it) and its gradient with respect to the input.
//
// NllLoss(X [N,C,D], T [N,D], W [C] optional) with NllLossAttrs: a format::LossReduction and the
// optional ignore_index. The ONNX converter views any [N,C,d1..dk] input as [N,C,D]. The
// output is the per-position loss [N,D] (kNone) or a scalar. Targets hold class indices as
// floats; the kernels define what an index outside [0, C) gives (runtime/kernels/loss_kernels.cpp).
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::DType;
using ir::NllLossAttrs;
using ir::NllLossGradAttrs;
using ir::Op;
using ir::OpKind;
using ir::TensorType;

namespace {

using format::LossReduction;
using lowering::LowerContext;

// Both ops take their optional class weights as input 2.
bool has_weights(const Op& op) {
  return op.inputs.size() == 3;
}

Status check_weights(const ir::Graph& g, const Op& op, size_t index, int64_t classes) {
  if (op.inputs.size() <= index) return Status();
  const TensorType& w = g.value(op.inputs[index]).type;
  if (w.dtype != DType::kFloat32 || w.shape != std::vector<int64_t>{classes}) {
    return invalid_argument("expects f32 class weights [" + std::to_string(classes) + "], got " +
                            w.to_string());
  }
  return Status();
}

// The loss's attributes, which NllLossGrad carries along with the shape of dX.
const NllLossAttrs& loss_attrs(const Op& op) {
  return op.kind == OpKind::kNllLossGrad ? op.attrs<NllLossGradAttrs>().loss : op.attrs<NllLossAttrs>();
}

Status check_reduction(const Op& op) {
  const auto reduction = static_cast<int64_t>(loss_attrs(op).reduction);
  if (reduction < 0 || reduction >= format::kLossReductionCount) return invalid_argument("unknown reduction");
  return Status();
}

std::vector<int64_t> loss_shape(const Op& op, int64_t N, int64_t D) {
  if (loss_attrs(op).reduction == LossReduction::kNone) return {N, D};
  return {};
}

Status infer_nll_loss(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  if (op.inputs.size() != 2 && op.inputs.size() != 3)
    return invalid_argument("takes input, target and optional weights");
  IPU_RETURN_IF_ERROR(check_reduction(op));
  const TensorType& x = g.value(op.inputs[0]).type;
  const TensorType& t = g.value(op.inputs[1]).type;
  if (x.dtype != DType::kFloat32 || x.shape.size() != 3 || x.elements() == 0) {
    return invalid_argument("expects a non-empty f32 input [N, C, D], got " + x.to_string());
  }
  const int64_t N = x.shape[0], C = x.shape[1], D = x.shape[2];
  if (t.shape != std::vector<int64_t>{N, D}) {
    return invalid_argument("expects targets [" + std::to_string(N) + "," + std::to_string(D) +
                            "] for input " + x.to_string() + ", got " + t.to_string());
  }
  IPU_RETURN_IF_ERROR(check_weights(g, op, 2, C));
  out.push_back({DType::kFloat32, loss_shape(op, N, D)});
  return Status();
}

// NllLossGrad(T [N,D], dY, W [C] optional) → dX of shape dx_shape = [N, C, D].
Status infer_nll_loss_grad(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  if (op.inputs.size() != 2 && op.inputs.size() != 3)
    return invalid_argument("takes target, dY and optional weights");
  IPU_RETURN_IF_ERROR(check_reduction(op));
  const std::vector<int64_t>& dx = op.attrs<NllLossGradAttrs>().dx_shape;
  if (dx.size() != 3) return invalid_argument("needs the input shape [N, C, D]");
  const int64_t N = dx[0], C = dx[1], D = dx[2];
  if (g.value(op.inputs[0]).type.shape != std::vector<int64_t>{N, D}) {
    return invalid_argument("targets " + g.value(op.inputs[0]).type.to_string() + " do not match input " +
                            TensorType{DType::kFloat32, dx}.to_string());
  }
  if (g.value(op.inputs[1]).type.shape != loss_shape(op, N, D)) {
    return invalid_argument("dY " + g.value(op.inputs[1]).type.to_string() + " does not match the loss");
  }
  IPU_RETURN_IF_ERROR(check_weights(g, op, 2, C));
  out.push_back({DType::kFloat32, dx});
  return Status();
}

// Only the input gets a gradient: the targets are indices, and the class weights are part of
// the loss's definition, so training leaves them as they are even when they are an initializer.
Status grad_nll_loss(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0 || !ctx.needs_gradient(op.inputs[0])) return Status();
  NllLossGradAttrs attrs;
  attrs.loss = op.attrs<NllLossAttrs>();
  attrs.dx_shape = ctx.graph().value(op.inputs[0]).type.shape;
  std::vector<int> inputs = {op.inputs[1], dy};
  if (has_weights(op)) inputs.push_back(op.inputs[2]);
  IPU_ASSIGN_OR_RETURN(int dx, grad_op(ctx, op, OpKind::kNllLossGrad, inputs, attrs, "/grad"));
  return ctx.add_gradient(op.inputs[0], dx);
}

// The params both codelets start with (format::params::Loss).
std::vector<int64_t> loss_params(const Op& op, int64_t N, int64_t C, int64_t D, bool weights) {
  using L = format::params::Loss;
  const NllLossAttrs& loss = loss_attrs(op);
  return format::make_params<L>({{L::kN, N},
                                 {L::kC, C},
                                 {L::kD, D},
                                 {L::kReduction, static_cast<int64_t>(loss.reduction)},
                                 {L::kHasIgnore, loss.ignore_index.has_value()},
                                 {L::kIgnoreIndex, loss.ignore_index.value_or(0)},
                                 {L::kHasWeights, weights}});
}

// kNone splits the positions over tiles; a reduction is one vertex that sees them all.
Status lower_nll_loss(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t>& s = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t N = s[0], C = s[1], D = s[2], positions = N * D;
  const bool weights = has_weights(op);
  const uint32_t x = ctx.tensor(op.inputs[0]), t = ctx.tensor(op.inputs[1]), y = ctx.tensor(op.outputs[0]);
  const double per_position = 4.0;
  auto emit = [&](uint32_t tile, int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kNllLoss;
    v.operands = {x, t, y};
    using P = format::params::NllLoss;
    v.params =
        format::make_params<P>(loss_params(op, N, C, D, weights), {{P::kBegin, begin}, {P::kEnd, end}});
    v.compute_cycles = per_position * static_cast<double>(end - begin);
    // Positions [begin, end) read the input rows n that hold them.
    const int64_t row = C * D, first = begin / D, last = (end + D - 1) / D;
    v.reads = {lowering::flat_region(x, first * row, last * row), lowering::flat_region(t, begin, end)};
    if (weights) {
      const uint32_t w = ctx.tensor(op.inputs[2]);
      v.operands.push_back(w);
      v.reads.push_back(lowering::flat_region(w, 0, C));
    }
    const bool none = op.attrs<NllLossAttrs>().reduction == LossReduction::kNone;
    v.writes = {none ? lowering::flat_region(y, begin, end) : lowering::flat_region(y, 0, 1)};
    ctx.emit(tile, std::move(v));
  };
  if (op.attrs<NllLossAttrs>().reduction == LossReduction::kNone) {
    lowering::lower_split(ctx, positions, per_position, 4.0 * static_cast<double>(C + 2), emit);
  } else {
    emit(ctx.take_tiles(1)[0], 0, positions);
  }
  return Status();
}

Status lower_nll_loss_grad(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t>& s = op.attrs<NllLossGradAttrs>().dx_shape;
  const int64_t N = s[0], C = s[1], D = s[2], row = C * D;
  const bool weights = has_weights(op);
  const LossReduction reduction = op.attrs<NllLossGradAttrs>().loss.reduction;
  const uint32_t t = ctx.tensor(op.inputs[0]), dy = ctx.tensor(op.inputs[1]), dx = ctx.tensor(op.outputs[0]);
  const double per_row =
      static_cast<double>(row) / ctx.target().cycles.vector_flops_per_cycle + 4.0 * static_cast<double>(D);
  lowering::lower_split(
      ctx, N, per_row, 4.0 * static_cast<double>(row + 2 * D), [&](uint32_t tile, int64_t rb, int64_t re) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kNllLossGrad;
        v.operands = {t, dy, dx};
        using P = format::params::NllLossGrad;
        v.params =
            format::make_params<P>(loss_params(op, N, C, D, weights), {{P::kRowBegin, rb}, {P::kRowEnd, re}});
        v.compute_cycles = per_row * static_cast<double>(re - rb);
        // kMean divides by the weight of every position, so it reads all the targets.
        const bool mean = reduction == LossReduction::kMean, none = reduction == LossReduction::kNone;
        v.reads = {mean ? lowering::flat_region(t, 0, N * D) : lowering::flat_region(t, rb * D, re * D),
                   none ? lowering::flat_region(dy, rb * D, re * D) : lowering::flat_region(dy, 0, 1)};
        if (weights) {
          const uint32_t w = ctx.tensor(op.inputs[2]);
          v.operands.push_back(w);
          v.reads.push_back(lowering::flat_region(w, 0, C));
        }
        v.writes = {lowering::flat_region(dx, rb * row, re * row)};
        ctx.emit(tile, std::move(v));
      });
  return Status();
}

} // namespace

const OpDefinition& nll_loss_op() {
  static const OpDefinition def{{OpKind::kNllLoss, ir::kVariadic, infer_nll_loss, grad_nll_loss},
                                lower_nll_loss};
  return def;
}
const OpDefinition& nll_loss_grad_op() {
  static const OpDefinition def{{OpKind::kNllLossGrad, ir::kVariadic, infer_nll_loss_grad, nullptr},
                                lower_nll_loss_grad};
  return def;
}

} // namespace ipu::ops
