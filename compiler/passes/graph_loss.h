// A model whose graph computes its own loss (an ONNX graph ending in SoftmaxCrossEntropyLoss or
// NegativeLogLikelihoodLoss, or a scalar output named by --loss-output) trains on that loss:
// this pass finds the graph input that feeds the loss's target (the labels), the ops that only
// the loss needs (evaluate runs them, predict does not) and what the model predicts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/passes/training.h"

namespace ipu::passes {

struct GraphLossModel {
  int loss = -1;                  // the graph output that is the loss
  std::string loss_name;          // its name, for messages
  std::vector<int> inputs;        // the graph's inputs
  std::vector<int> other_outputs; // the graph's outputs but the loss
  std::string prediction_name;    // for messages: the other output's, else the loss node's scores'
  std::optional<std::vector<MetricConfig>> metrics; // asked for; nullopt: the loss's defaults
};

struct GraphLoss {
  LossValues values;
  // What predict outputs: the one other output, else a cross-entropy's input (its scores).
  int prediction = -1;
  int labels = -1; // the graph input that became the labels
};

// The labels are the one graph input the loss depends on and the prediction does not; the ops
// that only the loss depends on become the loss phase. A cross-entropy on class indices (an NllLoss
// of reduction mean, without class weights or an ignore_index in [0, C), over the log-softmax of [N, C]
// scores: SoftmaxCrossEntropyLoss, or NegativeLogLikelihoodLoss of a LogSoftmax) is replaced by
// SparseCrossEntropy on the scores, as `--loss sparse_categorical_crossentropy` trains, with the
// accuracy metric; any other scalar is trained as the graph computes it, its labels float32 of
// any shape with the prediction's batch first, without metrics.
// Errors: InvalidArgument (the loss is not a float scalar, no input or several inputs could be the
// labels, no other output to predict, metrics a graph's own loss cannot give), Unsupported (a
// cross-entropy ipucc does not train: sum or none reduction, class weights, an ignore_index that is a class,
// trailing dimensions, an NLL not over a LogSoftmax; labels not float32 with the batch first).
StatusOr<GraphLoss> bind_graph_loss(ir::Graph& graph, const GraphLossModel& model);

} // namespace ipu::passes
