// Gradient clipping by global norm (Keras's global_clipnorm, torch.nn.utils.clip_grad_norm_;
// docs/training.md): SquaredNorm (a stage's share of the squared norm, a tiled reduction),
// ClipFactor (the factor from every stage's share) and ScaleGradient (the factor applied to a
// gradient in place). compiler/passes/clip_gradients.h builds them.
#include <algorithm>

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::Graph;
using ir::Op;

namespace {

using lowering::LowerContext;

Status check_float32(const Graph& g, const Op& op) {
  for (int in : op.inputs) {
    if (g.value(in).type.dtype != ir::DType::kFloat32)
      return invalid_argument("expects float32 inputs, got " + g.value(in).type.to_string());
  }
  return Status();
}

// Inputs: any number of float32 tensors (the gradients of one stage's weights). Output: [1].
Status infer_squared_norm(const Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  if (op.inputs.empty()) return invalid_argument("expects at least one input");
  IPU_RETURN_IF_ERROR(check_float32(g, op));
  out.push_back({ir::DType::kFloat32, {1}});
  return Status();
}

// Each input is split over tiles as an elementwise op is; every vertex writes the sum of its
// slice's squares into its own share of a partials temporary, and one Reduce vertex in the next
// compute set adds the shares in order (emit_sum_of_shares): the same sum, bit for bit, however
// the gradients were accumulated or all-reduced, since the split depends on the shapes alone.
Status lower_squared_norm(LowerContext& ctx, const Op& op) {
  const float scale = op.attrs<ir::SquaredNormAttrs>().scale;
  const double per_element = 2.0 / ctx.target().cycles.vector_flops_per_cycle;
  struct Share {
    uint32_t tensor;
    int64_t begin, end;
  };
  // The one Reduce vertex receives every share: a stage of many weights (BERT's ~200) would send
  // it one per tile per weight, so each input gets at most its part of the IPU's tiles, by size.
  int64_t total = 0;
  for (int in : op.inputs)
    total += ctx.graph().value(in).type.elements();
  const auto tiles_per_ipu = static_cast<int64_t>(ctx.target().tiles_per_ipu);
  std::vector<Share> shares;
  for (int in : op.inputs) {
    const int64_t n = ctx.graph().value(in).type.elements();
    const lowering::Split split = lowering::plan_split(n, per_element, 4.0, 8.0, ctx.target(), tiles_per_ipu);
    const int64_t parts =
        std::max<int64_t>(1, std::min(split.parts, tiles_per_ipu * n / std::max<int64_t>(1, total)));
    const int64_t chunk = lowering::ceil_div(n, parts);
    for (int64_t begin = 0; begin < n; begin += chunk)
      shares.push_back({ctx.tensor(in), begin, std::min(n, begin + chunk)});
  }
  const auto count = static_cast<int64_t>(shares.size());
  const uint32_t partials = ctx.add_temporary(op.name + "/partials", {count});
  const std::vector<uint32_t> tiles = ctx.take_tiles(count);
  for (int64_t s = 0; s < count; ++s) {
    const Share& share = shares[static_cast<size_t>(s)];
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kSumOfSquares;
    v.operands = {share.tensor, partials};
    using P = format::params::SumOfSquares;
    using F = format::fparams::SumOfSquares;
    v.params = format::make_params<P>({{P::kBegin, share.begin}, {P::kEnd, share.end}, {P::kShare, s}});
    v.fparams = format::make_fparams<F>({{F::kScale, scale}});
    v.compute_cycles = per_element * static_cast<double>(share.end - share.begin);
    v.reads = {lowering::flat_region(share.tensor, share.begin, share.end)};
    v.writes = {lowering::flat_region(partials, s, s + 1)};
    ctx.emit(tiles[static_cast<size_t>(s)], std::move(v));
  }
  emit_sum_of_shares(ctx, partials, ctx.tensor(op.outputs[0]), count, 1, lowering::Split{1, 1},
                     tiles.front());
  return Status();
}

// Input: the squared norms of every stage's gradients, [stages]. Output: the factor, [1].
Status infer_clip_factor(const Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  IPU_RETURN_IF_ERROR(check_float32(g, op));
  if (g.value(op.inputs[0]).type.shape.size() != 1)
    return invalid_argument("expects the squared norms as a vector, got " +
                            g.value(op.inputs[0]).type.to_string());
  if (!(op.attrs<ir::ClipFactorAttrs>().clip_norm > 0.0f))
    return invalid_argument("the clip norm must be positive");
  out.push_back({ir::DType::kFloat32, {1}});
  return Status();
}

// One vertex: a handful of flops, on one tile.
Status lower_clip_factor(LowerContext& ctx, const Op& op) {
  const int64_t stages = ctx.graph().value(op.inputs[0]).type.elements();
  const uint32_t squares = ctx.tensor(op.inputs[0]), factor = ctx.tensor(op.outputs[0]);
  lowering::VertexSpec v;
  v.codelet = format::Codelet::kClipFactor;
  v.operands = {squares, factor};
  using P = format::params::ClipFactor;
  using F = format::fparams::ClipFactor;
  v.params = format::make_params<P>({{P::kStages, stages}});
  v.fparams = format::make_fparams<F>({{F::kClipNorm, op.attrs<ir::ClipFactorAttrs>().clip_norm}});
  v.compute_cycles = static_cast<double>(stages + 4) / ctx.target().cycles.vector_flops_per_cycle;
  v.reads = {lowering::flat_region(squares, 0, stages)};
  v.writes = {lowering::flat_region(factor, 0, 1)};
  ctx.emit(ctx.take_tiles(1)[0], std::move(v));
  return Status();
}

// Inputs: a gradient (or accumulator) and the factor [1]. Output: the gradient scaled, in place:
// it shares the input's tensor, so the update that reads it (and an accumulator's clearing)
// touches the same memory, and the update runs in a later compute set than the scaling.
Status infer_scale_gradient(const Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  IPU_RETURN_IF_ERROR(check_float32(g, op));
  if (g.value(op.inputs[1]).type.elements() != 1) return invalid_argument("the factor must be a scalar");
  out.push_back(g.value(op.inputs[0]).type);
  return Status();
}

// Declares reads only: a write would remap the gradient's tensor, which its producer (or the
// accumulator's linear mapping) has placed; the optimizers' updates write in place the same way.
Status lower_scale_gradient(LowerContext& ctx, const Op& op) {
  ctx.alias(op.outputs[0], op.inputs[0]);
  const int64_t n = ctx.graph().value(op.inputs[0]).type.elements();
  const uint32_t x = ctx.tensor(op.inputs[0]), factor = ctx.tensor(op.inputs[1]);
  const double per_element = 1.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_where_operands_live(ctx, {n, 1, per_element, 8.0, {x}}, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kScaleInPlace;
    v.operands = {x, factor};
    using P = format::params::ScaleInPlace;
    v.params = format::make_params<P>({{P::kBegin, begin}, {P::kEnd, end}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads = {lowering::flat_region(x, begin, end), lowering::flat_region(factor, 0, 1)};
    return v;
  });
  return Status();
}

} // namespace

const OpDefinition& squared_norm_op() {
  static const OpDefinition def{{ir::OpKind::kSquaredNorm, ir::kVariadic, infer_squared_norm, nullptr},
                                lower_squared_norm};
  return def;
}
const OpDefinition& clip_factor_op() {
  static const OpDefinition def{{ir::OpKind::kClipFactor, 1, infer_clip_factor, nullptr}, lower_clip_factor};
  return def;
}
const OpDefinition& scale_gradient_op() {
  static const OpDefinition def{{ir::OpKind::kScaleGradient, 2, infer_scale_gradient, nullptr},
                                lower_scale_gradient};
  return def;
}

} // namespace ipu::ops
