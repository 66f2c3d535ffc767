// Recomputation on one IPU (`ipucc compile --recompute` of a model without pipeline stages), as
// PopART's and TensorFlow's for the IPU: the forward pass keeps some of its values for the
// backward pass (the checkpoints) and the backward pass computes the others again from them just
// before it needs them, so those die as soon as the forward has used them and only the
// checkpoints live from the forward pass to the backward. A pipeline recomputes a whole stage's
// forward instead (lowering/pipeline_program.h).
//
// The forward ops, in graph order, are cut into segments. A value that a later segment reads, that
// the loss reads or that an op computes which must not run twice is a checkpoint. The forward ops
// a segment's backward needs again are cloned into the backward phase ("<op>/recompute", outputs
// "<value>/recompute"), reading checkpoints and each other; the backward ops read the clones.
// A segment's clones wait (ir::Op::after) for the gradient that reaches the segment, so the BSP
// levelling runs them just before that segment's backward and not all at the start of the
// backward pass, where they would all be live at once. The clones compute what the forward
// computed, from the same values, so gradients are bitwise those without recomputation.
//
// Where the cuts go, unless the user names checkpoint ops: the O(√n) schedule of Chen et al.
// 2016, "Training Deep Nets with Sublinear Memory Cost" (arXiv:1604.06174): of n forward ops,
// round(√n) segments of about equal activation bytes, each cut, among the positions near its
// share, where the fewest bytes cross (the paper takes only split points where one value crosses:
// in a residual network, between blocks).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

struct RecomputeOptions {
  // Cut after the forward ops of these kinds (as `ipucc compile --dump-ir` prints them, "Conv")
  // or names (spec layers, ONNX nodes): their outputs are checkpoints. Empty: Chen et al.'s cuts.
  std::vector<std::string> checkpoint_ops;
};

struct RecomputeSummary {
  int segments = 0;
  // The forward values the backward pass reads (checkpoints), and the forward ops it recomputes.
  std::vector<int> checkpoints;
  int recomputed_ops = 0;
};

// Whether the forward op `op` may run a second time, computing the same values and changing
// nothing else: its outputs are activations and it reads no state that lives across steps
// other than weights (an op that updates state in place, as training-mode batch norm its
// running statistics, reads that state: its outputs are checkpoints instead).
bool is_recomputable(const ir::Graph& graph, const ir::Op& op);

// Applies recomputation to the forward and backward phases of a single-stage training graph,
// after autodiff and fusion. BadOption when a name of `options.checkpoint_ops` names no op kind
// or op of the graph's forward pass.
StatusOr<RecomputeSummary> recompute_forward(ir::Graph& graph, const RecomputeOptions& options);

} // namespace ipu::passes
