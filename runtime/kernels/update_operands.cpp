#include "runtime/kernels/update_operands.h"

#include <string>

#include "runtime/format/verifier.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {

Status expect_hyper_parameters(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  if (ops.empty()) return invalid_argument("expects the hyper-parameters as its last operand");
  const size_t last = ops.size() - 1;
  if (ops[last].dtype != format::FLOAT32) return invalid_argument("the hyper-parameters must be float32");
  if (ops[last].elements != format::kHyperParameterCount) {
    return invalid_argument("the hyper-parameters must be " + std::to_string(format::kHyperParameterCount) +
                            " values, got " + std::to_string(ops[last].elements));
  }
  for (size_t i = 0; i < last; ++i) {
    if (v.operands(static_cast<int>(i)) == v.operands(static_cast<int>(last)))
      return invalid_argument("operand " + std::to_string(i) + " aliases the hyper-parameters");
  }
  return Status();
}

Status validate_update(const format::Vertex& v, const std::vector<OperandInfo>& ops, size_t elementwise,
                       bool has_step, int64_t begin, int64_t end) {
  const size_t count = elementwise + (has_step ? 1 : 0) + 1;
  if (ops.size() != count) {
    return invalid_argument("expects " + std::to_string(count) + " operands, got " +
                            std::to_string(ops.size()));
  }
  for (size_t i = 0; i < count; ++i) {
    if (!format::is_float(ops[i].dtype))
      return invalid_argument("operand " + std::to_string(i) + " must be a float");
    if (i < elementwise && ops[i].elements != ops[0].elements) {
      return invalid_argument("gradient and state sizes differ from the weight");
    }
    for (size_t j = 0; j < i; ++j) {
      if (v.operands(static_cast<int>(i)) == v.operands(static_cast<int>(j))) {
        return invalid_argument("weight, gradient and optimizer state must be distinct tensors");
      }
    }
  }
  if (has_step && ops[count - 2].elements != 1)
    return invalid_argument("the step count must have one element");
  IPU_RETURN_IF_ERROR(expect_hyper_parameters(v, ops));
  return expect_range(begin, end, static_cast<int64_t>(ops[0].elements), "element");
}

} // namespace ipu::kernels
