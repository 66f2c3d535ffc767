// Constant folding's evaluator (passes::ConstantEvaluator): the constant part of a graph lowered
// for one IPU, as any model is, and run by the runtime's engine and kernels, so every folded value
// is what the device would have computed (IREE's const-eval works the same way: it compiles the
// constant expressions and runs them on its own runtime).
#pragma once

#include <vector>

#include "compiler/ir/graph.h"
#include "runtime/base/status.h"

namespace ipu::compiler {

// Each of `outputs` of `graph` (constants and the forward ops reading them, as
// passes::constant_subgraph builds it), in float32, row-major. ResourceExhausted when they do not
// fit one mk2 IPU; the lowering's and the run's errors otherwise (an index out of range).
StatusOr<std::vector<std::vector<float>>> evaluate_on_device(const ir::Graph& graph,
                                                             const std::vector<int>& outputs);

} // namespace ipu::compiler
