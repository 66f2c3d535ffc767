// Loss scaling (docs/training.md, "Loss scaling"; Keras's LossScaleOptimizer): the loss gradient,
// autodiff's seed, is multiplied by the scale S, so every gradient carries S (through
// accumulation and the all-reduce over replicas), and each gradient is multiplied by 1 / S before
// clipping and the update, which see the unscaled gradient. S is the static scale the stage's
// hyper-parameters hold, or the dynamic scale its state holds (add_loss_scale_state).
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "compiler/ir/op_registry.h"

namespace ipu::passes {

// After `loss`'s gradient rule has run: multiplies the gradient it recorded for each of its inputs
// by the scale that `hyper` (the loss stage's hyper-parameters, or its dynamic state) holds, in place (a
// LossScaleFactor and a ScaleGradient per input, phase kBackward), and records the scaled value
// as that gradient, so every rule after it reads the scaled one.
Status scale_loss_gradient(ir::GradContext& context, const ir::Op& loss, int hyper);

// Adds, for `gradients` (each a weight's gradient or accumulator, on its weight's stage): per
// stage, a LossScaleFactor (1 / S) of that stage's hyper-parameters, `hyper_of_stage(stage)`, and
// a ScaleGradient of each of its gradients in place (phase kClip, before clipping's norm).
// Returns, for each of `gradients`, the value the update reads instead (the same memory, unscaled).
StatusOr<std::vector<int>> unscale_gradients(ir::Graph& graph, const std::vector<int>& gradients,
                                             const std::function<int(int)>& hyper_of_stage);

// Dynamic scaling's state on `stage`: an optimizer-state value {scale, counter} named
// format::kLossScaleStateTensor (with "@<stage>" beyond stage 0), starting at {initial_scale, 0}.
// It travels to the host and into checkpoints with the other optimizer state.
int add_loss_scale_state(ir::Graph& graph, int stage, float initial_scale);

// Keras's dynamic schedule, given the unscaled gradients: per stage with gradients, a finite
// check (a SquaredNorm of the gradients times 0: 0 when all are finite, NaN otherwise; kClip)
// copied to every stage of `state_of_stage` (stage → its add_loss_scale_state value: the loss
// stage and every stage with gradients; kClip); on each such stage a LossScaleUpdate of all
// checks in stage order (kLossScale), whose first output chooses between the stage's kUpdate and
// kSkip phases; and in kSkip a ZeroGradient of each of `accumulators` on the stage.
Status add_dynamic_loss_scale_update(ir::Graph& graph, const std::vector<int>& unscaled,
                                     const std::vector<int>& accumulators,
                                     const std::map<int, int>& state_of_stage, int64_t growth_steps);

} // namespace ipu::passes
