#include "compiler/passes/stage_split.h"

namespace ipu::passes {

StatusOr<int> StageCopies::value_on_stage(ir::Graph& graph, int value, int stage) {
  if (graph.value(value).stage == stage) return value;
  auto [it, inserted] = m_copies.try_emplace({value, stage}, -1);
  if (inserted) {
    const std::string name = graph.value(value).name + "@stage" + std::to_string(stage);
    IPU_ASSIGN_OR_RETURN(int op,
                         graph.add_op(ir::OpKind::kStageCopy, name, {value}, {}, ir::Phase::kForward, stage));
    it->second = graph.op(op).outputs[0];
  }
  return it->second;
}

} // namespace ipu::passes
