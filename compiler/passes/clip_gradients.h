// Gradient clipping by global norm (Keras's `global_clipnorm`, torch.nn.utils.clip_grad_norm_;
// docs/training.md): scales every gradient by min(1, clip_norm / (‖g‖ + 1e-6)), where ‖g‖ is the
// norm over all weights' gradients as the optimizer applies them (after the mean over
// micro-batches and replicas), before any update.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// Adds, for `gradients` (each a weight's gradient or accumulator, on its weight's stage):
// per stage, a SquaredNorm of that stage's gradients times `gradient_scale` (phase kClip); an
// inter-IPU copy of each stage's squared norm to every other stage (kClip); and on every stage a
// ClipFactor of all stages' squared norms, in stage order, followed by a ScaleGradient of each of
// its gradients in place (kUpdate). Every stage computes the same factor from the same values in
// the same order, so no factor travels back. Returns, for each of `gradients`, the value the
// update reads instead (the same memory, scaled).
StatusOr<std::vector<int>> clip_by_global_norm(ir::Graph& graph, const std::vector<int>& gradients,
                                               float gradient_scale, float clip_norm);

} // namespace ipu::passes
