// BatchNorm with its statistics as operands (inference semantics: the statistics are inputs,
// never computed from the batch) and its gradients; ToChannelsLast / ToChannelsFirst, which move
// values between NCHW (what Conv and pooling run on) and Keras's channels-last NHWC.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/batch_norm_grad_ops.h"
#include "compiler/ops/channel_reduce_plan.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"

namespace ipu::ops {
using ir::Graph;
using ir::NormAttrs;
using ir::Op;
using ir::OpKind;
using ir::Phase;
using ir::TensorType;

namespace {

using lowering::LowerContext;

// [N, C, S...] viewed as N × C × S.
struct Ncs {
  int64_t N, C, S;
};
Ncs ncs(const std::vector<int64_t>& shape) {
  int64_t s = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    s *= shape[i];
  return {shape[0], shape[1], s};
}

Status expect_per_channel(const Graph& g, const Op& op, const TensorType& x,
                          std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (g.value(op.inputs[i]).type.shape != std::vector<int64_t>{x.shape[1]}) {
      return invalid_argument("expects one value per channel of " + x.to_string() + ", got " +
                              g.value(op.inputs[i]).type.to_string());
    }
  }
  return Status();
}

// BatchNorm(X, scale, B, mean, var): Y = (X − mean) / sqrt(var + epsilon) · scale + B per channel.
Status infer_batch_norm(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 2) return invalid_argument("expects [N, C, ...], got " + x.to_string());
  IPU_RETURN_IF_ERROR(expect_per_channel(g, op, x, {1, 2, 3, 4}));
  out.push_back(x);
  return Status();
}

// dX = dY · scale / sqrt(var + ε); dscale = Σ dY · (X − mean) / sqrt(var + ε); dB = Σ dY. The
// statistics get no gradient: they are moving averages, not trained parameters. Normalised by its
// input's own batch statistics (ONNX training_mode 1), the gradient is batch norm's own.
Status grad_batch_norm(ir::GradContext& ctx, const Op& op) {
  if (normalises_by_batch_statistics(ctx.graph(), op)) return grad_batch_norm_by_batch_statistics(ctx, op);
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  Graph& g = ctx.graph();
  const int x = op.inputs[0], scale = op.inputs[1], bias = op.inputs[2], mean = op.inputs[3],
            var = op.inputs[4];
  if (ctx.needs_gradient(mean) || ctx.needs_gradient(var)) {
    return unsupported("training through 'BatchNormalization' node '" + op.name +
                       "' is not supported: its mean and variance are statistics and cannot be trained");
  }
  NormAttrs attrs;
  attrs.epsilon = op.attrs<NormAttrs>().epsilon;
  if (ctx.needs_gradient(x)) {
    IPU_ASSIGN_OR_RETURN(int id, g.add_op(OpKind::kBatchNormGradInput, op.name + "/grad_input",
                                          {dy, scale, var}, attrs, Phase::kBackward, op.stage));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(x, g.op(id).outputs[0]));
  }
  if (ctx.needs_gradient(scale)) {
    IPU_ASSIGN_OR_RETURN(int id, g.add_op(OpKind::kBatchNormGradScale, op.name + "/grad_scale",
                                          {x, dy, mean, var}, attrs, Phase::kBackward, op.stage));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(scale, g.op(id).outputs[0]));
  }
  if (ctx.needs_gradient(bias)) {
    IPU_ASSIGN_OR_RETURN(
        int id, g.add_op(OpKind::kChannelSum, op.name + "/grad_bias", {dy}, {}, Phase::kBackward, op.stage));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(bias, g.op(id).outputs[0]));
  }
  return Status();
}

// BatchNormGradInput(dY, scale, var) → dX like dY.
Status infer_batch_norm_grad_input(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& dy = g.value(op.inputs[0]).type;
  if (dy.shape.size() < 2) return invalid_argument("expects [N, C, ...], got " + dy.to_string());
  IPU_RETURN_IF_ERROR(expect_per_channel(g, op, dy, {1, 2}));
  out.push_back(dy);
  return Status();
}

// BatchNormGradScale(X, dY, mean, var) → dscale [C].
Status infer_batch_norm_grad_scale(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 2 || g.value(op.inputs[1]).type.shape != x.shape) {
    return invalid_argument("expects X and dY of one shape [N, C, ...]");
  }
  IPU_RETURN_IF_ERROR(expect_per_channel(g, op, x, {2, 3}));
  out.push_back({ir::DType::kFloat32, {x.shape[1]}});
  return Status();
}

// Elementwise over [N, C, S] (BatchNorm, BatchNormGradInput): flat ranges of the output, where
// X or dY lies when that costs less (a convolution's output is normalised on its tiles).
Status lower_batch_norm_elementwise(LowerContext& ctx, const Op& op) {
  const ChannelReduceWork d = channel_reduce_work(ctx.graph().value(op.inputs[0]).type.shape);
  std::vector<uint32_t> inputs;
  for (int in : op.inputs)
    inputs.push_back(ctx.tensor(in));
  const uint32_t y = ctx.tensor(op.outputs[0]);
  const bool half = ctx.executable().tensors(static_cast<int>(inputs[0])).dtype() == format::FLOAT16;
  // BatchNormGradInput, dY · scale · istd: four vector operations.
  const double per_element =
      op.kind == OpKind::kBatchNorm
          ? batch_norm_cycles_per_element(ctx.target().cycles, BatchNormPass::kNormalise, half, d.C)
          : 4.0 / ctx.target().cycles.vector_flops_per_cycle;
  const lowering::ElementwiseWork work{d.N * d.C * d.S, 1, per_element, 8.0, {inputs[0]}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet =
        op.kind == OpKind::kBatchNorm ? format::Codelet::kBatchNorm : format::Codelet::kBatchNormGradInput;
    v.operands = inputs;
    v.operands.push_back(y);
    using P = format::params::BatchNorm; // BatchNormGradInput's layouts are the same
    using F = format::fparams::BatchNorm;
    static_assert(format::same_layout<P, format::params::BatchNormGradInput> &&
                  F::kNames == format::fparams::BatchNormGradInput::kNames);
    v.params = format::make_params<P>(
        {{P::kN, d.N}, {P::kC, d.C}, {P::kS, d.S}, {P::kBegin, begin}, {P::kEnd, end}});
    v.fparams = format::make_fparams<F>({{F::kEpsilon, op.attrs<NormAttrs>().epsilon}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads.push_back(lowering::flat_region(inputs[0], begin, end));
    const auto [cb, ce] = channels_spanned(d, begin, end);
    for (size_t i = 1; i < inputs.size(); ++i)
      v.reads.push_back(lowering::flat_region(inputs[i], cb, ce));
    v.writes = {lowering::flat_region(y, begin, end)};
    return v;
  });
  return Status();
}

Status lower_batch_norm_grad_scale(LowerContext& ctx, const Op& op) {
  const Ncs d = ncs(ctx.graph().value(op.inputs[0]).type.shape);
  const uint32_t x = ctx.tensor(op.inputs[0]), dy = ctx.tensor(op.inputs[1]), mean = ctx.tensor(op.inputs[2]),
                 var = ctx.tensor(op.inputs[3]), ds = ctx.tensor(op.outputs[0]);
  const double per_channel =
      3.0 * static_cast<double>(d.N * d.S) / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(ctx, d.C, per_channel, 8.0 * static_cast<double>(d.N * d.S),
                        [&](uint32_t tile, int64_t cb, int64_t ce) {
                          lowering::VertexSpec v;
                          v.codelet = format::Codelet::kBatchNormGradScale;
                          v.operands = {x, dy, mean, var, ds};
                          using P = format::params::BatchNormGradScale;
                          using F = format::fparams::BatchNormGradScale;
                          v.params = format::make_params<P>(
                              {{P::kN, d.N}, {P::kC, d.C}, {P::kS, d.S}, {P::kCBegin, cb}, {P::kCEnd, ce}});
                          v.fparams = format::make_fparams<F>({{F::kEpsilon, op.attrs<NormAttrs>().epsilon}});
                          v.compute_cycles = per_channel * static_cast<double>(ce - cb);
                          v.reads = {lowering::block_region(x, 0, d.N, cb * d.S, ce * d.S, d.C * d.S),
                                     lowering::block_region(dy, 0, d.N, cb * d.S, ce * d.S, d.C * d.S),
                                     lowering::flat_region(mean, cb, ce), lowering::flat_region(var, cb, ce)};
                          v.writes = {lowering::flat_region(ds, cb, ce)};
                          ctx.emit(tile, std::move(v));
                        });
  return Status();
}

// ToChannelsLast: [N, C, S...] → [N, S..., C]; ToChannelsFirst: the inverse.
Status infer_channels_layout(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() < 3) return invalid_argument("expects a value with spatial axes, got " + x.to_string());
  TensorType y = x;
  if (op.kind == OpKind::kToChannelsLast) {
    y.shape.erase(y.shape.begin() + 1);
    y.shape.push_back(x.shape[1]);
  } else {
    y.shape.pop_back();
    y.shape.insert(y.shape.begin() + 1, x.shape.back());
  }
  out.push_back(y);
  return Status();
}

Status grad_channels_layout(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0 || !ctx.needs_gradient(op.inputs[0])) return Status();
  const OpKind inverse =
      op.kind == OpKind::kToChannelsLast ? OpKind::kToChannelsFirst : OpKind::kToChannelsLast;
  IPU_ASSIGN_OR_RETURN(int id,
                       ctx.graph().add_op(inverse, op.name + "/grad", {dy}, {}, Phase::kBackward, op.stage));
  return ctx.add_gradient(op.inputs[0], ctx.graph().op(id).outputs[0]);
}

// Each vertex writes a flat range of the output and reads the samples it spans.
Status lower_channels_layout(LowerContext& ctx, const Op& op) {
  const bool to_last = op.kind == OpKind::kToChannelsLast;
  const std::vector<int64_t>& x_shape = ctx.graph().value(op.inputs[0]).type.shape;
  const Ncs d = ncs(to_last ? x_shape : ctx.graph().value(op.outputs[0]).type.shape);
  const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
  const int64_t sample = d.C * d.S;
  const double per_element = 1.0 / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(ctx, d.N * sample, per_element, 8.0, [&](uint32_t tile, int64_t begin, int64_t end) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kChannelsLayout;
    v.operands = {x, y};
    using P = format::params::ChannelsLayout;
    v.params = format::make_params<P>({{P::kN, d.N},
                                       {P::kC, d.C},
                                       {P::kS, d.S},
                                       {P::kBegin, begin},
                                       {P::kEnd, end},
                                       {P::kToChannelsLast, to_last}});
    v.compute_cycles = per_element * static_cast<double>(end - begin);
    v.reads = {lowering::flat_region(x, begin / sample * sample, lowering::ceil_div(end, sample) * sample)};
    v.writes = {lowering::flat_region(y, begin, end)};
    ctx.emit(tile, std::move(v));
  });
  return Status();
}

} // namespace

const OpDefinition& batch_norm_op() {
  static const OpDefinition def{{OpKind::kBatchNorm, 5, infer_batch_norm, grad_batch_norm},
                                lower_batch_norm_elementwise};
  return def;
}
const OpDefinition& batch_norm_grad_input_op() {
  static const OpDefinition def{{OpKind::kBatchNormGradInput, 3, infer_batch_norm_grad_input, nullptr},
                                lower_batch_norm_elementwise};
  return def;
}
const OpDefinition& batch_norm_grad_scale_op() {
  static const OpDefinition def{{OpKind::kBatchNormGradScale, 4, infer_batch_norm_grad_scale, nullptr},
                                lower_batch_norm_grad_scale};
  return def;
}
const OpDefinition& to_channels_last_op() {
  static const OpDefinition def{{OpKind::kToChannelsLast, 1, infer_channels_layout, grad_channels_layout},
                                lower_channels_layout};
  return def;
}
const OpDefinition& to_channels_first_op() {
  static const OpDefinition def{{OpKind::kToChannelsFirst, 1, infer_channels_layout, grad_channels_layout},
                                lower_channels_layout};
  return def;
}

} // namespace ipu::ops
