// LayerNorm: normalization over the last axis with a scale and a shift. Formed only by
// passes/fuse_layer_norm.h after autodiff, so it has no gradient rule: a training graph's
// gradients read the parts it would replace, which then stay unfused.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::TensorType;

namespace {

using lowering::LowerContext;

// Y = LayerNorm(X, γ, β) over X's last axis of n: X float32 of rank ≥ 1, γ and β n floats each.
Status infer_layer_norm(const ir::Graph& g, const ir::Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.dtype != ir::DType::kFloat32 || x.shape.empty())
    return invalid_argument("expects a float32 tensor, got " + x.to_string());
  for (int i : {1, 2}) {
    const TensorType& p = g.value(op.inputs[static_cast<size_t>(i)]).type;
    if (p.dtype != ir::DType::kFloat32 || p.elements() != x.shape.back()) {
      return invalid_argument(std::string(i == 1 ? "scale " : "shift ") + p.to_string() +
                              " does not match the last axis of " + x.to_string());
    }
  }
  out.push_back(x);
  return Status();
}

Status lower_layer_norm(LowerContext& ctx, const ir::Op& op) {
  const TensorType& type = ctx.graph().value(op.inputs[0]).type;
  const int64_t n = type.shape.back(), rows = type.elements() / n;
  const uint32_t x = ctx.tensor(op.inputs[0]), gamma = ctx.tensor(op.inputs[1]),
                 beta = ctx.tensor(op.inputs[2]);
  const uint32_t y = ctx.tensor(op.outputs[0]);
  // Two passes to reduce, two to normalize, scale and shift.
  const double per_row = 6.0 * static_cast<double>(n) / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_where_operands_live(
      ctx, {rows, n, per_row, 4.0 * static_cast<double>(n), {x}}, [&](int64_t rb, int64_t re) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kLayerNorm;
        v.operands = {x, gamma, beta, y};
        using P = format::params::LayerNorm;
        using F = format::fparams::LayerNorm;
        v.params =
            format::make_params<P>({{P::kRows, rows}, {P::kN, n}, {P::kRowBegin, rb}, {P::kRowEnd, re}});
        v.fparams = format::make_fparams<F>({{F::kEpsilon, op.attrs<ir::NormAttrs>().epsilon}});
        v.compute_cycles = per_row * static_cast<double>(re - rb);
        v.reads = {lowering::flat_region(x, rb * n, re * n), lowering::flat_region(gamma, 0, n),
                   lowering::flat_region(beta, 0, n)};
        v.writes = {lowering::flat_region(y, rb * n, re * n)};
        return v;
      });
  return Status();
}

} // namespace

const OpDefinition& layer_norm_op() {
  static const OpDefinition def{{ir::OpKind::kLayerNorm, 3, infer_layer_norm, nullptr}, lower_layer_norm};
  return def;
}

} // namespace ipu::ops
