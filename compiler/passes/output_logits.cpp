#include "compiler/passes/output_logits.h"

namespace ipu::passes {
namespace {

// The value `value` reshapes, through any chain of reshapes (a reshape moves no data).
int before_reshapes(const ir::Graph& graph, int value) {
  for (int op = graph.value(value).producer; op >= 0 && graph.op(op).kind == ir::OpKind::kReshape;
       op = graph.value(value).producer)
    value = graph.op(op).inputs[0];
  return value;
}

} // namespace

std::optional<SquashedOutput> squashed_output(const ir::Graph& graph, int output, LossKind kind) {
  const int squashed = before_reshapes(graph, output);
  const int producer = graph.value(squashed).producer;
  if (producer < 0) return std::nullopt;
  const ir::Op& op = graph.op(producer);
  const bool categorical =
      kind == LossKind::kSparseCategoricalCrossEntropy || kind == LossKind::kCategoricalCrossEntropy;
  SquashedOutput out;
  out.op_name = op.name;
  if (categorical && op.kind == ir::OpKind::kSoftmax) { // over the rows of [batch, classes]
    out.op = "Softmax";
    out.logits = op.inputs[0];
  } else if (categorical && op.kind == ir::OpKind::kAxisSoftmax &&
             op.attrs<ir::SoftmaxAttrs>().kind == format::SoftmaxKind::kSoftmax &&
             graph.value(op.inputs[0]).type.shape.back() == 1) { // [outer, classes, 1]: the last axis
    out.op = "Softmax";
    out.logits = before_reshapes(graph, op.inputs[0]);
  } else if (kind == LossKind::kBinaryCrossEntropy && op.kind == ir::OpKind::kSigmoid) {
    out.op = "Sigmoid";
    out.logits = op.inputs[0];
  } else {
    return std::nullopt;
  }
  if (graph.value(out.logits).type.shape != graph.value(output).type.shape) return std::nullopt;
  return out;
}

} // namespace ipu::passes
