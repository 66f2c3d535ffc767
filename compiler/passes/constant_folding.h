// Constant folding: what a graph computes from its constants alone is computed once, at compile
// time, so that only work depending on the model's inputs and weights reaches the device. ONNX
// exporters write shape arithmetic as ops (x.view(x.size(0), -1) is Shape → Gather → Unsqueeze →
// Concat → Reshape), and attention masks and position tables as chains of constant ops; once the
// batch is bound, all of it is constant (ONNX Runtime's and PopART's constant folding, IREE's
// const-eval).
//
// The values are computed by the runtime, not by a second implementation of each op here: the
// driver lowers the constant part of the graph for one IPU and runs it on the engine's kernels
// (compiler/driver/evaluate_constants.h), through a ConstantEvaluator handed in.
#pragma once

#include <functional>
#include <vector>

#include "compiler/ir/graph.h"
#include "runtime/base/status.h"

namespace ipu::passes {

// Computes `outputs` of `graph`, a graph of constants and the forward ops that read them (what
// constant_subgraph builds): each value's float32 elements in row-major order.
using ConstantEvaluator = std::function<StatusOr<std::vector<std::vector<float>>>(
    const ir::Graph& graph, const std::vector<int>& outputs)>;

// Which values of a growing graph are computed from its constants alone: a constant (role
// kConstant, no producer), or an output of an op all of whose inputs are. Weights are not
// constants (the host writes them at run time), nor are inputs, running statistics or the
// statistics mode. Values are judged once, in id order (an op's outputs follow its inputs).
class ConstantValues {
public:
  explicit ConstantValues(const ir::Graph& graph) : m_graph(graph) {}
  bool contains(int value);

private:
  const ir::Graph& m_graph;
  std::vector<bool> m_constant; // by value id, for the ids judged so far
};

// The smallest graph computing `values` (each one that ConstantValues contains) from constants:
// copies of the constants and ops they depend on, in their order, every op on stage 0 (a copy
// between stages is its input). `values` are its outputs' ids in the new graph.
struct ConstantSubgraph {
  ir::Graph graph;
  std::vector<int> values;
};
StatusOr<ConstantSubgraph> constant_subgraph(const ir::Graph& graph, const std::vector<int>& values);

// Computes `values` (each one ConstantValues contains) with `evaluate`. InvalidArgument when a
// constant they depend on holds integers beyond 2^24, which float32 does not hold exactly.
StatusOr<std::vector<std::vector<float>>> evaluate_constant_values(const ir::Graph& graph,
                                                                   const std::vector<int>& values,
                                                                   const ConstantEvaluator& evaluate);

struct FoldedGraph {
  int ops_removed = 0;
  std::vector<int> new_value_id; // per old value id; -1 for a removed value
};

// Replaces every computed value ConstantValues contains that an op computing from non-constants
// reads, or that `interface` names, by a constant holding its value (evaluated with `evaluate`),
// then removes the ops that computed constants and the constants nothing reads any more (but
// those `interface` names). The values' ids change: FoldedGraph maps them. On an error (the
// evaluation's) the graph is left as it was.
StatusOr<FoldedGraph> fold_constants(ir::Graph& graph, const std::vector<int>& interface,
                                     const ConstantEvaluator& evaluate);

} // namespace ipu::passes
