// Relu, Sigmoid, Tanh, Softmax and their gradients.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::Op;
using ir::OpKind;

namespace {

using format::ActivationKind;
using lowering::LowerContext;

Status infer_same(const ir::Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  const ir::TensorType& x = g.value(op.inputs[0]).type;
  if (x.dtype != ir::DType::kFloat32) return invalid_argument("expects float32, got " + x.to_string());
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    if (g.value(op.inputs[i]).type.shape != x.shape) return invalid_argument("operand shapes differ");
  }
  out.push_back(x);
  return Status();
}

ActivationKind activation_of(OpKind kind) {
  switch (kind) {
  case OpKind::kSigmoid:
    return ActivationKind::kSigmoid;
  case OpKind::kTanh:
    return ActivationKind::kTanh;
  default:
    return ActivationKind::kRelu;
  }
}

// The gradient is expressed through the output, so the input need not stay alive.
Status grad_activation(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0 || !ctx.needs_gradient(op.inputs[0])) return Status();
  ir::ActivationGradAttrs attrs;
  attrs.activation = activation_of(op.kind);
  IPU_ASSIGN_OR_RETURN(int id,
                       ctx.graph().add_op(OpKind::kActivationGrad, op.name + "/grad", {op.outputs[0], dy},
                                          attrs, ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(op.inputs[0], ctx.graph().op(id).outputs[0]);
}

// Activation and ActivationGrad vertices: the two codelets share one layout.
void emit_elementwise(LowerContext& ctx, const Op& op, ActivationKind kind, format::Codelet codelet) {
  using P = format::params::Activation;
  static_assert(format::same_layout<P, format::params::ActivationGrad>);
  const int64_t n = ctx.graph().value(op.outputs[0]).type.elements();
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t y = ctx.tensor(op.outputs[0]);
  const double per_element =
      activation_cycles_per_element(ctx.target().cycles, kind, codelet == format::Codelet::kActivationGrad);
  const lowering::ElementwiseWork work{n, 1, per_element, 4.0 * static_cast<double>(inputs.size()), inputs};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = codelet;
    v.operands = inputs;
    v.operands.push_back(y);
    v.params =
        format::make_params<P>({{P::kKind, static_cast<int64_t>(kind)}, {P::kBegin, begin}, {P::kEnd, end}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    for (uint32_t in : inputs)
      v.reads.push_back(lowering::flat_region(in, begin, end));
    v.writes = {lowering::flat_region(y, begin, end)};
    return v;
  });
}

Status lower_activation(LowerContext& ctx, const Op& op) {
  emit_elementwise(ctx, op, activation_of(op.kind), format::Codelet::kActivation);
  return Status();
}

Status lower_activation_grad(LowerContext& ctx, const Op& op) {
  emit_elementwise(ctx, op, op.attrs<ir::ActivationGradAttrs>().activation, format::Codelet::kActivationGrad);
  return Status();
}

// Softmax over the last axis of a rank-2 input.
Status infer_softmax(const ir::Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  if (g.value(op.inputs[0]).type.shape.size() != 2) {
    return invalid_argument("expects a rank-2 input [batch, classes], got " +
                            g.value(op.inputs[0]).type.to_string());
  }
  return infer_same(g, op, out);
}

Status grad_softmax(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0 || !ctx.needs_gradient(op.inputs[0])) return Status();
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kSoftmaxGrad, op.name + "/grad",
                                                  {op.outputs[0], dy}, {}, ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(op.inputs[0], ctx.graph().op(id).outputs[0]);
}

// Softmax and SoftmaxGrad vertices: the two codelets share one layout.
Status lower_rows(LowerContext& ctx, const Op& op, format::Codelet codelet) {
  using P = format::params::Softmax;
  static_assert(format::same_layout<P, format::params::SoftmaxGrad>);
  const auto& shape = ctx.graph().value(op.outputs[0]).type.shape;
  const int64_t M = shape[0], C = shape[1];
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t y = ctx.tensor(op.outputs[0]);
  // The gradient, y·(dy − Σ dy·y), is a multiply, a sum, a subtract and a multiply per element.
  const double per_element = codelet == format::Codelet::kSoftmax
                                 ? softmax_cycles_per_element(ctx.target().cycles)
                                 : 4.0 / ctx.target().cycles.vector_flops_per_cycle;
  const double per_row = static_cast<double>(C) * per_element;
  const lowering::ElementwiseWork work{
      M, C, per_row, 4.0 * static_cast<double>(C * static_cast<int64_t>(inputs.size())), inputs};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t rb, int64_t re) {
    lowering::VertexSpec v;
    v.codelet = codelet;
    v.operands = inputs;
    v.operands.push_back(y);
    v.params = format::make_params<P>({{P::kM, M}, {P::kC, C}, {P::kRowBegin, rb}, {P::kRowEnd, re}});
    v.compute_cycles = per_row * static_cast<double>(re - rb);
    for (uint32_t in : inputs)
      v.reads.push_back(lowering::flat_region(in, rb * C, re * C));
    v.writes = {lowering::flat_region(y, rb * C, re * C)};
    return v;
  });
  return Status();
}

Status lower_softmax(LowerContext& ctx, const Op& op) {
  return lower_rows(ctx, op, format::Codelet::kSoftmax);
}
Status lower_softmax_grad(LowerContext& ctx, const Op& op) {
  return lower_rows(ctx, op, format::Codelet::kSoftmaxGrad);
}

} // namespace

const OpDefinition& relu_op() {
  static const OpDefinition def{{OpKind::kRelu, 1, infer_same, grad_activation}, lower_activation};
  return def;
}
const OpDefinition& sigmoid_op() {
  static const OpDefinition def{{OpKind::kSigmoid, 1, infer_same, grad_activation}, lower_activation};
  return def;
}
const OpDefinition& tanh_op() {
  static const OpDefinition def{{OpKind::kTanh, 1, infer_same, grad_activation}, lower_activation};
  return def;
}
const OpDefinition& activation_grad_op() {
  static const OpDefinition def{{OpKind::kActivationGrad, 2, infer_same, nullptr}, lower_activation_grad};
  return def;
}
const OpDefinition& softmax_op() {
  static const OpDefinition def{{OpKind::kSoftmax, 1, infer_softmax, grad_softmax}, lower_softmax};
  return def;
}
const OpDefinition& softmax_grad_op() {
  static const OpDefinition def{{OpKind::kSoftmaxGrad, 2, infer_softmax, nullptr}, lower_softmax_grad};
  return def;
}

} // namespace ipu::ops
