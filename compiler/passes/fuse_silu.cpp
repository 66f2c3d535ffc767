#include "compiler/passes/fuse_silu.h"

#include "compiler/passes/pattern_match.h"

namespace ipu::passes {

int fuse_silu(ir::Graph& graph, const std::vector<int>& interface_values) {
  std::vector<int> removed;
  int fused = 0;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& sigmoid = graph.ops()[i];
    if (sigmoid.kind != ir::OpKind::kSigmoid) continue;
    const int x = sigmoid.inputs[0], s = sigmoid.outputs[0];
    const int mul = sole_reader(graph, s, sigmoid, interface_values);
    if (mul < 0 || !is_binary(graph.op(mul), format::BinaryKind::kMul) || other_input(graph.op(mul), s) != x)
      continue;
    ir::Op& product = graph.op(mul);
    if (graph.value(product.outputs[0]).type.shape != graph.value(x).type.shape) continue;
    graph.value(s).producer = -1; // produced and read by nothing now: no tensor
    removed.push_back(sigmoid.id);
    product.inputs = {x};
    product.kind = ir::OpKind::kUnary;
    product.attributes = ir::UnaryAttrs{format::UnaryKind::kSilu};
    ++fused;
  }
  graph.remove_ops(removed);
  return fused;
}

} // namespace ipu::passes
