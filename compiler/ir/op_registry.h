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

// Registry entries, one function per op family file.
const OpDef& matmul_op();
const OpDef& bias_add_op();
const OpDef& relu_op();
const OpDef& sigmoid_op();
const OpDef& tanh_op();
const OpDef& softmax_op();
const OpDef& activation_grad_op();
const OpDef& softmax_grad_op();
const OpDef& reshape_op();
const OpDef& sparse_cross_entropy_op();
const OpDef& sparse_cross_entropy_grad_op();
const OpDef& count_correct_op();
const OpDef& column_sum_op();
const OpDef& sgd_update_op();
const OpDef& accumulate_grad_op();
const OpDef& stage_copy_op();
// Generic tensor ops (elementwise_ops.cpp, movement_ops.cpp, reduce_ops.cpp).
const OpDef& unary_op();
const OpDef& binary_op();
const OpDef& where_op();
const OpDef& strided_copy_op();
const OpDef& concat_op();
const OpDef& gather_op();
const OpDef& gather_grad_op();
const OpDef& reduce_op();
const OpDef& reduce_prod_grad_op();
const OpDef& axis_softmax_op();
const OpDef& batch_matmul_op();
// Convolution, pooling and normalization.
const OpDef& conv_op();
const OpDef& conv_grad_input_op();
const OpDef& conv_grad_weight_op();
const OpDef& channel_sum_op();
const OpDef& channel_affine_op();
const OpDef& max_pool_op();
const OpDef& max_pool_grad_op();
const OpDef& average_pool_op();
const OpDef& average_pool_grad_op();
const OpDef& batch_norm_op();
const OpDef& batch_norm_grad_input_op();
const OpDef& batch_norm_grad_scale_op();
const OpDef& to_channels_last_op();
const OpDef& to_channels_first_op();
// ONNX losses.
const OpDef& nll_loss_op();
const OpDef& nll_loss_grad_op();
// Fused ops formed from patterns.
const OpDef& layer_norm_op();

}  // namespace ipu::ir
