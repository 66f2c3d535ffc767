#include "compiler/passes/fuse_gelu.h"

#include <algorithm>
#include <numbers>

#include "runtime/format/tensor_kinds.h"

namespace ipu::passes {
namespace {

using format::BinaryKind;

bool is_scalar_constant(const ir::Graph& graph, int value, float expected) {
  const ir::Value& v = graph.value(value);
  return v.role == ir::Role::kConstant && v.type.dtype == ir::DType::kFloat32 && v.initial.size() == 1 &&
         v.initial[0] == expected;
}

bool is_interface(const std::vector<int>& interface_values, int value) {
  return std::find(interface_values.begin(), interface_values.end(), value) != interface_values.end();
}

// The one op reading `value`, if it is a Binary of `kind` in `near`'s phase and stage and the
// host does not see `value`; else -1.
int sole_binary_reader(const ir::Graph& graph, int value, BinaryKind kind, const ir::Op& near,
                       const std::vector<int>& interface_values) {
  const std::vector<int> readers = graph.consumers(value);
  if (readers.size() != 1 || is_interface(interface_values, value)) return -1;
  const ir::Op& op = graph.op(readers[0]);
  const bool matches = op.kind == ir::OpKind::kBinary && op.attrs.kind == static_cast<int64_t>(kind) &&
                       op.phase == near.phase && op.stage == near.stage;
  return matches ? op.id : -1;
}

// `op`'s input other than `value` (a Binary's operands in either order).
int other_input(const ir::Op& op, int value) { return op.inputs[0] == value ? op.inputs[1] : op.inputs[0]; }

// The five ops of a GELU around Erf op `erf`, in order, or an empty list.
std::vector<int> match_gelu(const ir::Graph& graph, const ir::Op& erf, const std::vector<int>& interface_values) {
  constexpr float kSqrt2 = std::numbers::sqrt2_v<float>;
  const int scaled = erf.inputs[0];
  const int div = graph.value(scaled).producer;
  if (div < 0) return {};
  const ir::Op& d = graph.op(div);
  if (d.kind != ir::OpKind::kBinary || d.attrs.kind != static_cast<int64_t>(BinaryKind::kDiv) ||
      !is_scalar_constant(graph, d.inputs[1], kSqrt2) || d.phase != erf.phase || d.stage != erf.stage ||
      graph.consumers(scaled).size() != 1 || is_interface(interface_values, scaled)) {
    return {};
  }
  const int x = d.inputs[0];
  const int add = sole_binary_reader(graph, erf.outputs[0], BinaryKind::kAdd, erf, interface_values);
  if (add < 0 || !is_scalar_constant(graph, other_input(graph.op(add), erf.outputs[0]), 1.0f)) return {};
  const int mul = sole_binary_reader(graph, graph.op(add).outputs[0], BinaryKind::kMul, erf, interface_values);
  if (mul < 0 || other_input(graph.op(mul), graph.op(add).outputs[0]) != x) return {};
  const int half = sole_binary_reader(graph, graph.op(mul).outputs[0], BinaryKind::kMul, erf, interface_values);
  if (half < 0 || !is_scalar_constant(graph, other_input(graph.op(half), graph.op(mul).outputs[0]), 0.5f)) return {};
  if (graph.value(graph.op(half).outputs[0]).type.shape != graph.value(x).type.shape) return {};
  return {div, erf.id, add, mul, half};
}

}  // namespace

int fuse_gelu(ir::Graph& graph, const std::vector<int>& interface_values) {
  std::vector<int> removed;
  int fused = 0;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.kind != ir::OpKind::kUnary || op.attrs.kind != static_cast<int64_t>(format::UnaryKind::kErf)) continue;
    const std::vector<int> chain = match_gelu(graph, op, interface_values);
    if (chain.empty()) continue;
    const int x = graph.op(chain[0]).inputs[0];
    ir::Op& last = graph.op(chain.back());
    for (size_t k = 0; k + 1 < chain.size(); ++k) {
      graph.value(graph.op(chain[k]).outputs[0]).producer = -1;  // produced and read by nothing now: no tensor
      removed.push_back(chain[k]);
    }
    last.kind = ir::OpKind::kUnary;
    last.inputs = {x};
    last.attrs = ir::OpAttrs{};
    last.attrs.kind = static_cast<int64_t>(format::UnaryKind::kGelu);
    ++fused;
  }
  graph.remove_ops(removed);
  return fused;
}

}  // namespace ipu::passes
