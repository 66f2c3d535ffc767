// Shape arithmetic of the IR: numpy broadcasting and row-major strides. Shape rules, frontends
// and lowerings all use it, so it sits in ir.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::ir {

// The numpy broadcast of two shapes, or an error naming both.
StatusOr<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Row-major strides of `shape`.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
// Strides with which an operand of shape `in` is read at each index of `out` (its broadcast):
// aligned on the right, 0 where `in` has no axis or a 1 against a larger output dimension.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

} // namespace ipu::ir
