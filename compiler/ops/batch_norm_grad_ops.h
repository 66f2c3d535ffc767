// The gradient of a BatchNorm that normalises by its input's own batch statistics (a
// BatchStatistics op's outputs): the standard batch-norm backward.
#pragma once

#include "compiler/ir/op_registry.h"

namespace ipu::ops {

// True when `op` (a BatchNorm) reads the mean and variance that a BatchStatistics op computes from
// its own input X.
bool normalises_by_batch_statistics(const ir::Graph& graph, const ir::Op& op);

// Adds the backward ops of such a BatchNorm: dscale = Σ dY·x̂ and dB = Σ dY per channel
// (BatchNormGradStats, split with partials), and dX = scale·istd·(dY − dB/M − x̂·dscale/M)
// (BatchNormTrainGradInput), M the elements per channel. The statistics get no gradient of their
// own: dX holds their share.
Status grad_batch_norm_by_batch_statistics(ir::GradContext& context, const ir::Op& op);

} // namespace ipu::ops
