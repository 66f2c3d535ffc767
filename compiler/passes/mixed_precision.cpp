#include "compiler/passes/mixed_precision.h"

#include <set>
#include <string>

namespace ipu::passes {

Status add_half_weight_copies(ir::Graph& graph) {
  std::set<std::string> names;
  for (const ir::Value& v : graph.values())
    names.insert(v.name);
  std::vector<int> casts;
  for (int w : graph.values_with_role(ir::Role::kWeight)) {
    std::vector<int> readers;
    for (int op : graph.consumers(w)) {
      if (graph.op(op).phase == ir::Phase::kForward) readers.push_back(op);
    }
    if (readers.empty()) continue;
    const ir::Value weight = graph.value(w);
    // The copy is named after its weight, made distinct as optimizer state is (passes/training.h).
    std::string name = weight.name + "/fp16";
    for (int n = 2; names.contains(name); ++n)
      name = weight.name + "/fp16#" + std::to_string(n);
    names.insert(name);
    ir::UnaryAttrs identity;
    identity.kind = format::UnaryKind::kIdentity;
    IPU_ASSIGN_OR_RETURN(
        int cast, graph.add_op(ir::OpKind::kUnary, name, {w}, identity, ir::Phase::kForward, weight.stage));
    const int copy = graph.op(cast).outputs[0];
    for (int op : readers) {
      for (int& in : graph.op(op).inputs) {
        if (in == w) in = copy;
      }
    }
    casts.push_back(cast);
  }
  graph.move_ops_to_front(casts);
  return Status();
}

void keep_output_softmax_float32(ir::Graph& graph, int loss) {
  const int scores = graph.op(graph.value(loss).producer).inputs[0];
  const int softmax = graph.value(scores).producer;
  if (softmax < 0) return;
  const ir::OpKind kind = graph.op(softmax).kind;
  if (kind != ir::OpKind::kSoftmax && kind != ir::OpKind::kAxisSoftmax) return;
  graph.value(scores).keeps_float32 = true;
  for (int op : graph.consumers(scores)) {
    if (graph.op(op).phase != ir::Phase::kBackward || graph.op(op).kind == ir::OpKind::kSoftmaxGrad) continue;
    for (int out : graph.op(op).outputs)
      graph.value(out).keeps_float32 = true;
  }
}

} // namespace ipu::passes
