// Reshape (Flatten): changes the shape, never the data, so it lowers to an alias.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
namespace {

Status infer_reshape(const ir::Graph& g, const ir::Op& op, std::vector<ir::TensorType>& out) {
  const ir::TensorType& x = g.value(op.inputs[0]).type;
  ir::TensorType y{x.dtype, op.attrs<ir::ReshapeAttrs>().shape};
  if (y.elements() != x.elements()) {
    return invalid_argument("cannot reshape " + x.to_string() + " to " + y.to_string());
  }
  out.push_back(y);
  return Status();
}

Status grad_reshape(ir::GradContext& ctx, const ir::Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  ir::ReshapeAttrs attrs;
  attrs.shape = ctx.graph().value(x).type.shape;
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(ir::OpKind::kReshape, op.name + "/grad", {dy}, attrs,
                                                  ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(x, ctx.graph().op(id).outputs[0]);
}

Status lower_reshape(lowering::LowerContext& ctx, const ir::Op& op) {
  ctx.alias(op.outputs[0], op.inputs[0]);
  return Status();
}

} // namespace

const OpDefinition& reshape_op() {
  static const OpDefinition def{{ir::OpKind::kReshape, 1, infer_reshape, grad_reshape}, lower_reshape};
  return def;
}

} // namespace ipu::ops
