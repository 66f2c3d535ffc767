// Batch normalization's statistics (ONNX BatchNormalization, training_mode 1; docs/onnx.md):
// BatchStatistics, the per-channel mean and population variance of a batch, which the BatchNorm
// op then normalises with, and RunningStatistics, the in-place update of the running mean and
// variance that evaluate and predict normalise with.
#include <algorithm>
#include <cmath>

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/channel_reduce_plan.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::Op;

namespace {

using lowering::LowerContext;

Status expect_channels(const ir::Graph& g, const Op& op, size_t first, size_t last, int64_t channels) {
  for (size_t i = first; i <= last; ++i) {
    if (g.value(op.inputs[i]).type.shape != std::vector<int64_t>{channels}) {
      return invalid_argument("expects one value per channel (" + std::to_string(channels) + "), got " +
                              g.value(op.inputs[i]).type.to_string());
    }
  }
  return Status();
}

// BatchStatistics(X [N, C, ...]) → mean [C], var [C] (population) over every axis but the
// channel axis; with (running_mean, running_var, mode) as inputs 1–3, a mode of 0 gives the
// running statistics instead.
Status infer_batch_statistics(const ir::Graph& g, const Op& op, std::vector<ir::TensorType>& out) {
  if (op.inputs.size() != 1 && op.inputs.size() != 4)
    return invalid_argument("expects X, or X, running mean, running variance and the statistics mode");
  const ir::TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 2) return invalid_argument("expects [N, C, ...], got " + x.to_string());
  if (x.elements() == 0) return invalid_argument("has no elements to take statistics of: " + x.to_string());
  if (op.inputs.size() == 4) {
    IPU_RETURN_IF_ERROR(expect_channels(g, op, 1, 2, x.shape[1]));
    if (g.value(op.inputs[3]).type.elements() != 1)
      return invalid_argument("the statistics mode must be one element");
  }
  const float momentum = op.attrs<ir::BatchStatisticsAttrs>().momentum;
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    return invalid_argument("momentum " + std::to_string(momentum) + " is outside [0, 1]");
  out.push_back({ir::DType::kFloat32, {x.shape[1]}});
  out.push_back({ir::DType::kFloat32, {x.shape[1]}});
  return Status();
}

// No gradient flows through the statistics alone: BatchNorm's rule differentiates the
// normalisation by them as a whole (grad_batch_norm_by_batch_statistics). The rule adds the
// running statistics' update, which training alone runs, once per forward pass: in the backward
// phase, which runs once per micro-batch (a recomputed forward pass does not update twice).
Status grad_batch_statistics(ir::GradContext& ctx, const Op& op) {
  if (ctx.gradient_of(op.outputs[0]) >= 0 || ctx.gradient_of(op.outputs[1]) >= 0) {
    return unsupported(
        "training through the batch statistics '" + op.name +
        "' of a BatchNormalization is not supported: the loss depends on the batch mean or "
        "variance other than through the normalization, and their gradient is not implemented");
  }
  if (op.inputs.size() != 4) return Status();
  const ChannelReduceWork w = channel_reduce_work(ctx.graph().value(op.inputs[0]).type.shape);
  if (w.N * w.S < 2) {
    return invalid_argument("training needs more than one value per channel (torch's rule), got " +
                            ctx.graph().value(op.inputs[0]).type.to_string());
  }
  return ctx.graph()
      .add_op(ir::OpKind::kRunningStatistics, op.name + "/running_statistics",
              {op.inputs[1], op.inputs[2], op.outputs[0], op.outputs[1]},
              op.attrs<ir::BatchStatisticsAttrs>(), ir::Phase::kBackward, op.stage)
      .status();
}

// Partial summaries of blocks of channels × samples × positions (count, mean, M2 each: 3 vector
// operations per element, poplin normStatistics's ADD and SQUARE_ADD reductions), then, in the
// compute set after, each channel's combination (and the choice between batch and running
// statistics).
Status lower_batch_statistics(LowerContext& ctx, const Op& op) {
  ChannelReduceWork w = channel_reduce_work(ctx.graph().value(op.inputs[0]).type.shape);
  const uint32_t x = ctx.tensor(op.inputs[0]), mean = ctx.tensor(op.outputs[0]),
                 var = ctx.tensor(op.outputs[1]);
  w.element_bytes = ctx.executable().tensors(static_cast<int>(x)).dtype() == format::FLOAT16 ? 2.0 : 4.0;
  w.ops_per_element = 3.0;
  w.values_per_part = 3;
  const auto& cycles = ctx.target().cycles;
  const PlacedChannelReduce placed = place_channel_reduce(ctx, w, {x}, [&](const ChannelBlock& block) {
    return channel_block_regions(x, w, block.cb, block.ce, block.nb, block.ne, block.sb, block.se);
  });
  const int64_t parts = placed.plan.parts();
  const uint32_t partials = ctx.add_temporary(op.name + "/partials", {parts, 3, w.C});
  for (size_t i = 0; i < placed.blocks.size(); ++i) {
    const ChannelBlock& block = placed.blocks[i];
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kBatchStatistics;
    v.operands = {x, partials};
    v.params = channel_block_params(w, block, parts);
    v.compute_cycles =
        w.ops_per_element * static_cast<double>(block.elements()) / cycles.vector_flops_per_cycle;
    v.reads = channel_block_regions(x, w, block.cb, block.ce, block.nb, block.ne, block.sb, block.se);
    for (int64_t k = 0; k < 3; ++k) {
      const int64_t row = (block.part * 3 + k) * w.C;
      v.writes.push_back(lowering::flat_region(partials, row + block.cb, row + block.ce));
    }
    ctx.emit(placed.tiles[i], std::move(v));
  }
  const std::vector<uint32_t> tiles = placed.distinct_tiles();
  std::vector<uint32_t> operands = {partials, mean, var};
  for (size_t i = 1; i < op.inputs.size(); ++i)
    operands.push_back(ctx.tensor(op.inputs[i]));
  // Chan's update per part: about 8 float operations (poplin's InverseStdDeviation is per channel too).
  const double per_channel = 8.0 * static_cast<double>(parts) / cycles.partial_sum_flops_per_cycle;
  const lowering::Split combine = lowering::plan_split(w.C, per_channel, 12.0 * static_cast<double>(parts),
                                                       12.0 * static_cast<double>(parts + 1), ctx.target(),
                                                       static_cast<int64_t>(tiles.size()));
  for (int64_t p = 0; p < combine.parts; ++p) {
    const int64_t cb = p * combine.chunk, ce = std::min(w.C, cb + combine.chunk);
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kBatchStatisticsCombine;
    v.operands = operands;
    using P = format::params::BatchStatisticsCombine;
    v.params = format::make_params<P>({{P::kC, w.C}, {P::kParts, parts}, {P::kCBegin, cb}, {P::kCEnd, ce}});
    v.compute_cycles = per_channel * static_cast<double>(ce - cb);
    v.reads = {lowering::block_region(partials, 0, 3 * parts, cb, ce, w.C)};
    if (operands.size() == 6) {
      v.reads.push_back(lowering::flat_region(operands[3], cb, ce));
      v.reads.push_back(lowering::flat_region(operands[4], cb, ce));
      v.reads.push_back(lowering::flat_region(operands[5], 0, 1));
    }
    v.writes = {lowering::flat_region(mean, cb, ce), lowering::flat_region(var, cb, ce)};
    ctx.emit_after(tiles[static_cast<size_t>(p) % tiles.size()], std::move(v));
  }
  return Status();
}

// RunningStatistics(running_mean, running_var, mean, var): no outputs, the first two updated in
// place.
Status infer_running_statistics(const ir::Graph& g, const Op& op, std::vector<ir::TensorType>&) {
  const int64_t channels = g.value(op.inputs[0]).type.elements();
  return expect_channels(g, op, 0, 3, channels);
}

Status lower_running_statistics(LowerContext& ctx, const Op& op) {
  const Op& statistics = ctx.graph().op(ctx.graph().value(op.inputs[2]).producer);
  const ChannelReduceWork w = channel_reduce_work(ctx.graph().value(statistics.inputs[0]).type.shape);
  std::vector<uint32_t> operands;
  for (int in : op.inputs)
    operands.push_back(ctx.tensor(in));
  const double per_channel = 6.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(ctx, w.C, per_channel, 16.0, [&](uint32_t tile, int64_t cb, int64_t ce) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kRunningStatistics;
    v.operands = operands;
    using P = format::params::RunningStatistics;
    using F = format::fparams::RunningStatistics;
    v.params =
        format::make_params<P>({{P::kC, w.C}, {P::kElements, w.N * w.S}, {P::kBegin, cb}, {P::kEnd, ce}});
    v.fparams = format::make_fparams<F>({{F::kMomentum, op.attrs<ir::BatchStatisticsAttrs>().momentum}});
    v.compute_cycles = per_channel * static_cast<double>(ce - cb);
    for (uint32_t t : operands)
      v.reads.push_back(lowering::flat_region(t, cb, ce));
    v.in_place = {lowering::flat_region(operands[0], cb, ce), lowering::flat_region(operands[1], cb, ce)};
    ctx.emit(tile, std::move(v));
  });
  return Status();
}

} // namespace

const OpDefinition& batch_statistics_op() {
  static const OpDefinition def{
      {ir::OpKind::kBatchStatistics, ir::kVariadic, infer_batch_statistics, grad_batch_statistics},
      lower_batch_statistics};
  return def;
}
const OpDefinition& running_statistics_op() {
  static const OpDefinition def{{ir::OpKind::kRunningStatistics, 4, infer_running_statistics, nullptr},
                                lower_running_statistics};
  return def;
}

} // namespace ipu::ops
