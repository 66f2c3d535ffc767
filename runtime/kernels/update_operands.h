// The operands the optimizer update codelets share (optimizer_kernels.cpp, lamb_kernels.cpp):
// the hyper-parameters are the last operand of every update vertex, one float32 per
// runtime/format/host_contract.h HyperParameter slot, which the host writes once per update.
#pragma once

#include <vector>

#include "runtime/format/host_contract.h"
#include "runtime/kernels/kernel.h"

namespace ipu::kernels {

// The hyper-parameters of an update vertex, indexed by format::HyperParameter.
inline const float* hyper_parameters(const PreparedVertex& v) {
  return v.f32(v.num_operands - 1);
}

// The last operand holds the hyper-parameters: float32, kHyperParameterCount values, a tensor no
// other operand is (the update writes the others).
Status expect_hyper_parameters(const format::Vertex& v, const std::vector<OperandInfo>& ops);

// The operands of an optimizer update vertex: `elementwise` float32 tensors of the weight's size
// (W, G, then per-element state), then, with `has_step`, a one-element float32 step count, then
// the hyper-parameters; all distinct. The vertex's [begin, end) lies inside the weight.
Status validate_update(const format::Vertex& v, const std::vector<OperandInfo>& ops, size_t elementwise,
                       bool has_step, int64_t begin, int64_t end);

} // namespace ipu::kernels
