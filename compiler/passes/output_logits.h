// The logits behind a model output that already squashes them. Keras's cross-entropies take a
// probability output's logits when a Softmax (categorical) or Sigmoid (binary) op computed it
// (tf.keras.backend.sparse_categorical_crossentropy and its siblings read `output.op.inputs[0]`
// and set from_logits), which gives the same loss, more stably. An ONNX model trained with a
// Keras loss (always from logits: ONNX has no from_logits) needs the same rule, or its loss would
// squash the probabilities a second time (compiler/driver/compile.cpp applies it and says so).
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/passes/training.h"

namespace ipu::passes {

struct SquashedOutput {
  int logits = -1;     // the value the squash reads, shaped as the output
  std::string op;      // "Softmax" or "Sigmoid"
  std::string op_name; // the squashing op's name in the graph
};

// For a loss of `kind` on `output`: the squash that computed it and the logits it read, when
// the loss is a cross-entropy of the same kind (Softmax over the last axis of [batch, classes]
// for the categorical cross-entropies, Sigmoid for binary cross-entropy), looking through
// reshapes; nullopt otherwise.
std::optional<SquashedOutput> squashed_output(const ir::Graph& graph, int output, LossKind kind);

} // namespace ipu::passes
