// The window geometry shared by the convolution and pooling codelets: the first params of each of
// their vertices (format::params::Window), over NCHW tensors (1-D models use H = 1).
// Kernels compute every input position from these and skip positions outside [0,H)x[0,W), so a
// window may hang over any edge; the pads only place the first window (and, for AveragePool with
// count_include_pad, bound the region that counts).
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {

inline constexpr int kWindowParams = format::params::Window::kCount;

struct Window {
  int64_t N, C, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW;

  static Window from(const std::array<int64_t, kMaxParams>& p) {
    using P = format::params::Window;
    return {p[P::kN],         p[P::kC],        p[P::kH],         p[P::kW],
            p[P::kOH],        p[P::kOW],       p[P::kKH],        p[P::kKW],
            p[P::kStrideH],   p[P::kStrideW],  p[P::kPadTop],    p[P::kPadLeft],
            p[P::kPadBottom], p[P::kPadRight], p[P::kDilationH], p[P::kDilationW]};
  }
  int64_t in_plane() const { return H * W; }
  int64_t out_plane() const { return OH * OW; }
  int64_t taps() const { return KH * KW; }
};

// The indices t in [0, count) whose position first + t·step (step > 0) lies in [0, extent), as
// [begin, end): the taps of a window inside the input, or the outputs whose tap is. Lets the
// kernels loop without a bounds check per element.
struct IndexRange {
  int64_t begin, end;
};
inline IndexRange in_bounds(int64_t first, int64_t step, int64_t extent, int64_t count) {
  if (first >= 0 && first + (count - 1) * step < extent) return {0, count}; // the common case, no division
  const int64_t begin = first >= 0 ? 0 : (-first + step - 1) / step;
  const int64_t end = first > extent - 1 ? 0 : (extent - 1 - first) / step + 1;
  const int64_t b = std::min(begin, count), e = std::min(end, count);
  return {b, std::max(b, e)};
}

// The output rows [begin, end) whose windows reach input rows [row_begin, row_end): the rows of dY
// a block of dX needs. Empty (begin >= end) when no window reaches them.
inline IndexRange output_rows_reaching(const Window& w, int64_t row_begin, int64_t row_end) {
  // oy·SH − PT + ky·DH lies in [row_begin, row_end) for some tap ky in [0, KH).
  const int64_t low = row_begin + w.PT - (w.KH - 1) * w.DH;
  const int64_t begin = low <= 0 ? 0 : (low + w.SH - 1) / w.SH;
  const int64_t end = std::min(w.OH, (row_end - 1 + w.PT) / w.SH + 1);
  return {std::min(begin, w.OH), end};
}

// Every dimension, stride and dilation positive and every pad non-negative, all small enough that
// no index computation can overflow, and the column buffer of a convolution bounded.
inline StatusOr<Window> validate_window(const format::Vertex& v) {
  if (v.params_size() < kWindowParams) return invalid_argument("too few window parameters");
  std::array<int64_t, kMaxParams> p{};
  for (int i = 0; i < kWindowParams; ++i)
    p[static_cast<size_t>(i)] = v.params(i);
  const Window w = Window::from(p);
  constexpr int64_t kMaxExtent = int64_t{1} << 24;
  for (int64_t d : {w.N, w.C, w.H, w.W, w.OH, w.OW, w.KH, w.KW, w.SH, w.SW, w.DH, w.DW}) {
    if (d <= 0 || d > kMaxExtent)
      return invalid_argument("window dimension " + std::to_string(d) + " is outside [1, 2^24]");
  }
  for (int64_t pad : {w.PT, w.PL, w.PB, w.PR}) {
    if (pad < 0 || pad > kMaxExtent)
      return invalid_argument("pad " + std::to_string(pad) + " is outside [0, 2^24]");
  }
  if (w.KH * w.KW > kMaxExtent || w.OH * w.OW > (int64_t{1} << 30))
    return invalid_argument("window too large");
  return w;
}

} // namespace ipu::kernels
