// The op registry's interface: one OpDef per OpKind with its shape rule and gradient rule. The
// definitions live in one file per op family under compiler/ops/, a layer above lowering (each
// family file also holds its ops' lowerings, which lowering receives as a table:
// lowering/lower_graph.h); compiler/ops builds the table (ops/op_table.h) and whoever builds
// graphs installs it first (the driver, the tests).
#pragma once

#include <array>
#include <vector>

#include "compiler/ir/graph.h"

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
  // Makes `gradient` d loss / d `value` in place of the one recorded (loss scaling's scaled seed,
  // compiler/passes/loss_scaling.h), before any rule has read it.
  void replace_gradient(int value, int gradient);

private:
  Graph& m_graph;
  std::vector<int> m_gradients;
  std::vector<bool> m_needs;
};

using ShapeFn = Status (*)(const Graph& graph, const Op& op, std::vector<TensorType>& outputs);
using GradFn = Status (*)(GradContext& context, const Op& op);

inline constexpr int kVariadic = -1;

struct OpDef {
  OpKind kind;
  int num_inputs; // or kVariadic: the shape rule checks the count
  ShapeFn infer;
  GradFn gradient; // nullptr: not differentiable (gradient ops, metrics, updates)
};

inline constexpr size_t kOpKindCount = 0
#define OP(name, text, definition, attrs) +1
#include "compiler/ir/ops.def"
#undef OP
    ;

// Every op's definition, indexed by OpKind.
using OpTable = std::array<const OpDef*, kOpKindCount>;

// Makes `table` the one op_def reads (compiler/ops: install_op_table(op_definitions())).
// Installing the same table again, from any thread, changes nothing.
void install_op_table(const OpTable& table);

// The installed table's entry for `kind`; aborts if no table is installed.
const OpDef& op_def(OpKind kind);

} // namespace ipu::ir
