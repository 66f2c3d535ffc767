// MaxPool and AveragePool over NCHW values (global pooling is a window over the whole plane) and
// their gradients. Every vertex owns whole planes (n, c).
#include "compiler/ir/op_registry.h"
#include "compiler/ir/window_geometry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"

namespace ipu::ir {
namespace {

using lowering::LowerContext;

Status infer_pool(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() != 4) return invalid_argument("expects an NCHW input, got " + x.to_string());
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                       window_output_shape(x, op.attrs<WindowAttrs>(), x.shape[1]));
  out.push_back({DType::kFloat32, shape});
  return Status();
}

// MaxPoolGrad(X, dY) and AveragePoolGrad(dY) produce dX of their shape; dY must be the pooled shape.
Status infer_pool_grad(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType x{DType::kFloat32, op.attrs<WindowGradAttrs>().shape};
  if (x.shape.size() != 4) return invalid_argument("expects an NCHW shape");
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> y,
                       window_output_shape(x, op.attrs<WindowGradAttrs>().window, x.shape[1]));
  if (g.value(op.inputs.back()).type.shape != y)
    return invalid_argument("dY does not match the pooled shape");
  out.push_back(x);
  return Status();
}

Status grad_pool(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  WindowGradAttrs attrs;
  attrs.window = op.attrs<WindowAttrs>();
  attrs.shape = ctx.graph().value(x).type.shape;
  // MaxPool routes dY to the window's maximum, so it reads X again; AveragePool needs only dY.
  const bool max = op.kind == OpKind::kMaxPool;
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(max ? OpKind::kMaxPoolGrad : OpKind::kAveragePoolGrad,
                                                  op.name + "/grad",
                                                  max ? std::vector<int>{x, dy} : std::vector<int>{dy}, attrs,
                                                  Phase::kBackward, op.stage));
  return ctx.add_gradient(x, ctx.graph().op(id).outputs[0]);
}

format::Codelet codelet_of(OpKind kind) {
  switch (kind) {
  case OpKind::kMaxPool:
    return format::Codelet::kMaxPool;
  case OpKind::kMaxPoolGrad:
    return format::Codelet::kMaxPoolGrad;
  case OpKind::kAveragePool:
    return format::Codelet::kAveragePool;
  default:
    return format::Codelet::kAveragePoolGrad;
  }
}

// Planes [begin, end) per vertex, each costing one compare-or-add per tap of every output.
Status lower_pool(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const bool forward = op.kind == OpKind::kMaxPool || op.kind == OpKind::kAveragePool;
  const bool average = op.kind == OpKind::kAveragePool || op.kind == OpKind::kAveragePoolGrad;
  const std::vector<int64_t>& x =
      forward ? g.value(op.inputs[0]).type.shape : op.attrs<WindowGradAttrs>().shape;
  const std::vector<int64_t>& y =
      forward ? g.value(op.outputs[0]).type.shape : g.value(op.inputs.back()).type.shape;
  const WindowAttrs& win = window_of(op);
  const int64_t in_plane = x[2] * x[3], out_plane = y[2] * y[3];
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t out = ctx.tensor(op.outputs[0]);
  const double per_plane = static_cast<double>(out_plane * win.kernel[0] * win.kernel[1]) /
                           ctx.target().cycles.vector_flops_per_cycle;
  const double bytes = 4.0 * static_cast<double>(in_plane + out_plane);
  lowering::lower_split(ctx, x[0] * x[1], per_plane, bytes, [&](uint32_t tile, int64_t pb, int64_t pe) {
    lowering::VertexSpec v;
    v.codelet = codelet_of(op.kind);
    v.operands = inputs;
    v.operands.push_back(out);
    if (average) {
      using P = format::params::AveragePool; // AveragePoolGrad's layout is the same
      static_assert(format::same_layout<P, format::params::AveragePoolGrad>);
      v.params = format::make_params<P>(
          window_params(x, y, win),
          {{P::kCountIncludePad, win.count_include_pad}, {P::kPlaneBegin, pb}, {P::kPlaneEnd, pe}});
    } else {
      using P = format::params::MaxPool; // MaxPoolGrad's layout is the same
      static_assert(format::same_layout<P, format::params::MaxPoolGrad>);
      v.params = format::make_params<P>(window_params(x, y, win), {{P::kPlaneBegin, pb}, {P::kPlaneEnd, pe}});
    }
    v.compute_cycles = per_plane * static_cast<double>(pe - pb);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int64_t plane = g.value(op.inputs[i]).type.shape == x ? in_plane : out_plane;
      v.reads.push_back(lowering::flat_region(inputs[i], pb * plane, pe * plane));
    }
    const int64_t plane = forward ? out_plane : in_plane;
    v.writes = {lowering::flat_region(out, pb * plane, pe * plane)};
    ctx.emit(tile, std::move(v));
  });
  return Status();
}

} // namespace

const OpDefinition& max_pool_op() {
  static const OpDefinition def{{OpKind::kMaxPool, 1, infer_pool, grad_pool}, lower_pool};
  return def;
}
const OpDefinition& max_pool_grad_op() {
  static const OpDefinition def{{OpKind::kMaxPoolGrad, 2, infer_pool_grad, nullptr}, lower_pool};
  return def;
}
const OpDefinition& average_pool_op() {
  static const OpDefinition def{{OpKind::kAveragePool, 1, infer_pool, grad_pool}, lower_pool};
  return def;
}
const OpDefinition& average_pool_grad_op() {
  static const OpDefinition def{{OpKind::kAveragePoolGrad, 1, infer_pool_grad, nullptr}, lower_pool};
  return def;
}

} // namespace ipu::ir
