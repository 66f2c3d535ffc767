// Output sizes and vertex params of windowed ops (Conv, pooling) over NCHW values.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "runtime/format/codelet_params.h"

namespace ipu::ir {

// Output length of one spatial axis, ONNX's rule: floor (or ceil) of (in + pads − extent) /
// stride, plus one; with ceil_mode a last window starting beyond the input and its leading pad is
// dropped. InvalidArgument if the dilated kernel is longer than the padded input.
inline StatusOr<int64_t> window_output_length(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                              int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  if (kernel <= 0 || stride <= 0 || dilation <= 0 || pad_begin < 0 || pad_end < 0) {
    return invalid_argument("kernel, strides and dilations must be positive and pads non-negative");
  }
  const int64_t extent = dilation * (kernel - 1) + 1;
  const int64_t room = in + pad_begin + pad_end - extent;
  if (room < 0) {
    return invalid_argument("a window of extent " + std::to_string(extent) + " does not fit an input of " +
                            std::to_string(in) + " with pads " + std::to_string(pad_begin) + "+" +
                            std::to_string(pad_end));
  }
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// [N, C, OH, OW] of a window over x [N, C, H, W] (C replaced by `channels`).
inline StatusOr<std::vector<int64_t>> window_output_shape(const TensorType& x, const WindowAttrs& w,
                                                          int64_t channels) {
  if (x.shape.size() != 4) return invalid_argument("expects an NCHW input, got " + x.to_string());
  IPU_ASSIGN_OR_RETURN(int64_t oh, window_output_length(x.shape[2], w.kernel[0], w.strides[0], w.dilations[0],
                                                        w.pads[0], w.pads[2], w.ceil_mode));
  IPU_ASSIGN_OR_RETURN(int64_t ow, window_output_length(x.shape[3], w.kernel[1], w.strides[1], w.dilations[1],
                                                        w.pads[1], w.pads[3], w.ceil_mode));
  return std::vector<int64_t>{x.shape[0], channels, oh, ow};
}

// The input rows [begin, end) of an input of `H` rows that the windows of output rows [ob, oe)
// reach.
inline std::pair<int64_t, int64_t> window_input_rows(int64_t H, const WindowAttrs& w, int64_t ob,
                                                     int64_t oe) {
  const int64_t extent = (w.kernel[0] - 1) * w.dilations[0] + 1;
  const int64_t begin = std::clamp<int64_t>(ob * w.strides[0] - w.pads[0], 0, H);
  return {begin, std::clamp<int64_t>((oe - 1) * w.strides[0] - w.pads[0] + extent, begin, H)};
}

// The output rows [begin, end) of an output of `OH` rows whose windows reach input rows [rb, re)
// (the kernels' output_rows_reaching): the rows of dY a block of dX needs; empty when none does.
inline std::pair<int64_t, int64_t> window_output_rows_reaching(int64_t OH, const WindowAttrs& w, int64_t rb,
                                                               int64_t re) {
  const int64_t stride = w.strides[0], pad = w.pads[0];
  const int64_t low = rb + pad - (w.kernel[0] - 1) * w.dilations[0];
  const int64_t begin = std::min(OH, low <= 0 ? 0 : (low + stride - 1) / stride);
  return {begin, std::max(begin, std::min(OH, (re - 1 + pad) / stride + 1))};
}

// The window params (format::params::Window) that the convolution and pooling codelets start with,
// for x [N, C, H, W] and y [N, ·, OH, OW]; pads are top, left, bottom, right.
inline std::vector<int64_t> window_params(const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                                          const WindowAttrs& w) {
  using P = format::params::Window;
  return format::make_params<P>({{P::kN, x[0]},
                                 {P::kC, x[1]},
                                 {P::kH, x[2]},
                                 {P::kW, x[3]},
                                 {P::kOH, y[2]},
                                 {P::kOW, y[3]},
                                 {P::kKH, w.kernel[0]},
                                 {P::kKW, w.kernel[1]},
                                 {P::kStrideH, w.strides[0]},
                                 {P::kStrideW, w.strides[1]},
                                 {P::kPadTop, w.pads[0]},
                                 {P::kPadLeft, w.pads[1]},
                                 {P::kPadBottom, w.pads[2]},
                                 {P::kPadRight, w.pads[3]},
                                 {P::kDilationH, w.dilations[0]},
                                 {P::kDilationW, w.dilations[1]}});
}

} // namespace ipu::ir
