// Conv and its gradients; the per-channel ops around it are in channel_ops.cpp, the tile grid
// they split into in conv_grid.h.
#include <algorithm>
#include <array>
#include <cmath>

#include "compiler/ir/op_registry.h"
#include "compiler/ir/window_geometry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/conv_grid.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"
#include "runtime/format/tensor_kinds.h"
#include "runtime/format/verifier.h"

namespace ipu::ops {
using ir::Graph;
using ir::Op;
using ir::OpKind;
using ir::TensorType;
using ir::window_of;
using ir::WindowAttrs;
using ir::WindowGradAttrs;

namespace {

using lowering::LowerContext;

// Conv: Y [N, M, OH, OW] = X [N, C, H, W] ⊛ W [M, C/group, KH, KW] (+ B [M]).
Status infer_conv(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  if (op.inputs.size() != 2 && op.inputs.size() != 3)
    return invalid_argument("expects X, W and an optional bias");
  const TensorType& x = g.value(op.inputs[0]).type;
  const TensorType& w = g.value(op.inputs[1]).type;
  const WindowAttrs& win = window_of(op);
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    return invalid_argument("expects an NCHW input and an [M, C/group, KH, KW] kernel, got " + x.to_string() +
                            " and " + w.to_string());
  }
  const int64_t group = win.group;
  if (group <= 0 || x.shape[1] % group != 0 || w.shape[0] % group != 0 || w.shape[1] * group != x.shape[1]) {
    return invalid_argument("kernel " + w.to_string() + " with group " + std::to_string(group) +
                            " does not match input " + x.to_string());
  }
  if (w.shape[2] != win.kernel[0] || w.shape[3] != win.kernel[1]) {
    return invalid_argument("kernel_shape differs from the kernel " + w.to_string());
  }
  if (op.inputs.size() == 3) {
    const TensorType& b = g.value(op.inputs[2]).type;
    if (b.shape != std::vector<int64_t>{w.shape[0]}) {
      return invalid_argument("bias " + b.to_string() + " does not match " + std::to_string(w.shape[0]) +
                              " output channels");
    }
  }
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ir::window_output_shape(x, win, w.shape[0]));
  out.push_back({ir::DType::kFloat32, shape});
  return Status();
}

StatusOr<int> add_grad_op(ir::GradContext& ctx, const Op& op, OpKind kind, std::vector<int> inputs,
                          const std::vector<int64_t>& shape, const char* suffix) {
  WindowGradAttrs attrs;
  attrs.window = window_of(op);
  attrs.shape = shape;
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(kind, op.name + suffix, std::move(inputs), attrs,
                                                  ir::Phase::kBackward, op.stage));
  return ctx.graph().op(id).outputs[0];
}

// dX = the transposed convolution of dY with W; dW = dY correlated with X; dB = dY summed over
// samples and positions.
Status grad_conv(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  const Graph& g = ctx.graph();
  const int x = op.inputs[0], w = op.inputs[1];
  if (ctx.needs_gradient(x)) {
    IPU_ASSIGN_OR_RETURN(
        int dx, add_grad_op(ctx, op, OpKind::kConvGradInput, {dy, w}, g.value(x).type.shape, "/grad_input"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(x, dx));
  }
  if (ctx.needs_gradient(w)) {
    IPU_ASSIGN_OR_RETURN(int dw, add_grad_op(ctx, op, OpKind::kConvGradWeight, {x, dy}, g.value(w).type.shape,
                                             "/grad_kernel"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(w, dw));
  }
  if (op.inputs.size() == 3 && ctx.needs_gradient(op.inputs[2])) {
    IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kChannelSum, op.name + "/grad_bias", {dy}, {},
                                                    ir::Phase::kBackward, op.stage));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(op.inputs[2], ctx.graph().op(id).outputs[0]));
  }
  return Status();
}

// ConvGradInput is also a forward op, ONNX's ConvTranspose: Z = ConvGradInput(T, W). Its input's
// gradient is the convolution of dZ with W (dT[n,m,o] = Σ W[m,c,k]·dZ[n,c,o·s+k·d−p]) and its
// kernel's the correlation ConvGradWeight computes with dZ in X's place and T in dY's.
Status grad_conv_grad_input(ir::GradContext& ctx, const Op& op) {
  const int dz = ctx.gradient_of(op.outputs[0]);
  if (dz < 0) return Status();
  const Graph& g = ctx.graph();
  const int t = op.inputs[0], w = op.inputs[1];
  if (ctx.needs_gradient(t)) {
    ir::ConvAttrs attrs;
    attrs.window = window_of(op);
    IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kConv, op.name + "/grad_input", {dz, w}, attrs,
                                                    ir::Phase::kBackward, op.stage));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(t, ctx.graph().op(id).outputs[0]));
  }
  if (ctx.needs_gradient(w)) {
    IPU_ASSIGN_OR_RETURN(int dw, add_grad_op(ctx, op, OpKind::kConvGradWeight, {dz, t}, g.value(w).type.shape,
                                             "/grad_kernel"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(w, dw));
  }
  return Status();
}

// ConvGradInput(dY, W) → dX of its shape; ConvGradWeight(X, dY) → dW of its shape. Both check
// that a forward Conv with these shapes gives dY's shape.
Status infer_conv_grad_input(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType x{ir::DType::kFloat32, op.attrs<WindowGradAttrs>().shape};
  const TensorType& w = g.value(op.inputs[1]).type;
  if (x.shape.size() != 4 || w.shape.size() != 4) return invalid_argument("expects NCHW shapes");
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> y, ir::window_output_shape(x, window_of(op), w.shape[0]));
  if (y != g.value(op.inputs[0]).type.shape)
    return invalid_argument("dY does not match the convolution's output");
  out.push_back(x);
  return Status();
}

Status infer_conv_grad_weight(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  const TensorType w{ir::DType::kFloat32, op.attrs<WindowGradAttrs>().shape};
  if (x.shape.size() != 4 || w.shape.size() != 4) return invalid_argument("expects NCHW shapes");
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> y, ir::window_output_shape(x, window_of(op), w.shape[0]));
  if (y != g.value(op.inputs[1]).type.shape)
    return invalid_argument("dY does not match the convolution's output");
  out.push_back(w);
  return Status();
}

double element_bytes(const LowerContext& ctx, uint32_t tensor) {
  return static_cast<double>(format::dtype_size(ctx.executable().tensors(static_cast<int>(tensor)).dtype()));
}

struct ConvDims {
  std::vector<int64_t> x, w, y;
  int64_t K; // rows of the column matrix: C/group · KH · KW
  int64_t plane() const { return y[2] * y[3]; }
  int64_t sample() const { return x[1] * x[2] * x[3]; }
};

ConvDims conv_dims(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                   const std::vector<int64_t>& y) {
  return {x, w, y, w[1] * w[2] * w[3]};
}

// The arithmetic of a convolution vertex producing `rows` rows of `width` output positions, `macs`
// in all (target::amp_cycles). poplin's 1x1 vertex, for a 1×1 kernel with unit strides and no
// padding, gives each worker one run of the field; the nx1 vertex works a row at a time. A
// kernel gradient is charged as the forward convolution of its shapes: poplin plans it as a
// convolution of its own, transformed to keep the AMP's runs long.
double conv_amp_cycles(const target::TargetSpec& t, const WindowAttrs& win, double macs, double rows,
                       double width) {
  const bool pointwise = win.kernel == std::array<int64_t, 2>{1, 1} &&
                         win.strides == std::array<int64_t, 2>{1, 1} &&
                         win.pads == std::array<int64_t, 4>{0, 0, 0, 0};
  const double outputs = rows * width;
  return target::amp_cycles(
      t, macs, outputs, pointwise ? std::min(outputs, static_cast<double>(t.worker_threads_per_tile)) : rows);
}

// Rows [r0, r1) (of `width` elements) of channel planes [c0, c1) of samples [nb, ne) in an
// [N, channels, plane] tensor: one region if the channels are all there are, else one per sample.
void add_plane_rows(std::vector<lowering::Region>& out, uint32_t tensor, int64_t nb, int64_t ne,
                    int64_t channels, int64_t c0, int64_t c1, int64_t r0, int64_t r1, int64_t width,
                    int64_t plane) {
  if (c0 == 0 && c1 == channels) {
    out.push_back(
        lowering::block_region(tensor, nb * channels, ne * channels, r0 * width, r1 * width, plane));
    return;
  }
  for (int64_t n = nb; n < ne; ++n) {
    out.push_back(
        lowering::block_region(tensor, n * channels + c0, n * channels + c1, r0 * width, r1 * width, plane));
  }
}

// The groups a block of `c` of a group's `per_group` channels touches: one more than it fills when
// it may straddle two.
int64_t groups_touched(int64_t c, int64_t per_group, int64_t groups) {
  return std::min(groups,
                  lowering::ceil_div(c, per_group) + (c % per_group != 0 && per_group % c != 0 ? 1 : 0));
}

// Samples × output channels × output rows × input channels, as poplin splits a convolution's batch,
// output channels, field and input channels: a vertex receives the input rows its windows reach
// (with the halo) of its samples and of its input channels (without a split, every input channel of
// its channels' groups), and its channels' kernel rows for those input channels; it holds those and
// its output block (the direct convolution builds no column matrix). Split over input channels
// (groups 1), each vertex writes its sum to a [shares, N, M, OH, OW] temporary and a
// '<level>/reduce' compute set adds the shares, applying a fused Relu, as a MatMul split over K
// does: a deep layer's kernel is then spread over the tiles instead of copied whole to every
// vertex of its channels.
Status lower_conv(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const ConvDims d = conv_dims(g.value(op.inputs[0]).type.shape, g.value(op.inputs[1]).type.shape,
                               g.value(op.outputs[0]).type.shape);
  const WindowAttrs& win = window_of(op);
  const uint32_t x = ctx.tensor(op.inputs[0]), w = ctx.tensor(op.inputs[1]), y = ctx.tensor(op.outputs[0]);
  const bool has_bias = op.inputs.size() == 3, fused_relu = op.attrs<ir::ConvAttrs>().fused_relu;
  const uint32_t b = has_bias ? ctx.tensor(op.inputs[2]) : 0;
  const int64_t N = d.x[0], C = d.x[1], M = d.w[0], G = win.group, Cg = C / G, Mg = M / G;
  const int64_t H = d.x[2], W = d.x[3], OH = d.y[2], OW = d.y[3], plane = d.plane(), in_plane = H * W;
  const int64_t taps = d.w[2] * d.w[3];
  const double kernel_rows = static_cast<double>((win.kernel[0] - 1) * win.dilations[0] + 1);
  // Bytes of an element of X and of W as the executable stores them (fp16 halves what a vertex
  // receives); partial sums are fp32.
  const double x_bytes = element_bytes(ctx, x), w_bytes = element_bytes(ctx, w);
  const auto y_size = static_cast<double>(N * M * plane);
  // Grouped convolutions keep each group's channels whole. A fused Relu, of the whole sum, moves
  // to the reduce that adds the shares.
  const int64_t splittable_channels = G == 1 ? C : 1;
  const auto [samples, channels, rows, ins] =
      plan_grid<4>({N, M, OH, splittable_channels}, ctx.target(), [&](const std::array<double, 4>& chunk) {
        const double nb = chunk[0], mc = chunk[1], r = chunk[2];
        const double cc = splittable_channels > 1
                              ? chunk[3]
                              : static_cast<double>(groups_touched(static_cast<int64_t>(mc), Mg, G) * Cg);
        const double in_rows =
            std::min(static_cast<double>(H), (r - 1) * static_cast<double>(win.strides[0]) + kernel_rows);
        const double shares = std::ceil(static_cast<double>(splittable_channels) / chunk[3]);
        const double in_bytes =
            x_bytes * nb * cc * static_cast<double>(W) * in_rows +
            w_bytes * mc * (std::min(cc, static_cast<double>(Cg)) * static_cast<double>(taps) + 1);
        const double macs = nb * mc * r * static_cast<double>(OW) * std::min(cc, static_cast<double>(Cg)) *
                            static_cast<double>(taps);
        return GridCost{conv_amp_cycles(ctx.target(), win, macs, nb * r, static_cast<double>(OW)), in_bytes,
                        in_bytes + (shares > 1 ? 4.0 : x_bytes) * nb * mc * r * static_cast<double>(OW),
                        reduce_cycles(ctx.target(), shares, y_size)};
      });
  const int64_t shares = ins.parts;
  const uint32_t target = shares > 1 ? ctx.add_temporary(op.name + "/partials", {shares, N, M, OH, OW}) : y;
  std::vector<uint32_t> tiles = ctx.take_tiles(samples.parts * channels.parts * rows.parts * shares);
  size_t next = 0;
  for (int64_t i = 0; i < samples.parts; ++i) {
    const int64_t nb = i * samples.chunk, ne = std::min(N, nb + samples.chunk);
    for (int64_t j = 0; j < channels.parts; ++j) {
      const int64_t mb = j * channels.chunk, me = std::min(M, mb + channels.chunk);
      for (int64_t k = 0; k < rows.parts; ++k) {
        const int64_t ob = k * rows.chunk, oe = std::min(OH, ob + rows.chunk);
        for (int64_t part = 0; part < shares; ++part) {
          const int64_t cb = part * ins.chunk, ce = std::min(C, cb + ins.chunk);
          const bool adds_bias = has_bias && cb == 0;
          lowering::VertexSpec v;
          v.codelet = format::Codelet::kConv;
          v.operands =
              has_bias ? std::vector<uint32_t>{x, w, b, target} : std::vector<uint32_t>{x, w, target};
          using P = format::params::Conv;
          v.params = format::make_params<P>(ir::window_params(d.x, d.y, win),
                                            {{P::kM, M},
                                             {P::kG, G},
                                             {P::kNBegin, nb},
                                             {P::kNEnd, ne},
                                             {P::kMBegin, mb},
                                             {P::kMEnd, me},
                                             {P::kFusedRelu, fused_relu && shares == 1 ? 1 : 0},
                                             {P::kOutRowBegin, ob},
                                             {P::kOutRowEnd, oe},
                                             {P::kCBegin, cb},
                                             {P::kCEnd, ce},
                                             {P::kParts, shares},
                                             {P::kPart, part}});
          // Optional params are left out where they say nothing: the share of an unsplit sum, then
          // the row range of a whole plane, and then a fused_relu of 0, so unsplit vertices are
          // what they were before any existed.
          if (shares == 1) {
            v.params.resize(P::kCBegin);
            if (ob == 0 && oe == OH) {
              v.params.resize(P::kOutRowBegin);
              if (!fused_relu) v.params.pop_back();
            }
          }
          const int64_t summed = shares == 1 ? d.K : (ce - cb) * taps; // channels × taps per output
          v.compute_cycles = conv_amp_cycles(
              ctx.target(), win, static_cast<double>((ne - nb) * (me - mb) * (oe - ob) * OW * summed),
              static_cast<double>((ne - nb) * (oe - ob)), static_cast<double>(OW));
          const auto [ib, ie] = ir::window_input_rows(d.x[2], win, ob, oe);
          if (shares == 1) {
            add_plane_rows(v.reads, x, nb, ne, C, mb / Mg * Cg, lowering::ceil_div(me, Mg) * Cg, ib, ie, W,
                           in_plane);
            v.reads.push_back(lowering::flat_region(w, mb * d.K, me * d.K));
          } else {
            add_plane_rows(v.reads, x, nb, ne, C, cb, ce, ib, ie, W, in_plane);
            v.reads.push_back(lowering::block_region(w, mb, me, cb * taps, ce * taps, d.K));
          }
          if (adds_bias) v.reads.push_back(lowering::flat_region(b, mb, me));
          add_plane_rows(v.writes, target, part * N + nb, part * N + ne, M, mb, me, ob, oe, OW, plane);
          ctx.emit(tiles[next++], std::move(v));
        }
      }
    }
  }
  if (shares == 1) return Status();
  emit_spread_sum_of_shares(ctx, target, y, shares, N * M * plane, tiles.front(),
                            fused_relu ? format::ReduceKind::kSumRelu : format::ReduceKind::kSum);
  return Status();
}

// Samples × input channels × input rows, as the forward convolution splits its output: a vertex
// receives the kernel slice of its input channels (every output channel of their groups) and the
// rows of dY its rows' windows come from, and holds those and its block of dX.
Status lower_conv_grad_input(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const ConvDims d = conv_dims(op.attrs<WindowGradAttrs>().shape, g.value(op.inputs[1]).type.shape,
                               g.value(op.inputs[0]).type.shape);
  const WindowAttrs& win = window_of(op);
  const uint32_t dy = ctx.tensor(op.inputs[0]), w = ctx.tensor(op.inputs[1]), dx = ctx.tensor(op.outputs[0]);
  const int64_t N = d.x[0], C = d.x[1], M = d.w[0], G = win.group, Cg = C / G, Mg = M / G;
  const int64_t H = d.x[2], W = d.x[3], OH = d.y[2], OW = d.y[3], plane = d.plane(), in_plane = H * W;
  const int64_t taps = d.w[2] * d.w[3];
  const double extent = static_cast<double>((win.kernel[0] - 1) * win.dilations[0] + 1);
  const double dy_element = element_bytes(ctx, dy), w_element = element_bytes(ctx, w),
               dx_element = element_bytes(ctx, dx);
  const auto dx_size = static_cast<double>(N * C * in_plane);
  // The output channels a vertex sums may be a share (groups 1), as the forward splits its input
  // channels; grouped convolutions keep each group's whole.
  const int64_t splittable_outputs = G == 1 ? M : 1;
  const auto [samples, channels, rows, outs] =
      plan_grid<4>({N, C, H, splittable_outputs}, ctx.target(), [&](const std::array<double, 4>& chunk) {
        const double nb = chunk[0], cc = chunk[1], r = chunk[2];
        const auto groups = static_cast<double>(groups_touched(static_cast<int64_t>(cc), Cg, G));
        // Output channels summed: the share, or every one of the groups the block touches.
        const double mm = splittable_outputs > 1 ? chunk[3] : static_cast<double>(Mg);
        const double out_rows = std::min(
            static_cast<double>(OH), std::floor((r - 1 + extent) / static_cast<double>(win.strides[0])) + 1);
        const double shares = std::ceil(static_cast<double>(splittable_outputs) / chunk[3]);
        const double dy_bytes = dy_element * nb * groups * mm * static_cast<double>(OW) * out_rows;
        const double in_bytes = dy_bytes + w_element * cc * mm * static_cast<double>(taps);
        // Held: what it receives, its block of dX (fp32 partials when shared) and the column buffer
        // of one group's channels.
        const double col_bytes =
            4.0 * std::min(cc, static_cast<double>(Cg)) * static_cast<double>(taps * OW) * out_rows;
        return GridCost{
            conv_amp_cycles(ctx.target(), win, nb * cc * static_cast<double>(taps * OW) * mm * out_rows,
                            nb * r, static_cast<double>(W)),
            in_bytes,
            in_bytes + (shares > 1 ? 4.0 : dx_element) * nb * cc * r * static_cast<double>(W) + col_bytes,
            reduce_cycles(ctx.target(), shares, dx_size)};
      });
  const int64_t shares = outs.parts;
  const uint32_t target = shares > 1 ? ctx.add_temporary(op.name + "/partials", {shares, N, C, H, W}) : dx;
  std::vector<uint32_t> tiles = ctx.take_tiles(samples.parts * channels.parts * rows.parts * shares);
  size_t next = 0;
  for (int64_t i = 0; i < samples.parts; ++i) {
    const int64_t nb = i * samples.chunk, ne = std::min(N, nb + samples.chunk);
    for (int64_t j = 0; j < channels.parts; ++j) {
      const int64_t cb = j * channels.chunk, ce = std::min(C, cb + channels.chunk);
      for (int64_t k = 0; k < rows.parts; ++k) {
        const int64_t rb = k * rows.chunk, re = std::min(H, rb + rows.chunk);
        for (int64_t part = 0; part < shares; ++part) {
          const int64_t mb = part * outs.chunk, me = std::min(M, mb + outs.chunk);
          lowering::VertexSpec v;
          v.codelet = format::Codelet::kConvGradInput;
          v.operands = {dy, w, target};
          using P = format::params::ConvGradInput;
          v.params = format::make_params<P>(ir::window_params(d.x, d.y, win), {{P::kM, M},
                                                                               {P::kG, G},
                                                                               {P::kNBegin, nb},
                                                                               {P::kNEnd, ne},
                                                                               {P::kCBegin, cb},
                                                                               {P::kCEnd, ce},
                                                                               {P::kInRowBegin, rb},
                                                                               {P::kInRowEnd, re},
                                                                               {P::kMBegin, mb},
                                                                               {P::kMEnd, me},
                                                                               {P::kParts, shares},
                                                                               {P::kPart, part}});
          // Unshared, the share is left out; a block of every channel and the whole plane then
          // leaves its bounds out too, as vertices were before either split existed.
          if (shares == 1) {
            v.params.resize(P::kMBegin);
            if (cb == 0 && ce == C && rb == 0 && re == H) v.params.resize(P::kCBegin);
          }
          const auto [ob, oe] = ir::window_output_rows_reaching(d.y[2], win, rb, re);
          const int64_t summed = shares == 1 ? Mg : me - mb; // output channels per input channel
          v.compute_cycles = conv_amp_cycles(
              ctx.target(), win, static_cast<double>((ne - nb) * (ce - cb) * taps * summed * (oe - ob) * OW),
              static_cast<double>((ne - nb) * (re - rb)), static_cast<double>(W));
          const int64_t gb = cb / Cg, ge = lowering::ceil_div(ce, Cg);
          if (shares == 1) {
            if (oe > ob) add_plane_rows(v.reads, dy, nb, ne, M, gb * Mg, ge * Mg, ob, oe, OW, plane);
            for (int64_t gi = gb; gi < ge; ++gi) {
              const int64_t lo = std::max(cb, gi * Cg) - gi * Cg, hi = std::min(ce, (gi + 1) * Cg) - gi * Cg;
              v.reads.push_back(lowering::block_region(w, gi * Mg, (gi + 1) * Mg, lo * taps, hi * taps, d.K));
            }
          } else {
            if (oe > ob) add_plane_rows(v.reads, dy, nb, ne, M, mb, me, ob, oe, OW, plane);
            v.reads.push_back(lowering::block_region(w, mb, me, cb * taps, ce * taps, d.K));
          }
          add_plane_rows(v.writes, target, part * N + nb, part * N + ne, C, cb, ce, rb, re, W, in_plane);
          ctx.emit(tiles[next++], std::move(v));
        }
      }
    }
  }
  if (shares == 1) return Status();
  emit_spread_sum_of_shares(ctx, target, dx, shares, N * C * in_plane, tiles.front());
  return Status();
}

// Output channels × input channels (within each group) × samples × output rows. A vertex receives
// X of its input channels (the rows its output rows' windows reach) and dY of its output channels
// and rows, so no tile needs a whole activation. Split over samples or rows, each vertex sums its
// share into a [shares, M, C/G, KH, KW] temporary and a '<level>/reduce' compute set adds the
// shares (Reduce, in order, in double precision), as a MatMul split over K does: not bitwise the
// unsplit sum, which adds samples and positions in one SGEMM, but within float rounding of it.
Status lower_conv_grad_weight(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const ConvDims d = conv_dims(g.value(op.inputs[0]).type.shape, op.attrs<WindowGradAttrs>().shape,
                               g.value(op.inputs[1]).type.shape);
  const WindowAttrs& win = window_of(op);
  const uint32_t x = ctx.tensor(op.inputs[0]), dy = ctx.tensor(op.inputs[1]), dw = ctx.tensor(op.outputs[0]);
  const int64_t N = d.x[0], C = d.x[1], M = d.w[0], Cg = d.w[1], plane = d.plane(), H = d.x[2], W = d.x[3],
                in_plane = H * W, OH = d.y[2], OW = d.y[3];
  const int64_t taps = d.w[2] * d.w[3], group = win.group, mg = M / group;
  const double t = static_cast<double>(taps),
               extent = static_cast<double>((win.kernel[0] - 1) * win.dilations[0] + 1);
  const double x_element = element_bytes(ctx, x), dy_element = element_bytes(ctx, dy);
  const auto dw_size = static_cast<double>(M * Cg * taps);
  const auto [outs, ins, samples, rows] =
      plan_grid<4>({M, Cg, N, OH}, ctx.target(), [&](const std::array<double, 4>& chunk) {
        const double mc = chunk[0], cc = chunk[1], nb = chunk[2], r = chunk[3];
        // The input channels of every group the output block touches: at most all groups.
        const auto groups = static_cast<double>(groups_touched(static_cast<int64_t>(mc), mg, group));
        const double in_rows =
            std::min(static_cast<double>(H), (r - 1) * static_cast<double>(win.strides[0]) + extent);
        const double in_bytes = x_element * nb * groups * cc * in_rows * static_cast<double>(W) +
                                dy_element * nb * mc * r * static_cast<double>(OW);
        const double shares = std::ceil(static_cast<double>(N) / nb) * std::ceil(static_cast<double>(OH) / r);
        return GridCost{conv_amp_cycles(ctx.target(), win, nb * mc * cc * t * r * static_cast<double>(OW),
                                        nb * r, static_cast<double>(OW)),
                        in_bytes, in_bytes + 4.0 * (mc * cc * t + cc * t * r * static_cast<double>(OW)),
                        reduce_cycles(ctx.target(), shares, dw_size)};
      });
  const int64_t shares = samples.parts * rows.parts;
  const uint32_t target =
      shares > 1 ? ctx.add_temporary(op.name + "/partials", {shares, M, Cg, d.w[2], d.w[3]}) : dw;
  std::vector<uint32_t> tiles = ctx.take_tiles(outs.parts * ins.parts * shares);
  size_t next = 0;
  for (int64_t i = 0; i < outs.parts; ++i) {
    const int64_t mb = i * outs.chunk, me = std::min(M, mb + outs.chunk);
    for (int64_t j = 0; j < ins.parts; ++j) {
      const int64_t cb = j * ins.chunk, ce = std::min(Cg, cb + ins.chunk);
      for (int64_t si = 0; si < samples.parts; ++si) {
        const int64_t nb = si * samples.chunk, ne = std::min(N, nb + samples.chunk);
        for (int64_t k = 0; k < rows.parts; ++k) {
          const int64_t ob = k * rows.chunk, oe = std::min(OH, ob + rows.chunk);
          const int64_t part = si * rows.parts + k;
          lowering::VertexSpec v;
          v.codelet = format::Codelet::kConvGradWeight;
          v.operands = {x, dy, target};
          using P = format::params::ConvGradWeight;
          v.params = format::make_params<P>(ir::window_params(d.x, d.y, win), {{P::kM, M},
                                                                               {P::kG, group},
                                                                               {P::kMBegin, mb},
                                                                               {P::kMEnd, me},
                                                                               {P::kCBegin, cb},
                                                                               {P::kCEnd, ce},
                                                                               {P::kNBegin, nb},
                                                                               {P::kNEnd, ne},
                                                                               {P::kOutRowBegin, ob},
                                                                               {P::kOutRowEnd, oe},
                                                                               {P::kParts, shares},
                                                                               {P::kPart, part}});
          // Unsplit over samples and rows, the share is left out, as vertices were before it existed.
          if (shares == 1) v.params.resize(P::kNBegin);
          v.compute_cycles =
              conv_amp_cycles(ctx.target(), win,
                              static_cast<double>((ne - nb) * (me - mb) * (ce - cb) * taps * (oe - ob) * OW),
                              static_cast<double>((ne - nb) * (oe - ob)), static_cast<double>(OW));
          // X of channels [cb, ce) of each group the output channels belong to, the rows reached.
          const auto [ib, ie] = ir::window_input_rows(d.x[2], win, ob, oe);
          for (int64_t gi = mb / mg; gi * mg < me; ++gi) {
            add_plane_rows(v.reads, x, nb, ne, C, gi * Cg + cb, gi * Cg + ce, ib, ie, W, in_plane);
          }
          add_plane_rows(v.reads, dy, nb, ne, M, mb, me, ob, oe, OW, plane);
          v.writes = {
              lowering::block_region(target, part * M + mb, part * M + me, cb * taps, ce * taps, Cg * taps)};
          ctx.emit(tiles[next++], std::move(v));
        }
      }
    }
  }
  if (shares == 1) return Status();
  emit_spread_sum_of_shares(ctx, target, dw, shares, M * Cg * taps, tiles.front());
  return Status();
}

} // namespace

const OpDefinition& conv_op() {
  static const OpDefinition def{{OpKind::kConv, ir::kVariadic, infer_conv, grad_conv}, lower_conv};
  return def;
}
const OpDefinition& conv_grad_input_op() {
  static const OpDefinition def{{OpKind::kConvGradInput, 2, infer_conv_grad_input, grad_conv_grad_input},
                                lower_conv_grad_input};
  return def;
}
const OpDefinition& conv_grad_weight_op() {
  static const OpDefinition def{{OpKind::kConvGradWeight, 2, infer_conv_grad_weight, nullptr},
                                lower_conv_grad_weight};
  return def;
}

} // namespace ipu::ops
