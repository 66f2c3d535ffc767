#include "compiler/passes/clip_gradients.h"

#include <map>
#include <string>

#include "compiler/passes/stage_gather.h"

namespace ipu::passes {

StatusOr<std::vector<int>> clip_by_global_norm(ir::Graph& graph, const std::vector<int>& gradients,
                                               float gradient_scale, float clip_norm) {
  // Each stage's share of the squared norm, in stage order.
  IPU_ASSIGN_OR_RETURN(const StageValues squares,
                       squared_norm_per_stage(graph, gradients, gradient_scale, "global_norm/squared"));
  std::map<int, int> factor_of_stage;
  for (const auto& share : squares) {
    const int stage = share.first;
    IPU_ASSIGN_OR_RETURN(int all, gather_onto_stage(graph, squares, stage,
                                                    "global_norm/squares@stage" + std::to_string(stage),
                                                    ir::Phase::kClip, ir::Phase::kUpdate));
    ir::ClipFactorAttrs attrs;
    attrs.clip_norm = clip_norm;
    IPU_ASSIGN_OR_RETURN(int factor, graph.add_op(ir::OpKind::kClipFactor,
                                                  "global_norm/clip_factor@stage" + std::to_string(stage),
                                                  {all}, attrs, ir::Phase::kUpdate, stage));
    factor_of_stage[stage] = graph.op(factor).outputs[0];
  }
  std::vector<int> scaled;
  for (int g : gradients) {
    const int stage = graph.value(g).stage;
    IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kScaleGradient, graph.value(g).name + "/clipped",
                                              {g, factor_of_stage.at(stage)}, {}, ir::Phase::kUpdate, stage));
    scaled.push_back(graph.op(op).outputs[0]);
  }
  return scaled;
}

} // namespace ipu::passes
