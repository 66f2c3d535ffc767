// The ops of one weight's LAMB update (docs/training.md; You et al. 2019): LambMoments turns the
// gradient into the update direction u in place, two SquaredNorm ops reduce ‖W‖² and ‖u‖² over
// the tiles, and LambApply steps the weight by lr·‖W‖/‖u‖·u. All in the update phase, on the
// weight's stage.
#pragma once

#include "compiler/ir/graph.h"

namespace ipu::passes {

// `gradient` is the weight's gradient or accumulator (cleared by LambApply when
// attrs.clear_gradient); `m`, `v` and `step` its state; `hyper_parameters` the hyper-parameter
// tensor of the weight's stage, which both LambMoments and LambApply read.
Status add_lamb_update(ir::Graph& graph, int weight, int gradient, int m, int v, int step,
                       int hyper_parameters, const ir::LambAttrs& attrs);

} // namespace ipu::passes
