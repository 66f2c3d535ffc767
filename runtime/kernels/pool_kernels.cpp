// Pooling codelets over NCHW tensors. Each vertex owns planes (n, c) of its output, whole or a
// band of rows: a forward vertex's band is of output rows, a gradient's of input rows (dX's), so the
// gradients, which scatter into the input plane, never write another vertex's region.
// Params: runtime/format/codelet_params.def.
#include <algorithm>
#include <limits>

#include "runtime/kernels/vector_math.h"
#include "runtime/kernels/window.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// Calls f(input offset within the plane) for every tap of output (oy, ox) inside the input.
// Taps go row by row, left to right.
template <typename F> void for_each_tap(const Window& w, int64_t oy, int64_t ox, F&& f) {
  const int64_t first_iy = oy * w.SH - w.PT, first_ix = ox * w.SW - w.PL;
  const IndexRange rows = in_bounds(first_iy, w.DH, w.H, w.KH), cols = in_bounds(first_ix, w.DW, w.W, w.KW);
  for (int64_t ky = rows.begin; ky < rows.end; ++ky) {
    const int64_t row = (first_iy + ky * w.DH) * w.W + first_ix;
    for (int64_t kx = cols.begin; kx < cols.end; ++kx)
      f(row + kx * w.DW);
  }
}

// The plane offset of the first maximal tap of output (oy, ox), or -1 if the window holds no
// input position.
int64_t argmax(const Window& w, const float* plane, int64_t oy, int64_t ox) {
  int64_t best = -1;
  for_each_tap(w, oy, ox, [&](int64_t i) {
    if (best < 0 || plane[i] > plane[best]) best = i;
  });
  return best;
}

// The AveragePool divisor of output (oy, ox): the taps inside the input, or with
// count_include_pad the taps inside the input extended by the pads.
int64_t divisor(const Window& w, bool count_include_pad, int64_t oy, int64_t ox) {
  if (!count_include_pad) { // the taps for_each_tap visits: its rows by its columns
    const IndexRange rows = in_bounds(oy * w.SH - w.PT, w.DH, w.H, w.KH);
    const IndexRange cols = in_bounds(ox * w.SW - w.PL, w.DW, w.W, w.KW);
    return (rows.end - rows.begin) * (cols.end - cols.begin);
  }
  int64_t rows = 0, cols = 0;
  for (int64_t ky = 0; ky < w.KH; ++ky) {
    const int64_t iy = oy * w.SH - w.PT + ky * w.DH;
    rows += iy >= -w.PT && iy < w.H + w.PB;
  }
  for (int64_t kx = 0; kx < w.KW; ++kx) {
    const int64_t ix = ox * w.SW - w.PL + kx * w.DW;
    cols += ix >= -w.PL && ix < w.W + w.PR;
  }
  return rows * cols;
}

using format::params::AveragePool;
using format::params::AveragePoolGrad;
using format::params::MaxPool;
using format::params::MaxPoolGrad;

// The rows a vertex of layout P owns, [row_begin, row_end) of `rows`: its optional row range, or
// every row.
struct RowBand {
  int64_t begin, end;
};
template <typename P> RowBand row_band(const PreparedVertex& v, int64_t rows) {
  if (v.num_params > P::kRowEnd) return {v.params[P::kRowBegin], v.params[P::kRowEnd]};
  return {0, rows};
}

// The planes in range, and the row range either absent or within `rows`.
template <typename P>
Status validate_planes(const format::Vertex& v, const Window& w, int64_t rows, const char* row_name) {
  if (v.params_size() == P::kCount) {
    IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
    IPU_RETURN_IF_ERROR(expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), rows, row_name));
  } else {
    IPU_RETURN_IF_ERROR(expect_param_count(v, P::kRowBegin, 0));
  }
  return expect_range(v.params(P::kPlaneBegin), v.params(P::kPlaneEnd), w.N * w.C, "plane");
}

// The maximum of output (oy, ox)'s taps inside `x`, -inf if there are none. Kept in a register
// and without a branch per tap: start from the first tap and take any greater one (a NaN first
// tap stays, as there).
float max_of_window(const Window& w, const float* x, int64_t oy, int64_t ox) {
  const int64_t first_iy = oy * w.SH - w.PT, first_ix = ox * w.SW - w.PL;
  const IndexRange rows = in_bounds(first_iy, w.DH, w.H, w.KH), cols = in_bounds(first_ix, w.DW, w.W, w.KW);
  if (rows.begin == rows.end || cols.begin == cols.end) return -std::numeric_limits<float>::infinity();
  float best = x[(first_iy + rows.begin * w.DH) * w.W + first_ix + cols.begin * w.DW];
  for (int64_t ky = rows.begin; ky < rows.end; ++ky) {
    const int64_t row = (first_iy + ky * w.DH) * w.W + first_ix;
    for (int64_t kx = cols.begin; kx < cols.end; ++kx) {
      const float t = x[row + kx * w.DW];
      best = t > best ? t : best;
    }
  }
  return best;
}

// Outputs [cols.begin, cols.end) of row oy, whose every tap lies inside `x`: one pass over the
// row per tap, in max_of_window's tap order and with its comparison, so the result is the same.
// The passes are plain loops the compiler vectorises when the stride is a constant (kStride > 0;
// 0 reads w.SW): a 2×2 pool is otherwise mostly loop overhead.
template <int kStride>
void max_pool_interior_row(const Window& w, const float* x, int64_t oy, IndexRange cols, float* y) {
  const int64_t stride = kStride > 0 ? kStride : w.SW, first_iy = oy * w.SH - w.PT;
  for (int64_t ky = 0; ky < w.KH; ++ky) {
    for (int64_t kx = 0; kx < w.KW; ++kx) {
      // x[base + ox·stride] is tap (ky, kx) of output ox; base alone may lie before the row.
      const int64_t base = (first_iy + ky * w.DH) * w.W + kx * w.DW - w.PL;
      if (ky == 0 && kx == 0) {
        for (int64_t ox = cols.begin; ox < cols.end; ++ox)
          y[ox] = x[base + ox * stride];
        continue;
      }
      for (int64_t ox = cols.begin; ox < cols.end; ++ox) {
        const float t = x[base + ox * stride];
        y[ox] = t > y[ox] ? t : y[ox];
      }
    }
  }
}

// max_pool_interior_row for the common 2×2 window without dilation and with a column stride of 1:
// the four taps in one pass, so a narrow row (a late layer's few columns) costs one vectorised
// loop instead of four. (A column stride of 2 goes to max_pool_2x2_cols_stride2.)
void max_pool_interior_row_2x2_stride1(const Window& w, const float* x, int64_t oy, IndexRange cols,
                                       float* y) {
  const int64_t top = (oy * w.SH - w.PT) * w.W - w.PL, bottom = top + w.W;
  for (int64_t ox = cols.begin; ox < cols.end; ++ox) {
    float best = x[top + ox];
    best = x[top + ox + 1] > best ? x[top + ox + 1] : best;
    best = x[bottom + ox] > best ? x[bottom + ox] : best;
    best = x[bottom + ox + 1] > best ? x[bottom + ox + 1] : best;
    y[ox] = best;
  }
}

// The outputs of a band whose windows lie wholly inside the input: rows and columns.
struct Interior {
  IndexRange rows, cols;
  // Row oy's inner columns, none if the row is not inner.
  IndexRange cols_of(int64_t oy) const { return oy >= rows.begin && oy < rows.end ? cols : IndexRange{0, 0}; }
};
Interior interior_of(const Window& w, const RowBand& band) {
  const IndexRange rows = in_bounds(-w.PT, w.SH, w.H - (w.KH - 1) * w.DH, w.OH);
  const IndexRange cols = in_bounds(-w.PL, w.SW, w.W - (w.KW - 1) * w.DW, w.OW);
  const int64_t first = std::clamp(rows.begin, band.begin, band.end);
  const bool any_cols = cols.begin < cols.end;
  const IndexRange inner{first, any_cols ? std::clamp(rows.end, first, band.end) : first};
  return {inner, cols};
}

// MaxPool: Y[p, oy, ox] = the maximum of the window's taps inside X[p] for planes
// p = n·C + c in [plane_begin, plane_end) and rows oy of the vertex's band; -inf for a window that
// holds no input position.
//   operands: X [N,C,H,W], Y [N,C,OH,OW]
//   params:   format::params::MaxPool
void run_max_pool(const PreparedVertex& v) {
  const Window w = Window::from(v.params);
  const bool two_by_two = w.KH == 2 && w.KW == 2 && w.DH == 1 && w.DW == 1;
  // The usual 2×2 pool of stride 2 takes its inner rows all at once, below.
  const bool rows_at_once = two_by_two && w.SW == 2;
  const auto run_interior = two_by_two && w.SW == 1 ? max_pool_interior_row_2x2_stride1
                            : w.SW == 2             ? max_pool_interior_row<2>
                            : w.SW == 1             ? max_pool_interior_row<1>
                                                    : max_pool_interior_row<0>;
  const RowBand band = row_band<MaxPool>(v, w.OH);
  const Interior interior = interior_of(w, band);
  const IndexRange& inner = interior.rows;
  for (int64_t p = v.params[MaxPool::kPlaneBegin]; p < v.params[MaxPool::kPlaneEnd]; ++p) {
    const float* x = v.f32(0) + p * w.in_plane();
    float* y = v.f32(1) + p * w.out_plane();
    for (int64_t oy = band.begin; oy < band.end; ++oy) {
      float* out = y + oy * w.OW;
      const IndexRange fast = interior.cols_of(oy);
      if (fast.begin < fast.end && !rows_at_once) run_interior(w, x, oy, fast, out);
      for (int64_t ox = 0; ox < fast.begin; ++ox)
        out[ox] = max_of_window(w, x, oy, ox);
      for (int64_t ox = fast.end; ox < w.OW; ++ox)
        out[ox] = max_of_window(w, x, oy, ox);
    }
    if (rows_at_once && inner.begin < inner.end) {
      const IndexRange& cols = interior.cols;
      const int64_t first_tap = (inner.begin * w.SH - w.PT) * w.W + cols.begin * w.SW - w.PL;
      max_pool_2x2_cols_stride2({x + first_tap, w.SH * w.W, w.W, y + inner.begin * w.OW + cols.begin, w.OW,
                                 cols.end - cols.begin, inner.end - inner.begin});
    }
  }
}

// MaxPool and AveragePool (layout P): X [N,C,H,W] → Y [N,C,OH,OW] over planes [plane_begin,
// plane_end), optionally output rows [row_begin, row_end) of them.
template <typename P> Status validate_pool(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_ASSIGN_OR_RETURN(Window w, validate_window(v));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.H, w.W}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.OH, w.OW}, ops[1].elements, "Y"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("output aliases the input");
  return validate_planes<P>(v, w, w.OH, "output row");
}

Status validate_max_pool(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  return validate_pool<MaxPool>(v, ops);
}

// MaxPoolGrad: dX[p] = dY[p] routed to the first maximal tap of each window (ties go to the
// first in row-major order, as in MaxPool's forward pass), planes [plane_begin, plane_end) and
// rows of dX in the vertex's band. The windows are visited in the same order whatever the band,
// so each element of dX sums the same terms in the same order as a whole-plane vertex's.
//   operands: X [N,C,H,W], dY [N,C,OH,OW], dX [N,C,H,W]
//   params:   format::params::MaxPoolGrad
void run_max_pool_grad(const PreparedVertex& v) {
  const Window w = Window::from(v.params);
  const RowBand band = row_band<MaxPoolGrad>(v, w.H);
  const IndexRange reaching = output_rows_reaching(w, band.begin, band.end);
  const int64_t first = band.begin * w.W, last = band.end * w.W;
  for (int64_t p = v.params[MaxPoolGrad::kPlaneBegin]; p < v.params[MaxPoolGrad::kPlaneEnd]; ++p) {
    const float* x = v.f32(0) + p * w.in_plane();
    const float* dy = v.f32(1) + p * w.out_plane();
    float* dx = v.f32(2) + p * w.in_plane();
    std::fill(dx + first, dx + last, 0.0f);
    for (int64_t oy = reaching.begin; oy < reaching.end; ++oy) {
      for (int64_t ox = 0; ox < w.OW; ++ox) {
        const int64_t best = argmax(w, x, oy, ox);
        if (best >= first && best < last) dx[best] += dy[oy * w.OW + ox];
      }
    }
  }
}

Status validate_max_pool_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_ASSIGN_OR_RETURN(Window w, validate_window(v));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.H, w.W}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.OH, w.OW}, ops[1].elements, "dY"));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.H, w.W}, ops[2].elements, "dX"));
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1))
    return invalid_argument("output aliases an input");
  return validate_planes<MaxPoolGrad>(v, w, w.H, "input row");
}

// Output (oy, ox) of AveragePool: its taps inside `x` added from 0 in row-major order, over the
// divisor; 0 for a window with none.
float average_of_window(const Window& w, bool include_pad, const float* x, int64_t oy, int64_t ox) {
  float sum = 0.0f;
  for_each_tap(w, oy, ox, [&](int64_t i) { sum += x[i]; });
  const int64_t count = divisor(w, include_pad, oy, ox);
  return count > 0 ? sum / static_cast<float>(count) : 0.0f;
}

// Outputs [cols.begin, cols.end) of row oy, whose every tap lies inside `x` (so both divisors are
// KH·KW): one pass over the row per tap, adding into y in average_of_window's order from 0, then
// the division, so each result is that function's. Plain loops the compiler vectorises when the
// stride is a constant (kStride > 0; 0 reads w.SW), where the window loop cost a bounds check and a
// second walk over the taps (the divisor) per output.
template <int kStride>
void average_pool_interior_row(const Window& w, const float* x, int64_t oy, IndexRange cols, float* y) {
  const int64_t stride = kStride > 0 ? kStride : w.SW, first_iy = oy * w.SH - w.PT;
  std::fill(y + cols.begin, y + cols.end, 0.0f);
  for (int64_t ky = 0; ky < w.KH; ++ky) {
    for (int64_t kx = 0; kx < w.KW; ++kx) {
      // x[base + ox·stride] is tap (ky, kx) of output ox; base alone may lie before the row.
      const int64_t base = (first_iy + ky * w.DH) * w.W + kx * w.DW - w.PL;
      for (int64_t ox = cols.begin; ox < cols.end; ++ox)
        y[ox] += x[base + ox * stride];
    }
  }
  const auto count = static_cast<float>(w.KH * w.KW);
  for (int64_t ox = cols.begin; ox < cols.end; ++ox)
    y[ox] /= count;
}

// A pass per tap pays off over a row of outputs; a global pool's one output sums its taps faster
// in a register.
constexpr int64_t kMinPassOutputs = 4;

// AveragePool: Y[p, oy, ox] = the sum of the window's taps inside X[p] over the divisor (see
// divisor()); 0 for a window with none. Planes [plane_begin, plane_end), rows oy of the band.
//   operands: X [N,C,H,W], Y [N,C,OH,OW]
//   params:   format::params::AveragePool
void run_average_pool(const PreparedVertex& v) {
  const Window w = Window::from(v.params);
  const bool include_pad = v.params[AveragePool::kCountIncludePad] != 0;
  const RowBand band = row_band<AveragePool>(v, w.OH);
  const Interior interior = interior_of(w, band);
  const auto run_interior = w.SW == 1   ? average_pool_interior_row<1>
                            : w.SW == 2 ? average_pool_interior_row<2>
                                        : average_pool_interior_row<0>;
  for (int64_t p = v.params[AveragePool::kPlaneBegin]; p < v.params[AveragePool::kPlaneEnd]; ++p) {
    const float* x = v.f32(0) + p * w.in_plane();
    float* y = v.f32(1) + p * w.out_plane();
    for (int64_t oy = band.begin; oy < band.end; ++oy) {
      float* out = y + oy * w.OW;
      IndexRange fast = interior.cols_of(oy);
      if (fast.end - fast.begin < kMinPassOutputs) fast = {0, 0};
      run_interior(w, x, oy, fast, out);
      for (int64_t ox = 0; ox < fast.begin; ++ox)
        out[ox] = average_of_window(w, include_pad, x, oy, ox);
      for (int64_t ox = fast.end; ox < w.OW; ++ox)
        out[ox] = average_of_window(w, include_pad, x, oy, ox);
    }
  }
}

Status validate_average_pool(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  return validate_pool<AveragePool>(v, ops);
}

// AveragePoolGrad: dX[p] = each dY[p, oy, ox] over its divisor, added to every tap of its window
// inside the input. Planes [plane_begin, plane_end), rows of dX in the band, each summing its terms
// in a whole-plane vertex's order (see MaxPoolGrad).
//   operands: dY [N,C,OH,OW], dX [N,C,H,W]
//   params:   format::params::AveragePoolGrad
void run_average_pool_grad(const PreparedVertex& v) {
  const Window w = Window::from(v.params);
  const bool include_pad = v.params[AveragePoolGrad::kCountIncludePad] != 0;
  const RowBand band = row_band<AveragePoolGrad>(v, w.H);
  const IndexRange reaching = output_rows_reaching(w, band.begin, band.end);
  const int64_t first = band.begin * w.W, last = band.end * w.W;
  for (int64_t p = v.params[AveragePoolGrad::kPlaneBegin]; p < v.params[AveragePoolGrad::kPlaneEnd]; ++p) {
    const float* dy = v.f32(0) + p * w.out_plane();
    float* dx = v.f32(1) + p * w.in_plane();
    std::fill(dx + first, dx + last, 0.0f);
    for (int64_t oy = reaching.begin; oy < reaching.end; ++oy) {
      for (int64_t ox = 0; ox < w.OW; ++ox) {
        const int64_t count = divisor(w, include_pad, oy, ox);
        if (count == 0) continue;
        const float share = dy[oy * w.OW + ox] / static_cast<float>(count);
        for_each_tap(w, oy, ox, [&](int64_t i) {
          if (i >= first && i < last) dx[i] += share;
        });
      }
    }
  }
}

Status validate_average_pool_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_ASSIGN_OR_RETURN(Window w, validate_window(v));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.OH, w.OW}, ops[0].elements, "dY"));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.H, w.W}, ops[1].elements, "dX"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("output aliases the input");
  return validate_planes<AveragePoolGrad>(v, w, w.H, "input row");
}

} // namespace

const KernelDef& max_pool_kernel() {
  static const KernelDef def{
      Codelet::kMaxPool, run_max_pool, validate_max_pool, {MaxPool::kPlaneBegin, MaxPool::kPlaneEnd}};
  return def;
}
const KernelDef& max_pool_grad_kernel() {
  static const KernelDef def{Codelet::kMaxPoolGrad,
                             run_max_pool_grad,
                             validate_max_pool_grad,
                             {MaxPoolGrad::kPlaneBegin, MaxPoolGrad::kPlaneEnd}};
  return def;
}
const KernelDef& average_pool_kernel() {
  static const KernelDef def{Codelet::kAveragePool,
                             run_average_pool,
                             validate_average_pool,
                             {AveragePool::kPlaneBegin, AveragePool::kPlaneEnd}};
  return def;
}
const KernelDef& average_pool_grad_kernel() {
  static const KernelDef def{Codelet::kAveragePoolGrad,
                             run_average_pool_grad,
                             validate_average_pool_grad,
                             {AveragePoolGrad::kPlaneBegin, AveragePoolGrad::kPlaneEnd}};
  return def;
}

} // namespace ipu::kernels
