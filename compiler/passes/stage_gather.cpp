#include "compiler/passes/stage_gather.h"

#include <map>

namespace ipu::passes {

StatusOr<StageValues> squared_norm_per_stage(ir::Graph& graph, const std::vector<int>& gradients, float scale,
                                             const std::string& name) {
  std::map<int, std::vector<int>> by_stage;
  for (int g : gradients)
    by_stage[graph.value(g).stage].push_back(g);
  StageValues norms;
  for (const auto& [stage, values] : by_stage) {
    ir::SquaredNormAttrs attrs;
    attrs.scale = scale;
    IPU_ASSIGN_OR_RETURN(int op,
                         graph.add_op(ir::OpKind::kSquaredNorm, name + "@stage" + std::to_string(stage),
                                      values, attrs, ir::Phase::kClip, stage));
    norms.emplace_back(stage, graph.op(op).outputs[0]);
  }
  return norms;
}

StatusOr<int> gather_onto_stage(ir::Graph& graph, const StageValues& per_stage, int stage,
                                const std::string& concat_name, ir::Phase copy_phase,
                                ir::Phase concat_phase) {
  std::vector<int> inputs;
  for (const auto& [from, value] : per_stage) {
    if (from == stage) {
      inputs.push_back(value);
      continue;
    }
    IPU_ASSIGN_OR_RETURN(int copy, graph.add_op(ir::OpKind::kStageCopy,
                                                graph.value(value).name + "@stage" + std::to_string(stage),
                                                {value}, {}, copy_phase, stage));
    inputs.push_back(graph.op(copy).outputs[0]);
  }
  if (inputs.size() == 1) return inputs[0];
  IPU_ASSIGN_OR_RETURN(int concat, graph.add_op(ir::OpKind::kConcat, concat_name, inputs, ir::AxisAttrs{0},
                                                concat_phase, stage));
  return graph.op(concat).outputs[0];
}

} // namespace ipu::passes
