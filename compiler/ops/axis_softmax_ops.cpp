// AxisSoftmax: softmax or log-softmax along the middle axis of [outer, n, inner].
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
namespace {

using format::BinaryKind;
using format::ReduceKind;
using format::UnaryKind;
using lowering::LowerContext;

// AxisSoftmax: softmax or log-softmax of a [outer, n, inner] input along axis 1 (the ONNX
// converter reshapes any input and axis semantics into this form).
Status infer_axis_softmax(const ir::Graph& g, const ir::Op& op, std::vector<ir::TensorType>& out) {
  const ir::TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() != 3) return invalid_argument("expects [outer, n, inner], got " + x.to_string());
  if (const auto kind = static_cast<int64_t>(op.attrs<ir::SoftmaxAttrs>().kind);
      kind < 0 || kind >= format::kSoftmaxKindCount) {
    return invalid_argument("unknown softmax kind");
  }
  out.push_back(x);
  return Status();
}

// Softmax: dX = Y ⊙ (dY − Σ dY⊙Y); log-softmax: dX = dY − e^Y ⊙ Σ dY (sums along axis 1).
Status grad_axis_softmax(ir::GradContext& ctx, const ir::Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0], y = op.outputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  ir::ReduceAttrs sum;
  sum.kind = ReduceKind::kSum;
  sum.axes = {1};
  sum.keep_dims = true;
  int dx = -1;
  if (op.attrs<ir::SoftmaxAttrs>().kind == format::SoftmaxKind::kSoftmax) {
    IPU_ASSIGN_OR_RETURN(int prod, grad_binary(ctx, op, BinaryKind::kMul, dy, y, "/grad_prod"));
    IPU_ASSIGN_OR_RETURN(int dot, grad_op(ctx, op, ir::OpKind::kReduce, {prod}, sum, "/grad_dot"));
    IPU_ASSIGN_OR_RETURN(int diff, grad_binary(ctx, op, BinaryKind::kSub, dy, dot, "/grad_diff"));
    IPU_ASSIGN_OR_RETURN(dx, grad_binary(ctx, op, BinaryKind::kMul, y, diff, "/grad"));
  } else {
    IPU_ASSIGN_OR_RETURN(int total, grad_op(ctx, op, ir::OpKind::kReduce, {dy}, sum, "/grad_sum"));
    IPU_ASSIGN_OR_RETURN(int p, grad_unary(ctx, op, UnaryKind::kExp, y, 0, 0, "/grad_exp"));
    IPU_ASSIGN_OR_RETURN(int scaled, grad_binary(ctx, op, BinaryKind::kMul, p, total, "/grad_scaled"));
    IPU_ASSIGN_OR_RETURN(dx, grad_binary(ctx, op, BinaryKind::kSub, dy, scaled, "/grad"));
  }
  return ctx.add_gradient(x, dx);
}

Status lower_axis_softmax(LowerContext& ctx, const ir::Op& op) {
  const std::vector<int64_t>& s = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t outer = s[0], n = s[1], inner = s[2];
  const auto kind = static_cast<int64_t>(op.attrs<ir::SoftmaxAttrs>().kind);
  const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
  const double per_line = static_cast<double>(n) * softmax_cycles_per_element(ctx.target().cycles);
  // Lines are split by whole outer rows so that each vertex's elements are contiguous.
  const lowering::ElementwiseWork work{
      outer, n * inner, per_line * static_cast<double>(inner), 4.0 * static_cast<double>(n * inner), {x}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t rb, int64_t re) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kAxisSoftmax;
    v.operands = {x, y};
    using P = format::params::AxisSoftmax;
    v.params = format::make_params<P>({{P::kKind, kind},
                                       {P::kOuter, outer},
                                       {P::kN, n},
                                       {P::kInner, inner},
                                       {P::kBegin, rb * inner},
                                       {P::kEnd, re * inner}});
    v.compute_cycles = per_line * static_cast<double>((re - rb) * inner);
    v.reads = {lowering::flat_region(x, rb * n * inner, re * n * inner)};
    v.writes = {lowering::flat_region(y, rb * n * inner, re * n * inner)};
    return v;
  });
  return Status();
}

} // namespace

const OpDefinition& axis_softmax_op() {
  static const OpDefinition def{{ir::OpKind::kAxisSoftmax, 1, infer_axis_softmax, grad_axis_softmax},
                                lower_axis_softmax};
  return def;
}

} // namespace ipu::ops
