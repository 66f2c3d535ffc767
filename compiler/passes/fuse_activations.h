// Folds a Relu into the Conv that feeds it. The convolution's vertices then clamp their output
// block while it is still in cache, and a step saves the Relu's compute set and its pass over
// the activation.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Fuses every Relu whose input is a Conv output read by nothing else, in the same phase and
// stage, and not one of `interface_values` (the graph's inputs and outputs, which the host reads
// or writes). The Conv then writes the Relu's output and carries attrs.fused_relu; the Relu op
// is removed and the Conv's own output value is left unused. Gradients read the Relu's output
// (ActivationGrad), never the Conv's, so this runs after autodiff as well as for inference.
// Returns the number of Relus fused.
int fuse_conv_relu(ir::Graph& graph, const std::vector<int>& interface_values);

}  // namespace ipu::passes
