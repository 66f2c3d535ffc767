// ONNX converters for the losses: NegativeLogLikelihoodLoss is one NllLoss op over the input
// viewed as [N, C, D]; SoftmaxCrossEntropyLoss is a log-softmax along the class axis (an
// AxisSoftmax, whose output is the optional log_prob) followed by the same NllLoss.
#include <onnx/onnx_pb.h>

#include "compiler/frontend/onnx_tensor_helpers.h"

namespace ipu::frontend {
namespace {

using format::LossReduction;

StatusOr<LossReduction> read_reduction(const OnnxImportContext& ctx) {
  const onnx::AttributeProto* a = ctx.attribute("reduction");
  const std::string reduction = a ? a->s() : "mean";
  if (reduction == "none") return LossReduction::kNone;
  if (reduction == "sum") return LossReduction::kSum;
  if (reduction == "mean") return LossReduction::kMean;
  return invalid_argument("reduction '" + reduction + "' is not one of none, sum, mean");
}

// The class weights (input 2) as an IR value, or -1 without them. An initializer holding them
// becomes a weight like any other (so cached executables take its values from the model), but
// the loss gives it no gradient, so training leaves it as it is.
StatusOr<int> class_weights(OnnxImportContext& ctx, int64_t classes) {
  if (!ctx.has_input(2)) return -1;
  if (ctx.input_dtype(2) != "f4")
    return unsupported("weights of dtype '" + ctx.input_dtype(2) + "' (only float32)");
  IPU_ASSIGN_OR_RETURN(int w, ctx.input(2));
  if (ctx.shape(w) != std::vector<int64_t>{classes}) {
    return invalid_argument("weights " + shape_text(ctx.shape(w)) + " must have one value per class, [" +
                            std::to_string(classes) + "]");
  }
  return w;
}

// Adds the NllLoss of `log_prob` ([N, C, D], input 0's shape [N, C, d1..dk] viewed flat) against
// the targets (input 1, [N, d1..dk]) and binds output 0.
Status add_nll_loss(OnnxImportContext& ctx, int log_prob, const std::vector<int64_t>& in_shape) {
  if (!is_integer_dtype(ctx.input_dtype(1))) {
    return invalid_argument("target must hold integers (int32 or int64), it holds '" + ctx.input_dtype(1) +
                            "'");
  }
  IPU_ASSIGN_OR_RETURN(int target, ctx.input(1));
  std::vector<int64_t> target_shape = {in_shape[0]};
  target_shape.insert(target_shape.end(), in_shape.begin() + 2, in_shape.end());
  if (ctx.shape(target) != target_shape) {
    return invalid_argument("target " + shape_text(ctx.shape(target)) + " must be " +
                            shape_text(target_shape) + " for input " + shape_text(in_shape));
  }
  IPU_ASSIGN_OR_RETURN(LossReduction reduction, read_reduction(ctx));
  const int64_t N = in_shape[0], C = in_shape[1], D = product(in_shape, 2, in_shape.size());
  IPU_ASSIGN_OR_RETURN(int w, class_weights(ctx, C));
  IPU_ASSIGN_OR_RETURN(int t, ctx.reshape(target, {N, D}, "/target"));
  std::vector<int> inputs = {log_prob, t};
  if (w >= 0) inputs.push_back(w);
  ir::NllLossAttrs attrs;
  attrs.reduction = reduction;
  if (ctx.attribute("ignore_index")) attrs.ignore_index = ctx.int_attr("ignore_index", 0);
  IPU_ASSIGN_OR_RETURN(int loss, ctx.add_op(ir::OpKind::kNllLoss, inputs, attrs));
  if (reduction == LossReduction::kNone) {
    IPU_ASSIGN_OR_RETURN(loss, ctx.reshape(loss, target_shape, "/loss"));
  }
  ctx.set_output(0, loss);
  return Status();
}

// The input's shape if it is a float [N, C, d1..dk] with no empty dimension.
StatusOr<std::vector<int64_t>> loss_input_shape(OnnxImportContext& ctx, int x) {
  if (ctx.input_dtype(0) != "f4")
    return unsupported("input of dtype '" + ctx.input_dtype(0) + "' (only float32)");
  const std::vector<int64_t>& shape = ctx.shape(x);
  if (shape.size() < 2)
    return invalid_argument("input " + shape_text(shape) + " must be [N, C, d1, ..., dk]");
  IPU_RETURN_IF_ERROR(check_not_empty(shape, "input"));
  return shape;
}

Status convert_nll_loss(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, loss_input_shape(ctx, x));
  IPU_ASSIGN_OR_RETURN(int x3,
                       ctx.reshape(x, {shape[0], shape[1], product(shape, 2, shape.size())}, "/view"));
  return add_nll_loss(ctx, x3, shape);
}

Status convert_softmax_cross_entropy(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, loss_input_shape(ctx, x));
  IPU_ASSIGN_OR_RETURN(int x3,
                       ctx.reshape(x, {shape[0], shape[1], product(shape, 2, shape.size())}, "/view"));
  ir::SoftmaxAttrs attrs;
  attrs.kind = format::SoftmaxKind::kLogSoftmax;
  IPU_ASSIGN_OR_RETURN(int log_prob, ctx.add_op(ir::OpKind::kAxisSoftmax, {x3}, attrs, "/log_prob"));
  IPU_RETURN_IF_ERROR(add_nll_loss(ctx, log_prob, shape));
  if (ctx.node().output_size() > 1 && !ctx.node().output(1).empty()) {
    IPU_ASSIGN_OR_RETURN(int log_prob_out, ctx.reshape(log_prob, shape, "/log_prob_shape"));
    ctx.set_output(1, log_prob_out);
  }
  return Status();
}

} // namespace

std::vector<OnnxOpDef> loss_onnx_ops() {
  return {
      {"NegativeLogLikelihoodLoss", {12, 13, 22}, {"ignore_index", "reduction"}, convert_nll_loss},
      {"SoftmaxCrossEntropyLoss", {12, 13}, {"ignore_index", "reduction"}, convert_softmax_cross_entropy},
  };
}

} // namespace ipu::frontend
