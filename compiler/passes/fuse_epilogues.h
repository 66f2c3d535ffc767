// Folds the cheap ops after a product into it: a bias into the MatMul that feeds it, and a Relu
// into the Conv or MatMul (with or without its bias) that feeds it. The product's vertices then
// add the bias and clamp their output block while it is still in cache, and a step saves the
// folded ops' compute sets and their passes over the activation.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Folds, where the product's output is read by nothing else, in the same phase and stage, and is
// not one of `interface_values` (the graph's inputs and outputs, which the host reads or writes):
//   - a BiasAdd of a MatMul's output, and an Add of a bias vector onto a MatMul's output seen
//     through a Reshape that keeps its last axis (ONNX MatMul + Add on 3-D activations): the
//     MatMul takes the bias as a third input;
//   - a Relu of a Conv's or MatMul's output: the product takes fused_relu (MatMulAttrs, ConvAttrs).
// The product (or the Reshape after it) then writes the folded op's output; the folded op is
// removed and the value it read is left unused. Gradients never read those values (a bias's
// gradient is dY's column sum, Relu's reads the Relu's output), so this runs after autodiff as
// well as for inference. Returns the number of ops folded.
int fuse_epilogues(ir::Graph& graph, const std::vector<int>& interface_values);

} // namespace ipu::passes
