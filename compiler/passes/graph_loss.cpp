#include "compiler/passes/graph_loss.h"

#include <algorithm>

namespace ipu::passes {
namespace {

// What `roots` depend on: the values and the ops producing them, transitively.
struct Ancestry {
  std::vector<bool> values, ops;
};

Ancestry ancestry(const ir::Graph& graph, const std::vector<int>& roots) {
  Ancestry a{std::vector<bool>(graph.values().size(), false), std::vector<bool>(graph.ops().size(), false)};
  std::vector<int> pending = roots;
  while (!pending.empty()) {
    const int v = pending.back();
    pending.pop_back();
    if (a.values[static_cast<size_t>(v)]) continue;
    a.values[static_cast<size_t>(v)] = true;
    const int producer = graph.value(v).producer;
    if (producer < 0 || a.ops[static_cast<size_t>(producer)]) continue;
    a.ops[static_cast<size_t>(producer)] = true;
    for (int in : graph.op(producer).inputs)
      pending.push_back(in);
  }
  return a;
}

bool moves_data(const ir::Graph& graph, int value) {
  const int producer = graph.value(value).producer;
  return producer >= 0 && (graph.op(producer).kind == ir::OpKind::kReshape ||
                           graph.op(producer).kind == ir::OpKind::kStageCopy);
}

// `value`, or the first value of shape `shape` that a chain of Reshapes and copies between
// pipeline stages made it from; -1 if none.
int reshaped_from(const ir::Graph& graph, int value, const std::vector<int64_t>& shape) {
  while (graph.value(value).type.shape != shape) {
    if (!moves_data(graph, value)) return -1;
    value = graph.op(graph.value(value).producer).inputs[0];
  }
  return value;
}

// The value a chain of Reshapes and copies between pipeline stages starts from.
int source_of(const ir::Graph& graph, int value) {
  while (moves_data(graph, value))
    value = graph.op(graph.value(value).producer).inputs[0];
  return value;
}

std::string quoted_list(const ir::Graph& graph, const std::vector<int>& values) {
  std::string text;
  for (int v : values)
    text += (text.empty() ? "'" : ", '") + graph.value(v).name + "'";
  return text;
}

// A cross-entropy on class indices that SparseCrossEntropy computes.
struct CrossEntropy {
  int logits = -1;  // [N, C]
  int targets = -1; // [N], the loss node's target
  int scores =
      -1; // [N, C], the loss node's input: the logits, or a NegativeLogLikelihoodLoss's log-probabilities
};

// The NllLoss producing `loss` as a cross-entropy of logits; nullopt when another op produces it,
// Unsupported for an NllLoss that is not one (or not one ipucc trains on).
StatusOr<std::optional<CrossEntropy>> match_cross_entropy(const ir::Graph& graph, int loss) {
  // reduction 'none' reshapes the per-position losses to the target's shape.
  int producer = graph.value(loss).producer;
  while (producer >= 0 && graph.op(producer).kind == ir::OpKind::kReshape)
    producer = graph.value(graph.op(producer).inputs[0]).producer;
  if (producer < 0 || graph.op(producer).kind != ir::OpKind::kNllLoss) return std::optional<CrossEntropy>();
  const ir::Op& nll = graph.op(producer);
  const std::string node = "node '" + nll.name + "': training on this loss ";
  const ir::NllLossAttrs& attrs = nll.attrs<ir::NllLossAttrs>();
  if (attrs.reduction != format::LossReduction::kMean) {
    return unsupported(node +
                       "needs reduction 'mean' (fit and evaluate report the mean over the batch), got '" +
                       (attrs.reduction == format::LossReduction::kSum ? "sum" : "none") + "'");
  }
  if (nll.inputs.size() == 3) return unsupported(node + "takes no class weights");
  const std::vector<int64_t>& viewed = graph.value(nll.inputs[0]).type.shape; // [N, C, D]
  if (viewed.size() != 3 || viewed[2] != 1) {
    return unsupported(node + "needs scores [batch, classes] (no dimensions after the classes), got " +
                       graph.value(nll.inputs[0]).type.to_string() + " viewed as [N, C, D]");
  }
  const int64_t N = viewed[0], C = viewed[1];
  // An ignore_index outside [0, C) (torch exports -100) never matches a label: ipurun refuses data
  // whose labels leave [0, C). One inside would make the mean over a varying number of rows.
  if (attrs.ignore_index && *attrs.ignore_index >= 0 && *attrs.ignore_index < C) {
    return unsupported(node + "takes no ignore_index that is a class (" +
                       std::to_string(*attrs.ignore_index) + " of [0, " + std::to_string(C) + "))");
  }
  // SoftmaxCrossEntropyLoss's own log-softmax, or the LogSoftmax a NegativeLogLikelihoodLoss reads:
  // over the class axis of the [N, C, 1] view.
  const int softmax = graph.value(source_of(graph, nll.inputs[0])).producer;
  if (softmax < 0 || graph.op(softmax).kind != ir::OpKind::kAxisSoftmax ||
      graph.op(softmax).attrs<ir::SoftmaxAttrs>().kind != format::SoftmaxKind::kLogSoftmax ||
      graph.value(graph.op(softmax).inputs[0]).type.shape != viewed) {
    return unsupported(node + "needs log-probabilities from a LogSoftmax over the classes (the "
                              "cross-entropy of the scores it normalizes)");
  }
  CrossEntropy ce;
  ce.logits = reshaped_from(graph, graph.op(softmax).inputs[0], {N, C});
  ce.targets = source_of(graph, nll.inputs[1]);
  if (ce.logits < 0) return unsupported(node + "needs scores [batch, classes]");
  const int log_probabilities = reshaped_from(graph, nll.inputs[0], {N, C});
  ce.scores = log_probabilities >= 0 ? log_probabilities : ce.logits;
  if (graph.value(ce.targets).producer >= 0 || graph.value(ce.targets).role != ir::Role::kInput ||
      graph.value(ce.targets).type.shape != std::vector<int64_t>{N}) {
    return unsupported(node + "needs its target to be a graph input (the labels), not computed");
  }
  return std::optional<CrossEntropy>(ce);
}

// The cross-entropy as SparseCrossEntropy on the logits, which replaces the loss's own ops
// (`loss_ops`); their values stay unwritten.
Status bind_cross_entropy(ir::Graph& graph, const GraphLossModel& model, const std::string& loss_label,
                          const CrossEntropy& cross_entropy, const std::vector<int>& loss_ops,
                          GraphLoss& out) {
  if (cross_entropy.targets != out.labels) {
    return unsupported(loss_label + ": its target must be the labels input '" + graph.value(out.labels).name +
                       "'");
  }
  for (int op : loss_ops) {
    for (int v : graph.op(op).outputs)
      graph.value(v).producer = -1;
  }
  graph.remove_ops(loss_ops);
  LossConfig config;
  config.kind = LossKind::kSparseCategoricalCrossEntropy;
  config.from_logits = true;
  IPU_ASSIGN_OR_RETURN(out.values,
                       add_loss(graph, cross_entropy.logits, config,
                                model.metrics.value_or(default_metrics(config.kind)), out.labels));
  return Status();
}

// A loss the graph computes, trained as it is: `loss_ops` (what only the loss needs) become the
// loss phase on the last pipeline stage, and the labels input arrives there.
Status bind_computed_loss(ir::Graph& graph, const GraphLossModel& model, const std::string& loss_label,
                          const std::string& prediction_name, std::vector<int> loss_ops, GraphLoss& out) {
  if (model.metrics && !model.metrics->empty()) {
    return invalid_argument("--metrics: " + loss_label +
                            " is computed by the graph, which gives no scores and labels to measure");
  }
  const ir::TensorType& labels = graph.value(out.labels).type;
  const ir::TensorType& prediction = graph.value(out.prediction).type;
  // The host feeds float labels per sample, flattened: any shape with the prediction's batch first.
  if (labels.dtype != ir::DType::kFloat32 || labels.shape.empty() || prediction.shape.empty() ||
      labels.shape[0] != prediction.shape[0]) {
    return unsupported(loss_label + ": its labels input '" + graph.value(out.labels).name + "' is " +
                       labels.to_string() +
                       "; ipucc feeds float32 labels with the batch first, as the prediction '" +
                       prediction_name + "' " + prediction.to_string() + " has it");
  }
  // The labels arrive on the loss's pipeline stage, the last, as added labels do: the copies the
  // importer made of them between stages go, and every reader must be on that stage.
  const int loss_stage = graph.value(model.loss).stage;
  int last_stage = 0;
  for (const ir::Op& op : graph.ops())
    last_stage = std::max(last_stage, op.stage);
  std::vector<int> label_copies;
  for (int op : graph.consumers(out.labels)) {
    if (graph.op(op).kind == ir::OpKind::kStageCopy) label_copies.push_back(op);
  }
  for (int copy : label_copies) {
    const int copied = graph.op(copy).outputs[0];
    for (int reader : graph.consumers(copied)) {
      for (int& in : graph.op(reader).inputs)
        in = in == copied ? out.labels : in;
    }
    graph.value(copied).producer = -1;
  }
  for (int op : graph.consumers(out.labels)) {
    if (graph.op(op).kind == ir::OpKind::kStageCopy) continue; // removed below
    if (graph.op(op).stage != loss_stage || loss_stage != last_stage) {
      return unsupported(loss_label + ": its labels input '" + graph.value(out.labels).name +
                         "' is read on pipeline stage " + std::to_string(graph.op(op).stage) + " (node '" +
                         graph.op(op).name + "'); labels arrive on the last stage, " +
                         std::to_string(last_stage) + ", where the loss must be computed");
    }
  }
  std::erase_if(loss_ops, [&](int op) {
    return std::find(label_copies.begin(), label_copies.end(), op) != label_copies.end();
  });
  // Copies of forward values to the last stage stay forward ops, as the pipeline moves them.
  for (int op : loss_ops) {
    if (graph.op(op).kind == ir::OpKind::kStageCopy) continue;
    if (graph.op(op).stage != last_stage) {
      return unsupported(loss_label + ": node '" + graph.op(op).name + "' of the loss is on pipeline stage " +
                         std::to_string(graph.op(op).stage) + "; the loss is computed on the last stage, " +
                         std::to_string(last_stage));
    }
    graph.op(op).phase = ir::Phase::kLoss;
  }
  graph.value(out.labels).role = ir::Role::kLabel;
  graph.value(out.labels).stage = loss_stage;
  graph.remove_ops(label_copies);
  out.values.labels = out.labels;
  out.values.loss = model.loss;
  return Status();
}

} // namespace

StatusOr<GraphLoss> bind_graph_loss(ir::Graph& graph, const GraphLossModel& model) {
  const std::string loss_label = "the loss '" + model.loss_name + "'";
  IPU_ASSIGN_OR_RETURN(std::optional<CrossEntropy> cross_entropy, match_cross_entropy(graph, model.loss));
  const ir::TensorType& loss_type = graph.value(model.loss).type;
  if (loss_type.dtype != ir::DType::kFloat32 || loss_type.elements() != 1) {
    return invalid_argument(loss_label + " must be a float scalar, it is " + loss_type.to_string());
  }

  if (graph.value(model.loss).producer < 0) {
    return invalid_argument(loss_label + " is not computed from the weights: it has no gradient to train on");
  }
  GraphLoss out;
  if (model.other_outputs.size() > 1) {
    return unsupported(
        loss_label + ": training needs one output beside the loss, the prediction; the graph has " +
        std::to_string(model.other_outputs.size()) + " (" + quoted_list(graph, model.other_outputs) + ")");
  }
  if (!model.other_outputs.empty()) {
    out.prediction = model.other_outputs[0];
  } else if (cross_entropy) {
    out.prediction = cross_entropy->scores;
  } else {
    return invalid_argument(loss_label + ": the graph has no other output to predict; add the prediction "
                                         "as a graph output");
  }

  const std::string prediction_name =
      model.prediction_name.empty() ? graph.value(out.prediction).name : model.prediction_name;
  const Ancestry of_loss = ancestry(graph, {model.loss});
  const Ancestry of_prediction = ancestry(graph, {out.prediction});
  std::vector<int> label_inputs;
  for (int in : model.inputs) {
    if (of_loss.values[static_cast<size_t>(in)] && !of_prediction.values[static_cast<size_t>(in)])
      label_inputs.push_back(in);
  }
  if (label_inputs.empty()) {
    return invalid_argument(loss_label + " reads no graph input that the prediction '" + prediction_name +
                            "' does not: the labels are the input only the loss reads");
  }
  if (label_inputs.size() > 1) {
    return invalid_argument(loss_label + " reads graph inputs " + quoted_list(graph, label_inputs) +
                            " that the prediction '" + prediction_name +
                            "' does not: ipucc feeds one as the labels, so which is ambiguous");
  }
  out.labels = label_inputs[0];
  std::vector<int> loss_ops; // what only the loss needs
  for (size_t op = 0; op < graph.ops().size(); ++op) {
    if (of_loss.ops[op] && !of_prediction.ops[op]) loss_ops.push_back(static_cast<int>(op));
  }

  if (cross_entropy) {
    IPU_RETURN_IF_ERROR(bind_cross_entropy(graph, model, loss_label, *cross_entropy, loss_ops, out));
  } else {
    IPU_RETURN_IF_ERROR(
        bind_computed_loss(graph, model, loss_label, prediction_name, std::move(loss_ops), out));
  }
  return out;
}

} // namespace ipu::passes
