// Folds the cheap ops after a product into it: a BiasAdd into the MatMul that feeds it, and a
// Relu into the Conv or MatMul (with or without its bias) that feeds it. The product's vertices
// then add the bias and clamp their output block while it is still in cache, and a step saves
// the folded ops' compute sets and their passes over the activation.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Folds every BiasAdd and Relu whose input is the output of a MatMul (a Conv, for Relu) read by
// nothing else, in the same phase and stage, and not one of `interface_values` (the graph's
// inputs and outputs, which the host reads or writes). The product then writes the folded op's
// output, taking the bias as a third input (MatMul) or attrs.fused_relu; the folded op is
// removed and the product's own output value is left unused. Gradients never read those
// values (BiasAdd's gradient is dY's column sum, Relu's reads the Relu's output), so this runs
// after autodiff as well as for inference. Returns the number of ops folded.
int fuse_epilogues(ir::Graph& graph, const std::vector<int>& interface_values);

}  // namespace ipu::passes
