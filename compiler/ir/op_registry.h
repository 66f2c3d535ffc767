// The explicit op registry: one OpDef per OpKind with its shape rule, gradient rule and
// lowering. Entries live in one file per op family under compiler/ops/.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::lowering {
class LowerContext;
}

namespace ipu::ir {

// Reverse-mode autodiff state handed to gradient rules.
class GradContext {
 public:
  explicit GradContext(Graph& graph) : m_graph(graph), m_gradients(graph.values().size(), -1) {}
  Graph& graph() { return m_graph; }
  // Gradient of the loss with respect to `value`, or -1 when nothing depends on it.
  int gradient_of(int value) const;
  // True if some weight's gradient flows through `value` (graph inputs need none).
  bool needs_gradient(int value) const;
  void set_needs_gradient(std::vector<bool> needs) { m_needs = std::move(needs); }
  // Records `gradient` as d loss / d `value`; a further contribution (the value fans out to
  // several ops) is added to it by a Binary Add op.
  Status add_gradient(int value, int gradient);

 private:
  Graph& m_graph;
  std::vector<int> m_gradients;
  std::vector<bool> m_needs;
};

using ShapeFn = Status (*)(const Graph& graph, const Op& op, std::vector<TensorType>& outputs);
using GradFn = Status (*)(GradContext& context, const Op& op);
using LowerFn = Status (*)(lowering::LowerContext& context, const Op& op);

inline constexpr int kVariadic = -1;

struct OpDef {
  OpKind kind;
  int num_inputs;  // or kVariadic: the shape rule checks the count
  ShapeFn infer;
  GradFn gradient;  // nullptr: not differentiable (gradient ops, metrics, updates)
  LowerFn lower;
};

const OpDef& op_def(OpKind kind);

// Registry entries: each op's definition, in its family's file under compiler/ops (ops.def).
#define OP(name, text, definition) const OpDef& definition();
#include "compiler/ir/ops.def"
#undef OP

}  // namespace ipu::ir
