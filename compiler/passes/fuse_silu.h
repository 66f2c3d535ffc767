// Recognises SiLU (swish) as PyTorch exports it, x·sigmoid(x) in two ops, Sigmoid and Mul, and
// replaces them with one Unary Silu, whose kernel computes the same sigmoid and product
// (runtime/kernels/unary_kernel.cpp): results are bitwise what the two ops gave, in one pass over
// the activation instead of two, with no sigmoid written to memory. On the IPU this is popnn's
// SWISH non-linearity, one vertex, which docs/cycle_model.md charges at its own rate.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Replaces every Sigmoid whose output only a Mul reads, that Mul's other operand the Sigmoid's
// own input (in either order) and its output of the input's shape, by Silu(x) at the Mul's place,
// where the sigmoid is neither one of `interface_values` nor declared float16 and both ops run in
// one phase and stage. A squeeze-and-excitation gate, x·sigmoid(s(x)), keeps its ops. In a
// training graph the gradient reads the sigmoid, so it fuses inference graphs only. Returns the
// number of SiLUs fused.
int fuse_silu(ir::Graph& graph, const std::vector<int>& interface_values);

} // namespace ipu::passes
