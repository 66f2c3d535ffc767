#include "compiler/passes/fuse_epilogues.h"

#include <algorithm>
#include <utility>

namespace ipu::passes {
namespace {

// The op producing `op`'s first input if it is one of `kinds`, in the same phase and stage, and
// `op` alone reads that input, which the host does not see either; else -1.
int sole_producer(const ir::Graph& graph, const ir::Op& op, std::initializer_list<ir::OpKind> kinds,
                  const std::vector<int>& interface_values) {
  const int input = op.inputs[0];
  const int producer = graph.value(input).producer;
  if (producer < 0) return -1;
  const ir::Op& p = graph.op(producer);
  if (std::find(kinds.begin(), kinds.end(), p.kind) == kinds.end() || p.phase != op.phase || p.stage != op.stage) {
    return -1;
  }
  if (std::find(interface_values.begin(), interface_values.end(), input) != interface_values.end()) return -1;
  return graph.consumers(input).size() == 1 ? producer : -1;
}

// Replaces op `folded` by op `product` carrying `fold` (which adds the folded op's work to it),
// writing the folded op's output. The fused op takes the folded op's place in the op order,
// after every producer of both ops' inputs (a folded bias may be computed after the product
// was). Returns the product's old id, which the caller removes; its own output is left unused.
template <typename Fold>
int fold_into(ir::Graph& graph, int product, int folded, Fold&& fold) {
  ir::Op fused = graph.op(product);
  const ir::Op& old = graph.op(folded);
  fold(fused, old);
  graph.value(fused.outputs[0]).producer = -1;  // produced and read by nothing now: no tensor
  fused.outputs[0] = old.outputs[0];
  fused.id = folded;
  graph.value(fused.outputs[0]).producer = folded;
  graph.op(folded) = std::move(fused);
  return product;
}

}  // namespace

int fuse_epilogues(ir::Graph& graph, const std::vector<int>& interface_values) {
  // Biases first, so a Relu after a MatMul and its BiasAdd finds the MatMul.
  std::vector<int> replaced;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.kind != ir::OpKind::kBiasAdd) continue;
    const int matmul = sole_producer(graph, op, {ir::OpKind::kMatMul}, interface_values);
    if (matmul < 0 || graph.op(matmul).inputs.size() != 2) continue;
    replaced.push_back(fold_into(graph, matmul, op.id, [](ir::Op& fused, const ir::Op& bias_add) {
      fused.inputs.push_back(bias_add.inputs[1]);
    }));
  }
  const int biases = static_cast<int>(replaced.size());
  graph.remove_ops(replaced);

  replaced.clear();
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.kind != ir::OpKind::kRelu) continue;
    const int product = sole_producer(graph, op, {ir::OpKind::kConv, ir::OpKind::kMatMul}, interface_values);
    if (product < 0 || graph.op(product).attrs.fused_relu) continue;
    replaced.push_back(fold_into(graph, product, op.id, [](ir::Op& fused, const ir::Op&) { fused.attrs.fused_relu = true; }));
  }
  graph.remove_ops(replaced);
  return biases + static_cast<int>(replaced.size());
}

}  // namespace ipu::passes
