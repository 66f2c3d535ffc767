// StageCopy: a value read on another pipeline stage travels there by an inter-IPU copy. It has
// no vertices; the lowering records it and the pipeline schedule places the copy.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
namespace {

Status infer_stage_copy(const ir::Graph& g, const ir::Op& op, std::vector<ir::TensorType>& out) {
  out.push_back(g.value(op.inputs[0]).type);
  return Status();
}

// The gradient of a copy is the copy of the gradient, back to the source stage.
Status grad_stage_copy(ir::GradContext& ctx, const ir::Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(ir::OpKind::kStageCopy, op.name + "/grad", {dy}, {},
                                                  ir::Phase::kBackward, ctx.graph().value(x).stage));
  return ctx.add_gradient(x, ctx.graph().op(id).outputs[0]);
}

Status lower_stage_copy(lowering::LowerContext& ctx, const ir::Op& op) {
  ctx.record_stage_copy(op);
  return Status();
}

} // namespace

const OpDefinition& stage_copy_op() {
  static const OpDefinition def{{ir::OpKind::kStageCopy, 1, infer_stage_copy, grad_stage_copy},
                                lower_stage_copy};
  return def;
}

} // namespace ipu::ops
