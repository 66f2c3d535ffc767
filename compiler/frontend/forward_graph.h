// What every frontend produces: the forward IR graph of one micro-batch and its interface.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace ipu::frontend {

struct ForwardGraph {
  ir::Graph graph;
  int features = -1;  // the model's input, fed by the "features" infeed
  int scores = -1;    // the model's output
  int num_stages = 1;
  std::string name;   // the model's name, recorded in the executable
  std::string input_name;   // the model's names of its input and output
  std::string output_name;
};

}  // namespace ipu::frontend
