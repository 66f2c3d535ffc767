#include "compiler/ir/op_registry.h"

#include <array>
#include <cstdlib>

#include "runtime/format/tensor_kinds.h"

namespace ipu::ir {

const OpDef& op_def(OpKind kind) {
  static const auto table = [] {
    constexpr size_t kCount = 0
#define OP(name, text) +1
#include "compiler/ir/ops.def"
#undef OP
        ;
    std::array<const OpDef*, kCount> t{};
    for (const OpDef* def : {&matmul_op(), &bias_add_op(), &relu_op(), &sigmoid_op(), &tanh_op(), &softmax_op(),
                             &activation_grad_op(), &softmax_grad_op(), &reshape_op(), &sparse_cross_entropy_op(),
                             &sparse_cross_entropy_grad_op(), &count_correct_op(), &column_sum_op(),
                             &sgd_update_op(), &accumulate_grad_op(), &stage_copy_op(),
                             // Generic tensor ops.
                             &unary_op(), &binary_op(), &where_op(), &strided_copy_op(), &concat_op(),
                             &gather_op(), &gather_grad_op(), &reduce_op(), &reduce_prod_grad_op(), &axis_softmax_op(),
                             &batch_matmul_op(),
                             // Convolution, pooling and normalization.
                             &conv_op(), &conv_grad_input_op(), &conv_grad_weight_op(), &channel_sum_op(),
                             &channel_affine_op(), &max_pool_op(), &max_pool_grad_op(), &average_pool_op(),
                             &average_pool_grad_op(), &batch_norm_op(), &batch_norm_grad_input_op(),
                             &batch_norm_grad_scale_op(), &to_channels_last_op(), &to_channels_first_op(),
                             // ONNX losses.
                             &nll_loss_op(), &nll_loss_grad_op(),
                             // Fused ops formed from patterns.
                             &layer_norm_op()}) {
      t[static_cast<size_t>(def->kind)] = def;
    }
    for (const OpDef* def : t) {
      if (def == nullptr) std::abort();  // an op in ops.def without a registry entry
    }
    return t;
  }();
  return *table[static_cast<size_t>(kind)];
}

int GradContext::gradient_of(int value) const {
  return static_cast<size_t>(value) < m_gradients.size() ? m_gradients[static_cast<size_t>(value)] : -1;
}

bool GradContext::needs_gradient(int value) const {
  return static_cast<size_t>(value) < m_needs.size() && m_needs[static_cast<size_t>(value)];
}

Status GradContext::add_gradient(int value, int gradient) {
  if (static_cast<size_t>(value) >= m_gradients.size()) m_gradients.resize(static_cast<size_t>(value) + 1, -1);
  int& slot = m_gradients[static_cast<size_t>(value)];
  if (slot == -1) {
    slot = gradient;
    return Status();
  }
  // A value read by several ops (fan-out): its gradient is the sum of the contributions. Every
  // consumer's rule runs before the producer's (ops are visited newest first), so the sum is
  // complete when the producer reads it.
  if (m_graph.value(slot).type.shape != m_graph.value(gradient).type.shape) {
    return invalid_argument("gradients of '" + m_graph.value(value).name + "' have different shapes " +
                            m_graph.value(slot).type.to_string() + " and " + m_graph.value(gradient).type.to_string());
  }
  const int producer = m_graph.value(gradient).producer;
  OpAttrs add;
  add.kind = static_cast<int64_t>(format::BinaryKind::kAdd);
  IPU_ASSIGN_OR_RETURN(int id, m_graph.add_op(OpKind::kBinary, m_graph.value(value).name + "/grad_sum", {slot, gradient},
                                              add, Phase::kBackward, producer >= 0 ? m_graph.op(producer).stage : 0));
  slot = m_graph.op(id).outputs[0];
  return Status();
}

}  // namespace ipu::ir
