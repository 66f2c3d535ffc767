#include "compiler/passes/fuse_epilogues.h"

#include <algorithm>
#include <utility>

#include "compiler/passes/pattern_match.h"

namespace ipu::passes {
namespace {

// The op producing `value`, which `reader` reads, if it is one of `kinds`, in the same phase and
// stage, and `reader` alone reads that value, which the host does not see either; else -1.
int sole_producer(const ir::Graph& graph, int value, const ir::Op& reader,
                  std::initializer_list<ir::OpKind> kinds, const std::vector<int>& interface_values) {
  const int producer = graph.value(value).producer;
  if (producer < 0 || sole_reader(graph, value, graph.op(producer), interface_values) != reader.id) return -1;
  return std::find(kinds.begin(), kinds.end(), graph.op(producer).kind) != kinds.end() ? producer : -1;
}

// ONNX MatMul + Add over 3-D activations (a transformer's projections) imports as
//   m = MatMul(x', w); r = Reshape(m) to [.., n]; y = Add(r, b) or Add(b, r), b a row vector,
// which becomes m = MatMul(x', w, b); y = Reshape(m). The Reshape keeps the last axis, so b
// adds to m's columns; the MatMul adds it to the finished product, as the Add did. The bias must
// exist before the MatMul runs. Returns the number of Adds folded.
int fold_reshaped_biases(ir::Graph& graph, const std::vector<int>& interface_values) {
  std::vector<int> removed;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& add = graph.ops()[i];
    if (!is_binary(add, format::BinaryKind::kAdd)) continue;
    for (size_t side : {0, 1}) {
      const int reshaped = add.inputs[side], bias = add.inputs[1 - side];
      const int reshape = sole_producer(graph, reshaped, add, {ir::OpKind::kReshape}, interface_values);
      if (reshape < 0) continue;
      const int matmul = sole_producer(graph, graph.op(reshape).inputs[0], graph.op(reshape),
                                       {ir::OpKind::kMatMul}, interface_values);
      if (matmul < 0 || graph.op(matmul).inputs.size() != 2 || ir::has_fused_relu(graph.op(matmul))) continue;
      const int64_t n = graph.value(graph.op(matmul).outputs[0]).type.shape[1];
      const ir::TensorType& r = graph.value(reshaped).type;
      if (!is_row_vector(graph.value(bias).type, n) || r.shape.back() != n ||
          graph.value(add.outputs[0]).type.shape != r.shape || graph.value(bias).producer > matmul) {
        continue;
      }
      graph.op(matmul).inputs.push_back(bias);
      graph.value(reshaped).producer = -1; // produced and read by nothing now: no tensor
      graph.op(reshape).outputs[0] = add.outputs[0];
      graph.value(add.outputs[0]).producer = reshape;
      removed.push_back(add.id);
      break;
    }
  }
  graph.remove_ops(removed);
  return static_cast<int>(removed.size());
}

// Replaces op `folded` by op `product` carrying `fold` (which adds the folded op's work to it),
// writing the folded op's output. The fused op takes the folded op's place in the op order,
// after every producer of both ops' inputs (a folded bias may be computed after the product
// was). Returns the product's old id, which the caller removes; its own output is left unused.
template <typename Fold> int fold_into(ir::Graph& graph, int product, int folded, Fold&& fold) {
  ir::Op fused = graph.op(product);
  const ir::Op& old = graph.op(folded);
  fold(fused, old);
  graph.value(fused.outputs[0]).producer = -1; // produced and read by nothing now: no tensor
  fused.outputs[0] = old.outputs[0];
  fused.id = folded;
  graph.value(fused.outputs[0]).producer = folded;
  graph.op(folded) = std::move(fused);
  return product;
}

} // namespace

int fuse_epilogues(ir::Graph& graph, const std::vector<int>& interface_values) {
  // Biases first, so a Relu after a MatMul and its BiasAdd finds the MatMul.
  const int reshaped_biases = fold_reshaped_biases(graph, interface_values);
  std::vector<int> replaced;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.kind != ir::OpKind::kBiasAdd) continue;
    const int matmul = sole_producer(graph, op.inputs[0], op, {ir::OpKind::kMatMul}, interface_values);
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
    const int product =
        sole_producer(graph, op.inputs[0], op, {ir::OpKind::kConv, ir::OpKind::kMatMul}, interface_values);
    if (product < 0 || ir::has_fused_relu(graph.op(product))) continue;
    replaced.push_back(fold_into(graph, product, op.id, [](ir::Op& fused, const ir::Op&) {
      if (fused.kind == ir::OpKind::kConv) {
        fused.attrs<ir::ConvAttrs>().fused_relu = true;
      } else {
        fused.attrs<ir::MatMulAttrs>().fused_relu = true;
      }
    }));
  }
  graph.remove_ops(replaced);
  return reshaped_biases + biases + static_cast<int>(replaced.size());
}

} // namespace ipu::passes
