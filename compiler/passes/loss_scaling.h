// Loss scaling (docs/training.md, "Loss scaling"; Keras's LossScaleOptimizer): the loss gradient,
// autodiff's seed, is multiplied by the scale S, so every gradient carries S (through
// accumulation and the all-reduce over replicas), and each gradient is multiplied by 1 / S before
// clipping and the update, which see the unscaled gradient.
#pragma once

#include <functional>
#include <vector>

#include "compiler/ir/op_registry.h"

namespace ipu::passes {

// After `loss`'s gradient rule has run: multiplies the gradient it recorded for each of its inputs
// by the scale that `hyper` (the loss stage's hyper-parameters) holds, in place (a
// LossScaleFactor and a ScaleGradient per input, phase kBackward), and records the scaled value
// as that gradient, so every rule after it reads the scaled one.
Status scale_loss_gradient(ir::GradContext& context, const ir::Op& loss, int hyper);

// Adds, for `gradients` (each a weight's gradient or accumulator, on its weight's stage): per
// stage, a LossScaleFactor (1 / S) of that stage's hyper-parameters, `hyper_of_stage(stage)`, and
// a ScaleGradient of each of its gradients in place (phase kClip, before clipping's norm).
// Returns, for each of `gradients`, the value the update reads instead (the same memory, unscaled).
StatusOr<std::vector<int>> unscale_gradients(ir::Graph& graph, const std::vector<int>& gradients,
                                             const std::function<int(int)>& hyper_of_stage);

} // namespace ipu::passes
