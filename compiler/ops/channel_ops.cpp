// The per-channel ops around Conv: ChannelSum (bias gradients) and ChannelAffine (an inference
// BatchNormalization folded to a scale and shift).
#include <algorithm>
#include <array>
#include <cmath>

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/conv_grid.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::Op;
using ir::TensorType;

namespace {

using lowering::LowerContext;

// [N, C, S...] viewed as N × C × S.
struct ChannelDims {
  int64_t N, C, S;
};
ChannelDims channel_dims(const std::vector<int64_t>& shape) {
  int64_t s = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    s *= shape[i];
  return {shape[0], shape[1], s};
}

// ChannelSum: y [C] = X [N, C, ...] summed over every axis but the channel axis.
Status infer_channel_sum(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 2) return invalid_argument("expects [N, C, ...], got " + x.to_string());
  out.push_back({ir::DType::kFloat32, {x.shape[1]}});
  return Status();
}

// Channels × samples: a vertex receives its channels of its samples. Split over samples, each
// vertex sums its share into a [shares, C] temporary and a '<level>/reduce' compute set adds the
// shares (Reduce, in order, in double precision): within float rounding of the unsplit sum, which
// adds every sample in one double. A first convolution's bias at 112×112 and batch 16 would
// otherwise have one vertex receive 802,816 bytes of one channel.
Status lower_channel_sum(LowerContext& ctx, const Op& op) {
  const ChannelDims d = channel_dims(ctx.graph().value(op.inputs[0]).type.shape);
  const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
  const auto& cycles = ctx.target().cycles;
  const auto C = static_cast<double>(d.C), N = static_cast<double>(d.N), S = static_cast<double>(d.S);
  const auto [channels, samples] =
      plan_grid<2>({d.C, d.N}, ctx.target(), [&](const std::array<double, 2>& chunk) {
        const double cc = chunk[0], nb = chunk[1], shares = std::ceil(N / nb);
        const double in_bytes = 4.0 * cc * nb * S;
        return GridCost{cc * nb * S / cycles.vector_flops_per_cycle, in_bytes, in_bytes + 4.0 * cc,
                        reduce_cycles(ctx.target(), shares, C)};
      });
  const int64_t shares = samples.parts;
  const uint32_t target = shares > 1 ? ctx.add_temporary(op.name + "/partials", {shares, d.C}) : y;
  std::vector<uint32_t> tiles = ctx.take_tiles(channels.parts * shares);
  size_t next = 0;
  for (int64_t i = 0; i < channels.parts; ++i) {
    const int64_t cb = i * channels.chunk, ce = std::min(d.C, cb + channels.chunk);
    for (int64_t part = 0; part < shares; ++part) {
      const int64_t nb = part * samples.chunk, ne = std::min(d.N, nb + samples.chunk);
      lowering::VertexSpec v;
      v.codelet = format::Codelet::kChannelSum;
      v.operands = {x, target};
      using P = format::params::ChannelSum;
      v.params = format::make_params<P>({{P::kN, d.N},
                                         {P::kC, d.C},
                                         {P::kS, d.S},
                                         {P::kCBegin, cb},
                                         {P::kCEnd, ce},
                                         {P::kNBegin, nb},
                                         {P::kNEnd, ne},
                                         {P::kParts, shares},
                                         {P::kPart, part}});
      // Unsplit over samples, the share is left out, as vertices were before it existed.
      if (shares == 1) v.params.resize(P::kNBegin);
      v.compute_cycles = static_cast<double>((ce - cb) * (ne - nb) * d.S) / cycles.vector_flops_per_cycle;
      v.reads = {lowering::block_region(x, nb, ne, cb * d.S, ce * d.S, d.C * d.S)};
      v.writes = {lowering::flat_region(target, part * d.C + cb, part * d.C + ce)};
      ctx.emit(tiles[next++], std::move(v));
    }
  }
  if (shares == 1) return Status();
  const lowering::Split reduce =
      lowering::plan_reduce_of_shares(shares, d.C, ctx.target(), static_cast<int64_t>(tiles.size()));
  emit_sum_of_shares(ctx, target, y, shares, d.C, reduce, tiles.front());
  return Status();
}

// ChannelAffine: Y = X [N, C, ...] · scale [C] + shift [C] per channel.
Status infer_channel_affine(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 2) return invalid_argument("expects [N, C, ...], got " + x.to_string());
  for (int i : {1, 2}) {
    if (g.value(op.inputs[static_cast<size_t>(i)]).type.shape != std::vector<int64_t>{x.shape[1]}) {
      return invalid_argument("scale and shift must have one value per channel of " + x.to_string());
    }
  }
  out.push_back(x);
  return Status();
}

Status lower_channel_affine(LowerContext& ctx, const Op& op) {
  const ChannelDims d = channel_dims(ctx.graph().value(op.inputs[0]).type.shape);
  const uint32_t x = ctx.tensor(op.inputs[0]), scale = ctx.tensor(op.inputs[1]),
                 shift = ctx.tensor(op.inputs[2]), y = ctx.tensor(op.outputs[0]);
  const double per_element = 2.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(
      ctx, d.N * d.C * d.S, per_element, 4.0, [&](uint32_t tile, int64_t begin, int64_t end) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kChannelAffine;
        v.operands = {x, scale, shift, y};
        using P = format::params::ChannelAffine;
        v.params = format::make_params<P>(
            {{P::kN, d.N}, {P::kC, d.C}, {P::kS, d.S}, {P::kBegin, begin}, {P::kEnd, end}});
        v.compute_cycles = per_element * static_cast<double>(end - begin);
        v.reads = {lowering::flat_region(x, begin, end), lowering::flat_region(scale, 0, d.C),
                   lowering::flat_region(shift, 0, d.C)};
        v.writes = {lowering::flat_region(y, begin, end)};
        ctx.emit(tile, std::move(v));
      });
  return Status();
}

} // namespace

const OpDefinition& channel_sum_op() {
  static const OpDefinition def{{ir::OpKind::kChannelSum, 1, infer_channel_sum, nullptr}, lower_channel_sum};
  return def;
}
// Not differentiable: it only carries BatchNormalization folded to constants, which training
// refuses (compiler/frontend/onnx_ops_conv.cpp).
const OpDefinition& channel_affine_op() {
  static const OpDefinition def{{ir::OpKind::kChannelAffine, 3, infer_channel_affine, nullptr},
                                lower_channel_affine};
  return def;
}

} // namespace ipu::ops
