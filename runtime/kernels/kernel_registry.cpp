#include <array>

#include "runtime/kernels/kernel.h"

namespace ipu::kernels {

const KernelDef* find_kernel(uint32_t codelet_id) {
  // One entry per codelet, indexed by id; filled once.
  static const auto table = [] {
    std::array<const KernelDef*, 128> t{};
    for (const KernelDef* def :
         {&matmul_kernel(), &bias_add_kernel(), &activation_kernel(), &activation_grad_kernel(), &softmax_kernel(),
          &softmax_grad_kernel(), &sparse_cross_entropy_kernel(), &sparse_cross_entropy_grad_kernel(),
          &count_correct_kernel(), &column_sum_kernel(), &sgd_momentum_kernel(), &accumulate_kernel(),
          // Generic tensor codelets.
          &unary_kernel(), &binary_kernel(), &where_kernel(), &strided_copy_kernel(), &block_copy_kernel(),
          &reduce_kernel(), &axis_softmax_kernel(), &batch_matmul_kernel(), &gather_kernel(), &gather_grad_kernel(),
          // Convolution, pooling and normalization.
          &conv_kernel(), &conv_grad_input_kernel(), &conv_grad_weight_kernel(), &channel_sum_kernel(),
          &channel_affine_kernel(), &max_pool_kernel(), &max_pool_grad_kernel(), &average_pool_kernel(),
          &average_pool_grad_kernel(), &batch_norm_kernel(), &batch_norm_grad_input_kernel(),
          &batch_norm_grad_scale_kernel(), &channels_layout_kernel(),
          // ONNX losses.
          &nll_loss_kernel(), &nll_loss_grad_kernel(),
          // Fused ops formed from patterns.
          &layer_norm_kernel(),
          // Gradients without a family of their own.
          &reduce_prod_grad_kernel()}) {
      t[static_cast<uint32_t>(def->codelet)] = def;
    }
    return t;
  }();
  return codelet_id < table.size() ? table[codelet_id] : nullptr;
}

bool try_merge(const KernelDef& def, PreparedVertex& into, const PreparedVertex& next) {
  if (def.primary.begin < 0 || into.codelet != next.codelet || into.operands != next.operands ||
      into.num_params != next.num_params || into.fparams != next.fparams) {
    return false;
  }
  auto same_except = [&](const WorkRange& range) {
    for (uint32_t i = 0; i < into.num_params; ++i) {
      if (static_cast<int>(i) != range.begin && static_cast<int>(i) != range.end && into.params[i] != next.params[i]) {
        return false;
      }
    }
    return into.params[static_cast<size_t>(range.end)] == next.params[static_cast<size_t>(range.begin)];
  };
  for (const WorkRange& range : {def.primary, def.secondary}) {
    if (range.begin >= 0 && same_except(range)) {
      into.params[static_cast<size_t>(range.end)] = next.params[static_cast<size_t>(range.end)];
      into.cycles += next.cycles;
      return true;
    }
  }
  return false;
}

Status validate_vertex(const format::Vertex& vertex, const format::Executable& executable) {
  const KernelDef* def = find_kernel(vertex.codelet());
  if (def == nullptr) return invalid_argument("unknown codelet id " + std::to_string(vertex.codelet()));
  if (static_cast<size_t>(vertex.operands_size()) > kMaxOperands || static_cast<size_t>(vertex.params_size()) > kMaxParams ||
      static_cast<size_t>(vertex.fparams_size()) > kMaxFloatParams) {
    return invalid_argument("too many operands or parameters");
  }
  std::vector<OperandInfo> operands;
  operands.reserve(static_cast<size_t>(vertex.operands_size()));
  for (uint32_t index : vertex.operands()) {
    const format::Tensor& t = executable.tensors(static_cast<int>(index));
    uint64_t elements = 1;
    for (int64_t d : t.shape()) elements *= static_cast<uint64_t>(d);
    operands.push_back({t.dtype(), elements});
  }
  Status status = def->validate(vertex, operands);
  if (!status.ok()) return status.with_context(std::string(codelet_name(def->codelet)) + " vertex on tile " +
                                               std::to_string(vertex.tile()));
  return status;
}

}  // namespace ipu::kernels
