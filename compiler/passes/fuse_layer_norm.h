// Recognises LayerNorm over the last axis as PyTorch exports it, nine ops:
//   m = ReduceMean(x); d = x − m; v = ReduceMean(d ^ 2); s = Sqrt(v + ε); y = d / s · γ + β
// and replaces them with one LayerNorm, whose kernel rounds where those ops round
// (runtime/kernels/layer_norm_kernel.cpp): bitwise the same result, in one vertex per block of
// rows instead of nine compute sets and seven passes over the activation.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Replaces every such chain whose mean reductions take the last axis with keepdims, whose Pow
// exponent and ε are float32 scalar constants (the exponent 2), whose γ and β are row vectors of
// the last axis's length (Mul and Add operands in either order), and whose intermediate values
// nothing else reads, none of them one of `interface_values`, all in one phase and stage, by
// LayerNorm(x, γ, β) at the last Add's place. In a training graph the gradients read the
// intermediates, so it fuses inference graphs only. Returns the number of LayerNorms fused.
int fuse_layer_norm(ir::Graph& graph, const std::vector<int>& interface_values);

} // namespace ipu::passes
