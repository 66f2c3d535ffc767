#include "compiler/passes/pattern_match.h"

#include <algorithm>

namespace ipu::passes {

bool is_interface(const std::vector<int>& interface_values, int value) {
  return std::find(interface_values.begin(), interface_values.end(), value) != interface_values.end();
}

int sole_reader(const ir::Graph& graph, int value, const ir::Op& near,
                const std::vector<int>& interface_values) {
  const std::vector<int> readers = graph.consumers(value);
  // A value the model declares float16 is rounded where it is written: folding its producer into
  // its reader would skip that rounding and change the model's result.
  if (readers.size() != 1 || is_interface(interface_values, value) || graph.value(value).declared_half)
    return -1;
  const ir::Op& op = graph.op(readers[0]);
  return op.phase == near.phase && op.stage == near.stage ? op.id : -1;
}

bool is_binary(const ir::Op& op, format::BinaryKind kind) {
  return op.kind == ir::OpKind::kBinary && op.attrs<ir::BinaryAttrs>().kind == kind;
}

bool is_unary(const ir::Op& op, format::UnaryKind kind) {
  return op.kind == ir::OpKind::kUnary && op.attrs<ir::UnaryAttrs>().kind == kind;
}

int other_input(const ir::Op& op, int value) {
  return op.inputs[0] == value ? op.inputs[1] : op.inputs[0];
}

std::optional<float> scalar_constant(const ir::Graph& graph, int value) {
  const ir::Value& v = graph.value(value);
  if (v.role != ir::Role::kConstant || v.type.dtype != ir::DType::kFloat32 || v.initial.size() != 1)
    return std::nullopt;
  return v.initial[0];
}

bool is_row_vector(const ir::TensorType& type, int64_t n) {
  return type.dtype == ir::DType::kFloat32 && !type.shape.empty() && type.shape.back() == n &&
         type.elements() == n;
}

} // namespace ipu::passes
