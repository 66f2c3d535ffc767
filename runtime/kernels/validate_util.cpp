#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {

Status expect_operands(const format::Vertex& vertex, const std::vector<OperandInfo>& operands,
                       std::initializer_list<format::DType> dtypes) {
  if (operands.size() != dtypes.size()) {
    return invalid_argument("expects " + std::to_string(dtypes.size()) + " operands, got " +
                            std::to_string(operands.size()));
  }
  size_t i = 0;
  for (format::DType dtype : dtypes) {
    // The kernels compute in float: a FLOAT16 tensor's elements are floats holding binary16
    // values, which the engine rounds after the compute set (executable.proto, FLOAT16).
    const bool float_either = dtype == format::FLOAT32 && operands[i].dtype == format::FLOAT16;
    if (operands[i].dtype != dtype && !float_either) {
      return invalid_argument("operand " + std::to_string(i) + " (tensor " +
                              std::to_string(vertex.operands(static_cast<int>(i))) + ") has dtype " +
                              format::DType_Name(operands[i].dtype) + ", expected " +
                              format::DType_Name(dtype));
    }
    ++i;
  }
  return Status();
}

Status expect_param_count(const format::Vertex& vertex, int params, int fparams) {
  if (vertex.params_size() != params || vertex.fparams_size() != fparams) {
    return invalid_argument("expects " + std::to_string(params) + " integer and " + std::to_string(fparams) +
                            " float parameters, got " + std::to_string(vertex.params_size()) + " and " +
                            std::to_string(vertex.fparams_size()));
  }
  return Status();
}

Status expect_params_with_optional_flag(const format::Vertex& vertex, int params, const char* flag) {
  if (vertex.params_size() != params + 1) return expect_param_count(vertex, params, 0);
  if (vertex.fparams_size() != 0) return expect_param_count(vertex, params + 1, 0);
  const int64_t value = vertex.params(params);
  if (value != 0 && value != 1)
    return invalid_argument(std::string(flag) + " must be 0 or 1, got " + std::to_string(value));
  return Status();
}

Status expect_range(int64_t begin, int64_t end, int64_t limit, const char* what) {
  if (begin < 0 || begin > end || end > limit) {
    return invalid_argument(std::string(what) + " range [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") is outside [0, " + std::to_string(limit) + ")");
  }
  return Status();
}

Status expect_elements(std::initializer_list<int64_t> dims, uint64_t elements, const char* operand) {
  uint64_t product = 1;
  for (int64_t d : dims) {
    if (d <= 0 || product > (uint64_t{1} << 40) / static_cast<uint64_t>(d)) {
      return invalid_argument(std::string(operand) + ": dimension " + std::to_string(d) + " is invalid");
    }
    product *= static_cast<uint64_t>(d);
  }
  if (product != elements) {
    return invalid_argument(std::string(operand) + " has " + std::to_string(elements) +
                            " elements, parameters say " + std::to_string(product));
  }
  return Status();
}

} // namespace ipu::kernels
