// Queries the pattern fusions share (fuse_epilogues.h, fuse_gelu.h, fuse_layer_norm.h): what
// reads a value, and whether a value is a constant or a row vector.
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::passes {

// Whether the host reads or writes `value` (a graph input or output): such a value must stay.
bool is_interface(const std::vector<int>& interface_values, int value);

// The one op reading `value`, if it runs in `near`'s phase and stage and `value` is neither an
// interface value nor declared float16 (ir::Value::declared_half: its rounding must stay); else -1.
int sole_reader(const ir::Graph& graph, int value, const ir::Op& near,
                const std::vector<int>& interface_values);

// Whether `op` is a Binary of `kind`, a Unary of `kind` or a Reduce of `kind`.
bool is_binary(const ir::Op& op, format::BinaryKind kind);
bool is_unary(const ir::Op& op, format::UnaryKind kind);

// A Binary's operand other than `value` (operands in either order).
int other_input(const ir::Op& op, int value);

// The value of a float32 constant of one element (a Constant node's scalar), if `value` is one.
std::optional<float> scalar_constant(const ir::Graph& graph, int value);

// A float32 value of n elements laid along its last axis ([n], [1, n], ...): what a broadcasting
// Binary spreads over the rows of a [.., n] value.
bool is_row_vector(const ir::TensorType& type, int64_t n);

} // namespace ipu::passes
