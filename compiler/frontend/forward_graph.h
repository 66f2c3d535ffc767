// What every frontend produces: the forward IR graph of one micro-batch and its interface.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::frontend {

// The highest pipeline stage a model may name, in either frontend: far more stages than any
// machine has IPUs, and small enough that no size computed from a stage count can overflow.
constexpr int kMaxStage = 1023;

// A model input or output: its IR value and what the user sees (format::ModelIo).
struct ModelIo {
  int value = -1;
  std::string name;
  std::string dtype = "f4"; // the host dtype (npy code); every device value is float32
  bool batched = true;      // axis 0 is the micro-batch
};

struct ForwardGraph {
  ir::Graph graph;
  std::vector<ModelIo> inputs;  // in the model's order; training feeds inputs[0]
  std::vector<ModelIo> outputs; // in the model's order; the loss reads outputs[0]
  int num_stages = 1;
  std::string name;        // the model's name, recorded in the executable
  std::string source_onnx; // ONNX models: the ModelProto without its weights' data
  // ONNX models: the nodes computed at compile time (every output known from constants alone;
  // Constant nodes not counted), and why folding was left undone, if it was.
  int folded_nodes = 0;
  std::string folding_note;

  int features() const { return inputs.at(0).value; }
  int scores() const { return outputs.at(0).value; }
};

} // namespace ipu::frontend
