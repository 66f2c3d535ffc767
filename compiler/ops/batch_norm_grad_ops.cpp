#include "compiler/ops/batch_norm_grad_ops.h"

#include <algorithm>

#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/channel_reduce_plan.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::Graph;
using ir::NormAttrs;
using ir::Op;
using ir::OpKind;

namespace {

using lowering::LowerContext;

// X and dY of one shape [N, C, ...], then per-channel inputs from `first` on.
Status expect_batch_norm_operands(const Graph& g, const Op& op, size_t first) {
  const ir::TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 2 || g.value(op.inputs[1]).type.shape != x.shape)
    return invalid_argument("expects X and dY of one shape [N, C, ...]");
  for (size_t i = first; i < op.inputs.size(); ++i) {
    if (g.value(op.inputs[i]).type.shape != std::vector<int64_t>{x.shape[1]}) {
      return invalid_argument("expects one value per channel of " + x.to_string() + ", got " +
                              g.value(op.inputs[i]).type.to_string());
    }
  }
  return Status();
}

// BatchNormGradStats(X, dY, mean, var) → dscale [C], dB [C].
Status infer_batch_norm_grad_stats(const Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  IPU_RETURN_IF_ERROR(expect_batch_norm_operands(g, op, 2));
  const int64_t channels = g.value(op.inputs[0]).type.shape[1];
  out.push_back({ir::DType::kFloat32, {channels}});
  out.push_back({ir::DType::kFloat32, {channels}});
  return Status();
}

// Blocks of channels × samples × positions, each summing dY·x̂ and dY (x̂: a subtraction and a
// multiplication; then a multiplication and two additions: 5 vector operations per element, as
// poplin's normParamGradients whitens, multiplies and reduces both), into [parts, C] partials that
// a Reduce adds up in the compute set after, as ChannelSum's.
Status lower_batch_norm_grad_stats(LowerContext& ctx, const Op& op) {
  ChannelReduceWork w = channel_reduce_work(ctx.graph().value(op.inputs[0]).type.shape);
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t dscale = ctx.tensor(op.outputs[0]), dbias = ctx.tensor(op.outputs[1]);
  w.inputs = 2;
  w.element_bytes =
      ctx.executable().tensors(static_cast<int>(inputs[1])).dtype() == format::FLOAT16 ? 2.0 : 4.0;
  w.ops_per_element = 5.0;
  w.values_per_part = 2;
  const auto& cycles = ctx.target().cycles;
  const auto block_reads = [&](const ChannelBlock& block) {
    std::vector<lowering::Region> reads;
    for (uint32_t t : {inputs[0], inputs[1]}) {
      for (const lowering::Region& r :
           channel_block_regions(t, w, block.cb, block.ce, block.nb, block.ne, block.sb, block.se))
        reads.push_back(r);
    }
    reads.push_back(lowering::flat_region(inputs[2], block.cb, block.ce));
    reads.push_back(lowering::flat_region(inputs[3], block.cb, block.ce));
    return reads;
  };
  const PlacedChannelReduce placed = place_channel_reduce(ctx, w, {inputs[0], inputs[1]}, block_reads);
  const int64_t parts = placed.plan.parts();
  const uint32_t scale_target =
      parts > 1 ? ctx.add_temporary(op.name + "/scale_partials", {parts, w.C}) : dscale;
  const uint32_t bias_target =
      parts > 1 ? ctx.add_temporary(op.name + "/bias_partials", {parts, w.C}) : dbias;
  for (size_t i = 0; i < placed.blocks.size(); ++i) {
    const ChannelBlock& block = placed.blocks[i];
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kBatchNormGradStats;
    v.operands = inputs;
    v.operands.push_back(scale_target);
    v.operands.push_back(bias_target);
    using F = format::fparams::BatchNormGradStats;
    v.params = channel_block_params(w, block, parts);
    v.fparams = format::make_fparams<F>({{F::kEpsilon, op.attrs<NormAttrs>().epsilon}});
    v.compute_cycles =
        w.ops_per_element * static_cast<double>(block.elements()) / cycles.vector_flops_per_cycle;
    v.reads = block_reads(block);
    const int64_t row = block.part * w.C;
    v.writes = {lowering::flat_region(scale_target, row + block.cb, row + block.ce),
                lowering::flat_region(bias_target, row + block.cb, row + block.ce)};
    ctx.emit(placed.tiles[i], std::move(v));
  }
  if (parts == 1) return Status();
  const std::vector<uint32_t> tiles = placed.distinct_tiles();
  const lowering::Split reduce = lowering::plan_split(
      w.C, static_cast<double>(parts) / cycles.partial_sum_flops_per_cycle, 4.0 * static_cast<double>(parts),
      4.0 * static_cast<double>(parts + 1), ctx.target(), static_cast<int64_t>(tiles.size()));
  emit_sum_of_shares(ctx, scale_target, dscale, parts, w.C, reduce, tiles.front());
  emit_sum_of_shares(ctx, bias_target, dbias, parts, w.C, reduce, tiles.front());
  return Status();
}

// BatchNormTrainGradInput(X, dY, scale, mean, var, dscale, dB) → dX like X.
Status infer_batch_norm_train_grad_input(const Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  IPU_RETURN_IF_ERROR(expect_batch_norm_operands(g, op, 2));
  out.push_back(g.value(op.inputs[0]).type);
  return Status();
}

// Flat ranges of dX, each reading its range of X and dY and the per-channel values, where X or dY
// lies when that costs less; costed as poplin's normGradients and normStatisticsGradients
// (batch_norm_cycles_per_element).
Status lower_batch_norm_train_grad_input(LowerContext& ctx, const Op& op) {
  const ChannelReduceWork w = channel_reduce_work(ctx.graph().value(op.inputs[0]).type.shape);
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t dx = ctx.tensor(op.outputs[0]);
  const bool half = ctx.executable().tensors(static_cast<int>(inputs[1])).dtype() == format::FLOAT16;
  const double per_element =
      batch_norm_cycles_per_element(ctx.target().cycles, BatchNormPass::kTrainGradientInput, half, w.C);
  const lowering::ElementwiseWork work{w.N * w.C * w.S, 1, per_element, 12.0, {inputs[0], inputs[1]}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kBatchNormTrainGradInput;
    v.operands = inputs;
    v.operands.push_back(dx);
    using P = format::params::BatchNormTrainGradInput;
    using F = format::fparams::BatchNormTrainGradInput;
    v.params = format::make_params<P>(
        {{P::kN, w.N}, {P::kC, w.C}, {P::kS, w.S}, {P::kBegin, begin}, {P::kEnd, end}});
    v.fparams = format::make_fparams<F>({{F::kEpsilon, op.attrs<NormAttrs>().epsilon}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads = {lowering::flat_region(inputs[0], begin, end), lowering::flat_region(inputs[1], begin, end)};
    const auto [cb, ce] = channels_spanned(w, begin, end);
    for (size_t i = 2; i < inputs.size(); ++i)
      v.reads.push_back(lowering::flat_region(inputs[i], cb, ce));
    v.writes = {lowering::flat_region(dx, begin, end)};
    return v;
  });
  return Status();
}

} // namespace

bool normalises_by_batch_statistics(const Graph& graph, const Op& op) {
  const int producer = graph.value(op.inputs[3]).producer;
  if (producer < 0) return false;
  const Op& statistics = graph.op(producer);
  return statistics.kind == OpKind::kBatchStatistics && statistics.inputs[0] == op.inputs[0] &&
         statistics.outputs[0] == op.inputs[3] && statistics.outputs[1] == op.inputs[4];
}

Status grad_batch_norm_by_batch_statistics(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  const int x = op.inputs[0], scale = op.inputs[1], bias = op.inputs[2], mean = op.inputs[3],
            var = op.inputs[4];
  NormAttrs attrs;
  attrs.epsilon = op.attrs<NormAttrs>().epsilon;
  const bool wants_x = ctx.needs_gradient(x);
  if (!wants_x && !ctx.needs_gradient(scale) && !ctx.needs_gradient(bias)) return Status();
  IPU_ASSIGN_OR_RETURN(int sums,
                       ctx.graph().add_op(OpKind::kBatchNormGradStats, op.name + "/grad_stats",
                                          {x, dy, mean, var}, attrs, ir::Phase::kBackward, op.stage));
  const int dscale = ctx.graph().op(sums).outputs[0], dbias = ctx.graph().op(sums).outputs[1];
  ctx.graph().value(dscale).keeps_float32 = true;
  ctx.graph().value(dbias).keeps_float32 = true;
  if (ctx.needs_gradient(scale)) IPU_RETURN_IF_ERROR(ctx.add_gradient(scale, dscale));
  if (ctx.needs_gradient(bias)) IPU_RETURN_IF_ERROR(ctx.add_gradient(bias, dbias));
  if (!wants_x) return Status();
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kBatchNormTrainGradInput, op.name + "/grad_input",
                                                  {x, dy, scale, mean, var, dscale, dbias}, attrs,
                                                  ir::Phase::kBackward, op.stage));
  return ctx.add_gradient(x, ctx.graph().op(id).outputs[0]);
}

const OpDefinition& batch_norm_grad_stats_op() {
  static const OpDefinition def{{OpKind::kBatchNormGradStats, 4, infer_batch_norm_grad_stats, nullptr},
                                lower_batch_norm_grad_stats};
  return def;
}
const OpDefinition& batch_norm_train_grad_input_op() {
  static const OpDefinition def{
      {OpKind::kBatchNormTrainGradInput, 7, infer_batch_norm_train_grad_input, nullptr},
      lower_batch_norm_train_grad_input};
  return def;
}

} // namespace ipu::ops
