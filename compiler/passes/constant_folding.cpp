#include "compiler/passes/constant_folding.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/format/host_contract.h"

namespace ipu::passes {
namespace {

bool is_root_constant(const ir::Value& v) {
  return v.role == ir::Role::kConstant && v.producer < 0;
}

} // namespace

bool ConstantValues::contains(int value) {
  for (size_t id = m_constant.size(); id < m_graph.values().size(); ++id) {
    const ir::Value& v = m_graph.value(static_cast<int>(id));
    bool constant = is_root_constant(v);
    if (v.producer >= 0) {
      const ir::Op& op = m_graph.op(v.producer);
      constant = op.phase == ir::Phase::kForward && !op.inputs.empty() &&
                 std::all_of(op.inputs.begin(), op.inputs.end(), [&](int in) {
                   return static_cast<size_t>(in) < id && m_constant[static_cast<size_t>(in)];
                 });
    }
    m_constant.push_back(constant);
  }
  return m_constant.at(static_cast<size_t>(value));
}

StatusOr<ConstantSubgraph> constant_subgraph(const ir::Graph& graph, const std::vector<int>& values) {
  // The ops the values depend on, found backwards; then copied forwards, in the graph's order.
  std::vector<bool> needed(graph.values().size(), false);
  std::vector<int> stack = values;
  std::vector<int> ops;
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (needed[static_cast<size_t>(id)]) continue;
    needed[static_cast<size_t>(id)] = true;
    const ir::Value& v = graph.value(id);
    if (v.producer < 0) continue;
    ops.push_back(v.producer);
    for (int in : graph.op(v.producer).inputs)
      stack.push_back(in);
  }
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());

  ConstantSubgraph sub;
  std::vector<int> copy_of(graph.values().size(), -1);
  auto copy_flags = [&](const ir::Value& from, int to) {
    ir::Value& v = sub.graph.value(to);
    v.declared_half = from.declared_half;
    v.keeps_float32 = from.keeps_float32;
  };
  for (const ir::Value& v : graph.values()) {
    if (!needed[static_cast<size_t>(v.id)] || v.producer >= 0) continue;
    if (!is_root_constant(v)) return invalid_argument("'" + v.name + "' is not a constant");
    const int id = sub.graph.add_value(v.name, v.type, ir::Role::kConstant);
    sub.graph.value(id).initial = v.initial;
    copy_flags(v, id);
    copy_of[static_cast<size_t>(v.id)] = id;
  }
  for (int op_id : ops) {
    const ir::Op& op = graph.op(op_id);
    std::vector<int> inputs;
    for (int in : op.inputs)
      inputs.push_back(copy_of[static_cast<size_t>(in)]);
    if (op.kind == ir::OpKind::kStageCopy) {
      copy_of[static_cast<size_t>(op.outputs[0])] = inputs[0];
      continue;
    }
    IPU_ASSIGN_OR_RETURN(
        int copy, sub.graph.add_op(op.kind, op.name, std::move(inputs), op.attributes, ir::Phase::kForward));
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const int out = sub.graph.op(copy).outputs.at(i);
      copy_flags(graph.value(op.outputs[i]), out);
      copy_of[static_cast<size_t>(op.outputs[i])] = out;
    }
  }
  for (int v : values)
    sub.values.push_back(copy_of[static_cast<size_t>(v)]);
  return sub;
}

StatusOr<std::vector<std::vector<float>>> evaluate_constant_values(const ir::Graph& graph,
                                                                   const std::vector<int>& values,
                                                                   const ConstantEvaluator& evaluate) {
  IPU_ASSIGN_OR_RETURN(ConstantSubgraph sub, constant_subgraph(graph, values));
  for (const ir::Value& v : sub.graph.values()) {
    if (v.producer >= 0 || !v.keeps_float32) continue;
    for (float x : v.initial) {
      // 2^24 itself may be 2^24 + 1 rounded.
      if (std::fabs(x) >= static_cast<float>(format::kExactFloatIntegers)) {
        return invalid_argument("it is computed from '" + v.name +
                                "', which holds integers beyond 2^24 (float32 holds them inexactly)");
      }
    }
  }
  return evaluate(sub.graph, sub.values);
}

StatusOr<FoldedGraph> fold_constants(ir::Graph& graph, const std::vector<int>& interface,
                                     const ConstantEvaluator& evaluate) {
  ConstantValues constants(graph);
  std::vector<bool> in_interface(graph.values().size(), false);
  for (int v : interface)
    in_interface[static_cast<size_t>(v)] = true;
  // The computed constants something else needs: the values to fold.
  std::vector<bool> frontier(graph.values().size(), false);
  std::vector<int> constant_ops;
  for (const ir::Op& op : graph.ops()) {
    const bool computes_constants = !op.outputs.empty() && constants.contains(op.outputs[0]);
    if (computes_constants) constant_ops.push_back(op.id);
    for (int in : op.inputs) {
      if (!computes_constants && constants.contains(in) && graph.value(in).producer >= 0)
        frontier[static_cast<size_t>(in)] = true;
    }
  }
  std::vector<int> folded;
  for (const ir::Value& v : graph.values()) {
    if (v.producer >= 0 && constants.contains(v.id) &&
        (frontier[static_cast<size_t>(v.id)] || in_interface[static_cast<size_t>(v.id)]))
      folded.push_back(v.id);
  }
  FoldedGraph out;
  if (!folded.empty()) {
    IPU_ASSIGN_OR_RETURN(std::vector<std::vector<float>> results,
                         evaluate_constant_values(graph, folded, evaluate));
    for (size_t i = 0; i < folded.size(); ++i) {
      ir::Value& v = graph.value(folded[i]);
      v.initial = std::move(results.at(i));
      v.role = ir::Role::kConstant;
      v.producer = -1;
    }
  }
  graph.remove_ops(constant_ops);
  out.ops_removed = static_cast<int>(constant_ops.size());
  // What no op reads or writes any more: the removed ops' outputs and the constants only they read.
  std::vector<bool> referenced(graph.values().size(), false);
  for (const ir::Op& op : graph.ops()) {
    for (const std::vector<int>* refs : {&op.inputs, &op.outputs, &op.after}) {
      for (int v : *refs)
        referenced[static_cast<size_t>(v)] = true;
    }
  }
  std::vector<int> unreferenced;
  for (const ir::Value& v : graph.values()) {
    const bool left_by_folding =
        v.role == ir::Role::kConstant || (v.role == ir::Role::kActivation && constants.contains(v.id));
    if (left_by_folding && !referenced[static_cast<size_t>(v.id)] && !in_interface[static_cast<size_t>(v.id)])
      unreferenced.push_back(v.id);
  }
  // The removed ops' outputs must not keep pointing at ops renumbered since.
  for (int v : unreferenced)
    graph.value(v).producer = -1;
  out.new_value_id = graph.remove_values(unreferenced);
  return out;
}

} // namespace ipu::passes
