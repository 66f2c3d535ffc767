// One value per pipeline stage (a squared norm of its gradients), brought to every stage, as the
// passes that decide on all stages' gradients at once need (clipping's global norm, dynamic loss
// scaling's finite check): each stage then computes the same result from the same values in the
// same order, and nothing travels back.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::passes {

// (stage, value) pairs in stage order: one value computed on each stage.
using StageValues = std::vector<std::pair<int, int>>;

// Per stage that holds any of `gradients`, in stage order: (stage, a SquaredNorm of that stage's
// gradients each times `scale`, phase kClip, named `name` + "@stage<s>"). Scale 0 makes it a
// finite check: (0·g)² is 0 for a finite g, NaN for an infinite or NaN one.
StatusOr<StageValues> squared_norm_per_stage(ir::Graph& graph, const std::vector<int>& gradients, float scale,
                                             const std::string& name);

// `per_stage` (stage, value) in stage order, each value a vector computed on its stage, gathered
// onto `stage`: an inter-IPU copy (StageCopy, phase `copy_phase`, named after the value and
// "@stage<s>") of every value computed elsewhere, then, if there are several, one Concat of them
// all in stage order (`concat_phase`, named `concat_name`). Returns the gathered value.
StatusOr<int> gather_onto_stage(ir::Graph& graph, const StageValues& per_stage, int stage,
                                const std::string& concat_name, ir::Phase copy_phase, ir::Phase concat_phase);

} // namespace ipu::passes
