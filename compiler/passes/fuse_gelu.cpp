#include "compiler/passes/fuse_gelu.h"

#include <numbers>

#include "compiler/passes/pattern_match.h"

namespace ipu::passes {
namespace {

using format::BinaryKind;

bool is_constant(const ir::Graph& graph, int value, float expected) {
  return scalar_constant(graph, value) == expected;
}

// The one op reading `value`, if it is a Binary of `kind` in `near`'s phase and stage; else -1.
int sole_binary_reader(const ir::Graph& graph, int value, BinaryKind kind, const ir::Op& near,
                       const std::vector<int>& interface_values) {
  const int reader = sole_reader(graph, value, near, interface_values);
  return reader >= 0 && is_binary(graph.op(reader), kind) ? reader : -1;
}

// The five ops of a GELU around Erf op `erf`, in order, or an empty list.
std::vector<int> match_gelu(const ir::Graph& graph, const ir::Op& erf,
                            const std::vector<int>& interface_values) {
  const int scaled = erf.inputs[0];
  const int div = graph.value(scaled).producer;
  if (div < 0) return {};
  const ir::Op& d = graph.op(div);
  if (!is_binary(d, BinaryKind::kDiv) || !is_constant(graph, d.inputs[1], std::numbers::sqrt2_v<float>) ||
      sole_reader(graph, scaled, d, interface_values) != erf.id) {
    return {};
  }
  const int x = d.inputs[0];
  const int add = sole_binary_reader(graph, erf.outputs[0], BinaryKind::kAdd, erf, interface_values);
  if (add < 0 || !is_constant(graph, other_input(graph.op(add), erf.outputs[0]), 1.0f)) return {};
  const int mul =
      sole_binary_reader(graph, graph.op(add).outputs[0], BinaryKind::kMul, erf, interface_values);
  if (mul < 0 || other_input(graph.op(mul), graph.op(add).outputs[0]) != x) return {};
  const int half =
      sole_binary_reader(graph, graph.op(mul).outputs[0], BinaryKind::kMul, erf, interface_values);
  if (half < 0 || !is_constant(graph, other_input(graph.op(half), graph.op(mul).outputs[0]), 0.5f)) return {};
  if (graph.value(graph.op(half).outputs[0]).type.shape != graph.value(x).type.shape) return {};
  return {div, erf.id, add, mul, half};
}

} // namespace

int fuse_gelu(ir::Graph& graph, const std::vector<int>& interface_values) {
  std::vector<int> removed;
  int fused = 0;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (!is_unary(op, format::UnaryKind::kErf)) continue;
    const std::vector<int> chain = match_gelu(graph, op, interface_values);
    if (chain.empty()) continue;
    const int x = graph.op(chain[0]).inputs[0];
    for (size_t k = 0; k + 1 < chain.size(); ++k) {
      graph.value(graph.op(chain[k]).outputs[0]).producer = -1; // produced and read by nothing now: no tensor
      removed.push_back(chain[k]);
    }
    ir::Op& last = graph.op(chain.back());
    last.inputs = {x};
    last.kind = ir::OpKind::kUnary;
    last.attributes = ir::UnaryAttrs{format::UnaryKind::kGelu};
    ++fused;
  }
  graph.remove_ops(removed);
  return fused;
}

} // namespace ipu::passes
