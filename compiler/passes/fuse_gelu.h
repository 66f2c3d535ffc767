// Recognises GELU as PyTorch exports it, erf's form spelt out in five ops:
//   y = (x · (erf(x / √2) + 1)) · 0.5
// and replaces them with one Unary Gelu, whose kernel computes those same float operations in
// that order (runtime/kernels/unary_kernel.cpp), so results are bitwise what the five ops
// gave, in one pass over the activation instead of five.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Replaces every Div by the constant √2 → Erf → Add of the constant 1 → Mul by the Div's input
// → Mul by the constant 0.5 (Add and Mul operands in either order; constants as float32 scalars
// equal to those floats) whose intermediate values nothing else reads, none of them one of
// `interface_values`, all in one phase and stage, by Gelu(x) at the last Mul's place. In a
// training graph the gradients read the intermediates, so it fuses inference graphs only.
// Returns the number of GELUs fused.
int fuse_gelu(ir::Graph& graph, const std::vector<int>& interface_values);

} // namespace ipu::passes
