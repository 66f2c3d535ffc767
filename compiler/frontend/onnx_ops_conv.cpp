// ONNX converters of the convolution family: Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool
// and GlobalMaxPool (BatchNormalization: onnx_ops_batch_norm.cpp). 1-D ops ([N, C, L]) run as 2-D ones over
// [N, C, 1, L]; 3-D MaxPool and AveragePool as two 2-D pools; 3-D Conv as one 2-D Conv over the
// depth windows gathered into the channels.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>

#include "compiler/frontend/onnx_ops.h"
#include "compiler/frontend/onnx_tensor_helpers.h"
#include "compiler/ir/shape_util.h"
#include "compiler/ir/window_geometry.h"

namespace ipu::frontend {
namespace {

using ir::OpKind;
using ir::WindowAttrs;

std::string ints_text(const std::vector<int64_t>& values) {
  return shape_text(values);
}

// The spatial rank of an NCHW / NCL input: 1 or 2, else Unsupported.
StatusOr<size_t> spatial_rank(OnnxImportContext& ctx, int x) {
  const size_t rank = ctx.shape(x).size();
  if (rank != 3 && rank != 4) {
    return unsupported(ctx.node().op_type() + " of a rank-" + std::to_string(rank) + " input " +
                       shape_text(ctx.shape(x)) +
                       ": only 1-D [N,C,L] and 2-D [N,C,H,W] inputs are supported");
  }
  return rank - 2;
}

// `x` as [N, C, 1, L] if it is [N, C, L].
StatusOr<int> as_2d(OnnxImportContext& ctx, int x, const std::string& suffix) {
  const std::vector<int64_t> s = ctx.shape(x);
  if (s.size() == 4) return x;
  return ctx.reshape(x, {s[0], s[1], 1, s[2]}, suffix);
}

// An ints attribute of `count` entries (or `fallback` if absent), each checked by `ok`.
StatusOr<std::vector<int64_t>> ints_of_length(OnnxImportContext& ctx, std::string_view name, size_t count,
                                              int64_t fallback, bool positive) {
  if (!ctx.attribute(name)) return std::vector<int64_t>(count, fallback);
  std::vector<int64_t> values = ctx.ints_attr(name);
  if (values.size() != count) {
    return invalid_argument("'" + std::string(name) + "' " + ints_text(values) + " needs " +
                            std::to_string(count) + " entries for " +
                            std::to_string(count / (name == "pads" ? 2 : 1)) + " spatial axes");
  }
  for (int64_t v : values) {
    if (positive ? v <= 0 : v < 0) {
      return invalid_argument("'" + std::string(name) + "' " + ints_text(values) + " must be " +
                              (positive ? "positive" : "non-negative"));
    }
  }
  return values;
}

// A window's attributes per spatial axis, as ONNX gives them (pads: begin then end per axis).
struct AxisWindows {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

// The window of a Conv or pooling node over input `x` ([N, C, ...]) with kernel `kernel` (one
// entry per spatial axis): strides, dilations, pads or auto_pad.
StatusOr<AxisWindows> read_axis_windows(OnnxImportContext& ctx, int x, const std::vector<int64_t>& kernel,
                                        bool dilations) {
  const size_t r = kernel.size();
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ints_of_length(ctx, "strides", r, 1, true));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> dilation,
                       dilations ? ints_of_length(ctx, "dilations", r, 1, true)
                                 : StatusOr<std::vector<int64_t>>(std::vector<int64_t>(r, 1)));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ints_of_length(ctx, "pads", 2 * r, 0, false));
  const onnx::AttributeProto* auto_pad = ctx.attribute("auto_pad");
  const std::string mode = auto_pad ? auto_pad->s() : "NOTSET";
  if (mode != "NOTSET") {
    if (ctx.attribute("pads")) return invalid_argument("'pads' and auto_pad " + mode + " are exclusive");
    if (mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") {
      return invalid_argument("unknown auto_pad '" + mode + "'");
    }
    const std::vector<int64_t> shape = ctx.shape(x);
    for (size_t i = 0; i < r; ++i) {
      if (mode == "VALID") {
        pads[i] = pads[i + r] = 0;
        continue;
      }
      // SAME: ceil(in / stride) outputs; the padding they need, the odd one at the end (UPPER)
      // or the beginning (LOWER).
      const int64_t in = shape[2 + i], out = (in + strides[i] - 1) / strides[i];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilation[i] + 1 - in);
      pads[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + r] = total - pads[i];
    }
  }
  return AxisWindows{kernel, strides, dilation, pads};
}

// The 2-D window attributes of spatial axes `axes` (one or two of them) of `a`; one axis runs
// along W with H = 1.
WindowAttrs window_of_axes(const AxisWindows& a, const std::vector<size_t>& axes) {
  WindowAttrs w;
  const size_t r = a.kernel.size();
  const size_t first = 2 - axes.size();
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t i = axes[k];
    w.kernel[first + k] = a.kernel[i];
    w.strides[first + k] = a.strides[i];
    w.dilations[first + k] = a.dilations[i];
    w.pads[first + k] = a.pads[i];
    w.pads[2 + first + k] = a.pads[i + r];
  }
  return w;
}

// The window of a 1-D or 2-D Conv or pooling node, as 2-D attributes.
StatusOr<WindowAttrs> read_window(OnnxImportContext& ctx, int x, const std::vector<int64_t>& kernel,
                                  bool dilations) {
  IPU_ASSIGN_OR_RETURN(AxisWindows axes, read_axis_windows(ctx, x, kernel, dilations));
  return kernel.size() == 1 ? window_of_axes(axes, {0}) : window_of_axes(axes, {0, 1});
}

// Y [N, C, ...] back to the rank of the node's input.
Status set_output_like_input(OnnxImportContext& ctx, int y, size_t rank) {
  if (rank == 1) {
    const std::vector<int64_t> s = ctx.shape(y);
    IPU_ASSIGN_OR_RETURN(y, ctx.reshape(y, {s[0], s[1], s[3]}, "/output_shape"));
  }
  ctx.set_output(0, y);
  return Status();
}

// `x` permuted: output axis k is input axis perm[k] (a StridedCopy view).
StatusOr<int> permute(OnnxImportContext& ctx, int x, const std::vector<size_t>& perm,
                      const std::string& suffix) {
  const std::vector<int64_t> in = ctx.shape(x), s = ir::row_major_strides(in);
  std::vector<int64_t> shape, strides;
  for (size_t p : perm) {
    shape.push_back(in[p]);
    strides.push_back(s[p]);
  }
  return add_strided_copy(ctx, x, shape, strides, 0, suffix);
}

// 3-D Conv [N, C, D, H, W] ⊛ [M, C/group, KD, KH, KW] as one 2-D Conv: the depth window is
// gathered into the channels, X' [N·OD, C·KD, H, W] with X'[(n, od), (c, kd)] = X[n, c, od·sd +
// kd·dd − pd] (zero outside), and the kernel viewed as [M, C/group·KD, KH, KW] — channel (c, kd)
// keeps each group's channels together. Every step (pad, Gather, permutation, Conv) has its
// gradient, so it trains.
Status convert_conv_3d(OnnxImportContext& ctx, int x, int w, const std::vector<int64_t>& kernel) {
  const std::vector<int64_t> in = ctx.shape(x), ws = ctx.shape(w);
  IPU_ASSIGN_OR_RETURN(AxisWindows axes, read_axis_windows(ctx, x, kernel, true));
  const int64_t group = ctx.int_attr("group", 1);
  const int64_t before = axes.pads[0], after = axes.pads[3], depth = in[2] + before + after;
  const int64_t span = (kernel[0] - 1) * axes.dilations[0] + 1;
  if (depth < span)
    return invalid_argument("the depth window " + std::to_string(span) + " exceeds the padded depth " +
                            std::to_string(depth));
  const int64_t out_d = (depth - span) / axes.strides[0] + 1;
  int padded = x;
  if (before > 0 || after > 0) {
    ir::StridedCopyAttrs pad;
    pad.strides = ir::row_major_strides(in);
    pad.shape = {in[0], in[1], depth, in[3], in[4]};
    pad.offset = -before * pad.strides[2];
    pad.lower = {0, 0, before, 0, 0};
    pad.upper = {in[0], in[1], before + in[2], in[3], in[4]};
    IPU_ASSIGN_OR_RETURN(padded, ctx.add_op(OpKind::kStridedCopy, {x}, pad, "/depth_pads"));
  }
  std::vector<float> taps;
  for (int64_t od = 0; od < out_d; ++od) {
    for (int64_t kd = 0; kd < kernel[0]; ++kd)
      taps.push_back(static_cast<float>(od * axes.strides[0] + kd * axes.dilations[0]));
  }
  const int indices = ctx.add_constant_tensor("/depth_taps", {out_d, kernel[0]}, std::move(taps), true);
  ir::AxisAttrs gather;
  gather.axis = 2;
  IPU_ASSIGN_OR_RETURN(int windows, ctx.add_op(OpKind::kGather, {padded, indices}, gather,
                                               "/depth_windows")); // [N, C, OD, KD, H, W]
  IPU_ASSIGN_OR_RETURN(int planes_first,
                       permute(ctx, windows, {0, 2, 1, 3, 4, 5}, "/planes_first")); // [N, OD, C, KD, H, W]
  IPU_ASSIGN_OR_RETURN(
      int planes, ctx.reshape(planes_first, {in[0] * out_d, in[1] * kernel[0], in[3], in[4]}, "/planes"));
  IPU_ASSIGN_OR_RETURN(int kernel_2d, ctx.reshape(w, {ws[0], ws[1] * ws[2], ws[3], ws[4]}, "/kernel_2d"));
  ir::ConvAttrs attrs;
  attrs.window = window_of_axes(axes, {1, 2});
  attrs.window.group = group;
  std::vector<int> inputs = {planes, kernel_2d};
  if (ctx.has_input(2)) {
    IPU_ASSIGN_OR_RETURN(int b, ctx.input(2));
    inputs.push_back(b);
  }
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(OpKind::kConv, inputs, attrs)); // [N·OD, M, OH, OW]
  const std::vector<int64_t> ys = ctx.shape(y);
  IPU_ASSIGN_OR_RETURN(int split, ctx.reshape(y, {in[0], out_d, ys[1], ys[2], ys[3]}, "/depth_major"));
  IPU_ASSIGN_OR_RETURN(int out, permute(ctx, split, {0, 2, 1, 3, 4}, "/output")); // [N, M, OD, OH, OW]
  ctx.set_output(0, out);
  return Status();
}

// Conv: NCHW / NCL, with group (depthwise included), an optional bias, any pads, strides and
// dilations; NCDHW through convert_conv_3d.
Status convert_conv(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int w, ctx.input(1));
  if (ctx.shape(x).size() == 5) {
    const std::vector<int64_t> ws = ctx.shape(w);
    if (ws.size() != 5)
      return invalid_argument("kernel " + shape_text(ws) + " does not match the input " +
                              shape_text(ctx.shape(x)));
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (ctx.attribute("kernel_shape") && ctx.ints_attr("kernel_shape") != kernel) {
      return invalid_argument("kernel_shape " + ints_text(ctx.ints_attr("kernel_shape")) +
                              " differs from the kernel " + shape_text(ws));
    }
    return convert_conv_3d(ctx, x, w, kernel);
  }
  IPU_ASSIGN_OR_RETURN(size_t r, spatial_rank(ctx, x));
  const std::vector<int64_t> ws = ctx.shape(w);
  if (ws.size() != r + 2) {
    return invalid_argument("kernel " + shape_text(ws) + " does not match the input " +
                            shape_text(ctx.shape(x)));
  }
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (ctx.attribute("kernel_shape") && ctx.ints_attr("kernel_shape") != kernel) {
    return invalid_argument("kernel_shape " + ints_text(ctx.ints_attr("kernel_shape")) +
                            " differs from the kernel " + shape_text(ws));
  }
  IPU_ASSIGN_OR_RETURN(WindowAttrs window, read_window(ctx, x, kernel, true));
  window.group = ctx.int_attr("group", 1);
  ir::ConvAttrs attrs;
  attrs.window = window;
  IPU_ASSIGN_OR_RETURN(int x2, as_2d(ctx, x, "/input_2d"));
  IPU_ASSIGN_OR_RETURN(int w2, as_2d(ctx, w, "/kernel_2d"));
  std::vector<int> inputs = {x2, w2};
  if (ctx.has_input(2)) {
    IPU_ASSIGN_OR_RETURN(int b, ctx.input(2));
    inputs.push_back(b);
  }
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(OpKind::kConv, inputs, attrs));
  return set_output_like_input(ctx, y, r);
}

// ConvTranspose: Z[n, c, i] = Σ T[n, m, o]·W[m, c, k] over i = o·stride + k·dilation − pad, the
// gradient of a Conv with respect to its input (ConvGradInput, which trains: its own gradients are
// a Conv and a ConvGradWeight). 1-D and 2-D, with group, output_padding, output_shape, auto_pad.
Status convert_conv_transpose(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int w, ctx.input(1));
  IPU_ASSIGN_OR_RETURN(size_t r, spatial_rank(ctx, x));
  const std::vector<int64_t> xs = ctx.shape(x), ws = ctx.shape(w);
  const int64_t group = ctx.int_attr("group", 1);
  if (ws.size() != r + 2 || group <= 0 || ws[0] != xs[1] || xs[1] % group != 0) {
    return invalid_argument("kernel " + shape_text(ws) + " with group " + std::to_string(group) +
                            " does not match the input " + shape_text(xs) +
                            " (expected [C_in, C_out/group, k...])");
  }
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (ctx.attribute("kernel_shape") && ctx.ints_attr("kernel_shape") != kernel) {
    return invalid_argument("kernel_shape " + ints_text(ctx.ints_attr("kernel_shape")) +
                            " differs from the kernel " + shape_text(ws));
  }
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ints_of_length(ctx, "strides", r, 1, true));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, ints_of_length(ctx, "dilations", r, 1, true));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> extra, ints_of_length(ctx, "output_padding", r, 0, false));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ints_of_length(ctx, "pads", 2 * r, 0, false));
  const onnx::AttributeProto* auto_pad = ctx.attribute("auto_pad");
  const std::string mode = auto_pad ? auto_pad->s() : "NOTSET";
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") {
    return invalid_argument("unknown auto_pad '" + mode + "'");
  }
  std::vector<int64_t> out_shape = ctx.ints_attr("output_shape");
  if (!out_shape.empty() && out_shape.size() != r) {
    return invalid_argument("'output_shape' " + ints_text(out_shape) + " needs " + std::to_string(r) +
                            " entries");
  }
  std::vector<int64_t> out = {xs[0], ws[1] * group};
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = xs[2 + i], span = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t natural = strides[i] * (in - 1) + extra[i] + span;
    // ONNX: an output shape (given, or in · stride under SAME) sets the total padding, split with the
    // odd one at the end under SAME_UPPER and at the beginning otherwise; VALID pads nothing.
    if (!out_shape.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      const int64_t target = !out_shape.empty() ? out_shape[i] : in * strides[i];
      const int64_t total = natural - target;
      if (total < 0) {
        return unsupported("an output of " + std::to_string(target) + " beyond the " +
                           std::to_string(natural) +
                           " positions the kernel reaches (negative padding) is not supported");
      }
      pads[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + r] = total - pads[i];
    } else if (mode == "VALID") {
      pads[i] = pads[i + r] = 0;
    }
    if (extra[i] >= strides[i]) {
      return unsupported("output_padding " + ints_text(extra) + " not below the strides " +
                         ints_text(strides) + " is not supported");
    }
    const int64_t size = natural - pads[i] - pads[i + r];
    if (size <= 0)
      return invalid_argument("the pads leave no output positions on spatial axis " + std::to_string(i));
    out.push_back(size);
  }
  AxisWindows axes{kernel, strides, dilations, pads};
  ir::WindowGradAttrs attrs;
  attrs.window = r == 1 ? window_of_axes(axes, {0}) : window_of_axes(axes, {0, 1});
  attrs.window.group = group;
  IPU_ASSIGN_OR_RETURN(int x2, as_2d(ctx, x, "/input_2d"));
  IPU_ASSIGN_OR_RETURN(int w2, as_2d(ctx, w, "/kernel_2d"));
  attrs.shape = out;
  if (r == 1) attrs.shape.insert(attrs.shape.begin() + 2, 1);
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(OpKind::kConvGradInput, {x2, w2}, attrs));
  if (ctx.has_input(2)) {
    IPU_ASSIGN_OR_RETURN(int b, ctx.input(2));
    if (ctx.shape(b) != std::vector<int64_t>{out[1]}) {
      return invalid_argument("bias " + shape_text(ctx.shape(b)) + " does not match " +
                              std::to_string(out[1]) + " output channels");
    }
    IPU_ASSIGN_OR_RETURN(b, ctx.reshape(b, {out[1], 1, 1}, "/bias_shape"));
    IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, b, format::BinaryKind::kAdd, "/bias"));
  }
  return set_output_like_input(ctx, y, r);
}

// 3-D pooling [N, C, D, H, W] as two 2-D pools: over (H, W) on [N, C*D, H, W], then over D on
// [N, C, D, H'*W']. Both pools are separable: a max over a box is the max over D of the maxima
// over (H, W), and an average's divisor (the window positions counted: inside the input, or
// inside input and explicit pads) is a product of one factor per axis, so the average over D
// of the averages over (H, W) is the average over the box.
Status convert_pool_3d(OnnxImportContext& ctx, OpKind kind, int x, const AxisWindows& axes, bool ceil_mode,
                       bool count_include_pad) {
  const std::vector<int64_t> in = ctx.shape(x); // a copy: adding ops may move the shapes
  WindowAttrs hw = window_of_axes(axes, {1, 2});
  hw.ceil_mode = ceil_mode;
  hw.count_include_pad = count_include_pad;
  IPU_ASSIGN_OR_RETURN(int planes, ctx.reshape(x, {in[0], in[1] * in[2], in[3], in[4]}, "/planes"));
  IPU_ASSIGN_OR_RETURN(int pooled_hw, ctx.add_op(kind, {planes}, hw, "/hw"));
  const std::vector<int64_t> hw_shape = ctx.shape(pooled_hw);
  IPU_ASSIGN_OR_RETURN(int depth_major,
                       ctx.reshape(pooled_hw, {in[0], in[1], in[2], hw_shape[2] * hw_shape[3]}, "/depth"));
  // The window slides along H = D; W holds the (H', W') positions, a window of 1.
  WindowAttrs d;
  d.kernel = {axes.kernel[0], 1};
  d.strides = {axes.strides[0], 1};
  d.dilations = {axes.dilations[0], 1};
  d.pads = {axes.pads[0], 0, axes.pads[3], 0};
  d.ceil_mode = ceil_mode;
  d.count_include_pad = count_include_pad;
  IPU_ASSIGN_OR_RETURN(int pooled, ctx.add_op(kind, {depth_major}, d, "/d"));
  const int64_t out_d = ctx.shape(pooled)[2];
  IPU_ASSIGN_OR_RETURN(int y,
                       ctx.reshape(pooled, {in[0], in[1], out_d, hw_shape[2], hw_shape[3]}, "/output_shape"));
  ctx.set_output(0, y);
  return Status();
}

// Whether one [H, W] plane of `x` and a pooled output no larger would take more than half a tile:
// a pool's vertices own whole planes, so such a pool cannot be spread over tiles as it is.
bool plane_crowds_a_tile(OnnxImportContext& ctx, int x) {
  const std::vector<int64_t> s = ctx.shape(x);
  return ctx.bytes_per_tile() > 0 && static_cast<uint64_t>(s[2] * s[3]) * 2 * 4 > ctx.bytes_per_tile() / 2;
}

// A pool along rows `x` [N, P, 1, L] (window {1, K}) whose row crowds a tile, as a pool of
// segments: segment j holds the inputs of outputs [j·S, (j+1)·S), viewed (windows overlap) as
// planes [N, P·J, 1, Lseg] a quarter tile holds; the pooled segments are cropped to the row's
// outputs. Pads become explicit (−∞ for MaxPool), so only an AveragePool without pads or
// ceil_mode (whose divisor is then its tap count) can be split; any other, or a window that alone
// fills the budget, stays one plane.
StatusOr<int> pool_long_rows(OnnxImportContext& ctx, OpKind kind, int x, const WindowAttrs& window,
                             const std::string& suffix) {
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t L = in[3], K = window.kernel[1], s = window.strides[1], d = window.dilations[1];
  const int64_t before = window.pads[1], after = window.pads[3], span = (K - 1) * d + 1;
  const bool max = kind == OpKind::kMaxPool;
  const int64_t budget = static_cast<int64_t>(ctx.bytes_per_tile() / 4 / sizeof(float));
  const int64_t per_segment = (budget - span + s) / (s + 1); // S with (S − 1)·s + span + S <= budget
  if ((!max && (before > 0 || after > 0 || window.ceil_mode)) || per_segment < 1) {
    return ctx.add_op(kind, {x}, window, suffix);
  }
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> pooled_shape,
                       ir::window_output_shape({ir::DType::kFloat32, in}, window, in[1]));
  const int64_t outputs = pooled_shape[3];
  const int64_t segments = (outputs + per_segment - 1) / per_segment;
  const int64_t segment_length = (per_segment - 1) * s + span;
  // The row as the windows see it: the pads, and −∞ (never a maximum) or 0 (cropped away) past
  // the end up to the last segment's reach.
  const int64_t padded_length = (segments * per_segment - 1) * s + span;
  ir::StridedCopyAttrs pad;
  pad.strides = ir::row_major_strides(in);
  pad.shape = {in[0], in[1], 1, padded_length};
  pad.offset = -before;
  pad.fill = max ? -std::numeric_limits<float>::infinity() : 0.0f;
  pad.lower = {0, 0, 0, before};
  pad.upper = {in[0], in[1], 1, before + L};
  IPU_ASSIGN_OR_RETURN(int padded, ctx.add_op(OpKind::kStridedCopy, {x}, pad, suffix + "/row_pads"));
  // Overlapping segments are one affine view of the row (segment j starts at j·S·s), which a
  // strided copy spreads over tiles by the ranges each part reads.
  IPU_ASSIGN_OR_RETURN(int segments_view,
                       add_strided_copy(ctx, padded, {in[0], in[1], segments, segment_length},
                                        {in[1] * padded_length, padded_length, per_segment * s, 1}, 0,
                                        suffix + "/segments"));
  IPU_ASSIGN_OR_RETURN(int planes, ctx.reshape(segments_view, {in[0], in[1] * segments, 1, segment_length},
                                               suffix + "/segment_planes"));
  WindowAttrs segment_window;
  segment_window.kernel = {1, K};
  segment_window.strides = {1, s};
  segment_window.dilations = {1, d};
  IPU_ASSIGN_OR_RETURN(int pooled, ctx.add_op(kind, {planes}, segment_window, suffix + "/segment_pool"));
  const std::vector<int64_t> joined = {in[0], in[1], 1, segments * per_segment};
  IPU_ASSIGN_OR_RETURN(int row, ctx.reshape(pooled, joined, suffix + "/joined"));
  if (outputs == joined[3]) return row;
  return add_strided_copy(ctx, row, {in[0], in[1], 1, outputs}, ir::row_major_strides(joined), 0,
                          suffix + "/crop");
}

// A pool along rows `x` [N, P, 1, L], split into segments when a row crowds a tile.
StatusOr<int> pool_rows(OnnxImportContext& ctx, OpKind kind, int x, const WindowAttrs& window,
                        const std::string& suffix) {
  if (plane_crowds_a_tile(ctx, x)) return pool_long_rows(ctx, kind, x, window, suffix);
  return ctx.add_op(kind, {x}, window, suffix);
}

// A 2-D pool whose plane crowds a tile, as two 1-D pools with small planes: along W over
// [N, C·H, 1, W] (each row its own plane), then along H over [N, C·OW, 1, H] (the pooled columns
// made rows by a permutation), and back to [N, C, OH, OW]. Max and average pools are separable
// (convert_pool_3d says why), and each pass keeps its axis' pads, ceil_mode and count_include_pad.
StatusOr<int> pool_by_rows(OnnxImportContext& ctx, OpKind kind, int x, const WindowAttrs& window) {
  const std::vector<int64_t> in = ctx.shape(x); // a copy: adding ops may move the shapes
  WindowAttrs along_w, along_h;
  for (auto [attrs, axis] : {std::pair{&along_w, 1}, std::pair{&along_h, 0}}) {
    attrs->kernel = {1, window.kernel[axis]};
    attrs->strides = {1, window.strides[axis]};
    attrs->dilations = {1, window.dilations[axis]};
    attrs->pads = {0, window.pads[axis], 0, window.pads[2 + axis]};
    attrs->ceil_mode = window.ceil_mode;
    attrs->count_include_pad = window.count_include_pad;
  }
  IPU_ASSIGN_OR_RETURN(int rows, ctx.reshape(x, {in[0], in[1] * in[2], 1, in[3]}, "/rows"));
  IPU_ASSIGN_OR_RETURN(int pooled_w, pool_rows(ctx, kind, rows, along_w, "/along_w"));
  const int64_t out_w = ctx.shape(pooled_w)[3];
  IPU_ASSIGN_OR_RETURN(int grid, ctx.reshape(pooled_w, {in[0], in[1], in[2], out_w}, "/grid"));
  IPU_ASSIGN_OR_RETURN(int columns, permute(ctx, grid, {0, 1, 3, 2}, "/columns"));
  IPU_ASSIGN_OR_RETURN(int column_rows,
                       ctx.reshape(columns, {in[0], in[1] * out_w, 1, in[2]}, "/column_rows"));
  IPU_ASSIGN_OR_RETURN(int pooled_h, pool_rows(ctx, kind, column_rows, along_h, "/along_h"));
  const int64_t out_h = ctx.shape(pooled_h)[3];
  IPU_ASSIGN_OR_RETURN(int transposed, ctx.reshape(pooled_h, {in[0], in[1], out_w, out_h}, "/transposed"));
  return permute(ctx, transposed, {0, 1, 3, 2}, "/output");
}

Status convert_pool(OnnxImportContext& ctx, OpKind kind) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  // [N, C, D, H, W] runs as two 2-D pools (convert_pool_3d); 1-D and 2-D pools run directly.
  const bool three_d = ctx.shape(x).size() == 5;
  size_t r = 3;
  if (!three_d) {
    IPU_ASSIGN_OR_RETURN(r, spatial_rank(ctx, x));
  }
  const std::vector<int64_t> kernel = ctx.ints_attr("kernel_shape");
  if (kernel.size() != r) {
    return invalid_argument("'kernel_shape' " + ints_text(kernel) + " needs " + std::to_string(r) +
                            " entries for input " + shape_text(ctx.shape(x)));
  }
  for (int64_t k : kernel) {
    if (k <= 0) return invalid_argument("'kernel_shape' " + ints_text(kernel) + " must be positive");
  }
  // AveragePool gained `dilations` in version 19; the kernels take them for either pool.
  const bool dilations = kind == OpKind::kMaxPool || ctx.version() >= 19;
  if (!dilations && ctx.attribute("dilations")) {
    return invalid_argument("'dilations' is an attribute of AveragePool from version 19, this is version " +
                            std::to_string(ctx.version()));
  }
  if (three_d) {
    IPU_ASSIGN_OR_RETURN(AxisWindows axes, read_axis_windows(ctx, x, kernel, dilations));
    return convert_pool_3d(ctx, kind, x, axes, ctx.int_attr("ceil_mode", 0) != 0,
                           ctx.int_attr("count_include_pad", 0) != 0);
  }
  IPU_ASSIGN_OR_RETURN(WindowAttrs window, read_window(ctx, x, kernel, dilations));
  window.ceil_mode = ctx.int_attr("ceil_mode", 0) != 0;
  window.count_include_pad = ctx.int_attr("count_include_pad", 0) != 0;
  IPU_ASSIGN_OR_RETURN(int x2, as_2d(ctx, x, "/input_2d"));
  if (plane_crowds_a_tile(ctx, x2)) {
    IPU_ASSIGN_OR_RETURN(int y, r == 2 ? pool_by_rows(ctx, kind, x2, window)
                                       : pool_long_rows(ctx, kind, x2, window, ""));
    return set_output_like_input(ctx, y, r);
  }
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(kind, {x2}, window));
  return set_output_like_input(ctx, y, r);
}

Status convert_max_pool(OnnxImportContext& ctx) {
  if (ctx.node().output_size() > 1 && !ctx.node().output(1).empty()) {
    return unsupported("the Indices output of MaxPool is not supported");
  }
  if (ctx.int_attr("storage_order", 0) != 0)
    return unsupported("MaxPool with storage_order 1 is not supported");
  return convert_pool(ctx, OpKind::kMaxPool);
}

Status convert_average_pool(OnnxImportContext& ctx) {
  return convert_pool(ctx, OpKind::kAveragePool);
}

// Global pooling: one window over the whole plane, output [N, C, 1, 1] (or [N, C, 1]).
Status convert_global_pool(OnnxImportContext& ctx, OpKind kind) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(size_t r, spatial_rank(ctx, x));
  IPU_ASSIGN_OR_RETURN(int x2, as_2d(ctx, x, "/input_2d"));
  WindowAttrs window;
  window.kernel = {ctx.shape(x2)[2], ctx.shape(x2)[3]};
  // A plane that crowds a tile is pooled row by row, then over the row results (pool_by_rows).
  IPU_ASSIGN_OR_RETURN(int y, plane_crowds_a_tile(ctx, x2) ? pool_by_rows(ctx, kind, x2, window)
                                                           : ctx.add_op(kind, {x2}, window));
  return set_output_like_input(ctx, y, r);
}

Status convert_global_average_pool(OnnxImportContext& ctx) {
  return convert_global_pool(ctx, OpKind::kAveragePool);
}
Status convert_global_max_pool(OnnxImportContext& ctx) {
  return convert_global_pool(ctx, OpKind::kMaxPool);
}

} // namespace

std::vector<OnnxOpDef> conv_onnx_ops() {
  return {
      {"AveragePool",
       {1, 7, 10, 11, 19, 22},
       {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"},
       convert_average_pool},
      {"Conv",
       {1, 11, 22},
       {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
       convert_conv},
      {"ConvTranspose",
       {1, 11, 22},
       {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
        "strides"},
       convert_conv_transpose},
      {"GlobalAveragePool", {1, 22}, {}, convert_global_average_pool},
      {"GlobalMaxPool", {1}, {}, convert_global_max_pool},
      {"MaxPool",
       {1, 8, 10, 11, 12, 22},
       {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
       convert_max_pool},
  };
}

} // namespace ipu::frontend
