// Convolution codelets over NCHW tensors. The forward convolution runs through oneDNN
// (conv_forward.h); its gradients build a sample's column matrix (im2col) in a per-thread buffer
// and take one OpenBLAS SGEMM per (sample, group). Params: runtime/format/codelet_params.def.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/kernels/conv_forward.h"
#include "runtime/kernels/window.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

using Conv = format::params::Conv;
using ConvGradInput = format::params::ConvGradInput;
using ConvGradWeight = format::params::ConvGradWeight;
// conv_shape reads the window, M and G of all three layouts by Conv's names.
static_assert(int{ConvGradInput::kM} == Conv::kM && int{ConvGradInput::kG} == Conv::kG &&
              int{ConvGradWeight::kM} == Conv::kM && int{ConvGradWeight::kG} == Conv::kG);

// Copies n floats. A convolution's rows are often a few floats wide, where a call to memmove
// costs more than the copy: short rows are copied inline in fixed-size pieces.
inline void copy_row(const float* in, int64_t n, float* out) {
  if (n >= 16) {
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  int64_t i = 0;
  if (n >= 8) {
    std::memcpy(out, in, 8 * sizeof(float));
    i = 8;
  }
  if (n - i >= 4) {
    std::memcpy(out + i, in + i, 4 * sizeof(float));
    i += 4;
  }
  for (; i < n; ++i)
    out[i] = in[i];
}

// The column matrix of one sample's channels [c0, c0 + channels) for output rows
// [oy_begin, oy_end): row (c, ky, kx), column (oy − oy_begin, ox). Each row is a strided copy of
// an input plane: the output rows and columns whose tap lies inside the input are found once per
// row, so the copy loop has no bounds checks.
void im2col(const Window& w, const float* x, int64_t channels, int64_t oy_begin, int64_t oy_end, float* col) {
  const int64_t cols = (oy_end - oy_begin) * w.OW;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ky = 0; ky < w.KH; ++ky) {
      const IndexRange all_rows = in_bounds(ky * w.DH - w.PT, w.SH, w.H, w.OH);
      const int64_t first = std::clamp(all_rows.begin, oy_begin, oy_end);
      const IndexRange rows{first, std::clamp(all_rows.end, first, oy_end)};
      for (int64_t kx = 0; kx < w.KW; ++kx) {
        float* row = col + ((c * w.KH + ky) * w.KW + kx) * cols;
        const int64_t first_ix = kx * w.DW - w.PL;
        const IndexRange inside = in_bounds(first_ix, w.SW, w.W, w.OW);
        const int64_t width = inside.end - inside.begin;
        std::fill(row, row + (rows.begin - oy_begin) * w.OW, 0.0f);
        std::fill(row + (rows.end - oy_begin) * w.OW, row + cols, 0.0f);
        // The input offset of tap (ky, kx) of output (oy, inside.begin), for the first row.
        int64_t in = (c * w.H + rows.begin * w.SH - w.PT + ky * w.DH) * w.W + first_ix + inside.begin * w.SW;
        for (int64_t oy = rows.begin; oy < rows.end; ++oy, in += w.SH * w.W) {
          float* out = row + (oy - oy_begin) * w.OW;
          if (width < w.OW) {
            std::fill(out, out + inside.begin, 0.0f);
            std::fill(out + inside.end, out + w.OW, 0.0f);
            if (width == 0) continue;
          }
          if (w.SW == 1) {
            copy_row(x + in, width, out + inside.begin);
          } else {
            for (int64_t i = 0; i < width; ++i)
              out[inside.begin + i] = x[in + i * w.SW];
          }
        }
      }
    }
  }
}

// The adjoint of im2col over output rows [oy_begin, oy_end), the columns of `col`: adds every
// column entry back onto the input position it came from if that lies in input rows
// [iy_begin, iy_end) (within [0, H)). Each input position takes its taps in (ky, kx) order
// whatever the ranges, so a split over rows adds what the whole plane adds, in the same order.
void col2im_add(const Window& w, const float* col, int64_t channels, int64_t oy_begin, int64_t oy_end,
                int64_t iy_begin, int64_t iy_end, float* x) {
  const int64_t cols = (oy_end - oy_begin) * w.OW;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ky = 0; ky < w.KH; ++ky) {
      for (int64_t kx = 0; kx < w.KW; ++kx) {
        const float* row = col + ((c * w.KH + ky) * w.KW + kx) * cols;
        for (int64_t oy = oy_begin; oy < oy_end; ++oy) {
          const int64_t iy = oy * w.SH - w.PT + ky * w.DH;
          if (iy < iy_begin || iy >= iy_end) continue;
          float* in = x + (c * w.H + iy) * w.W;
          const float* from = row + (oy - oy_begin) * w.OW;
          for (int64_t ox = 0; ox < w.OW; ++ox) {
            const int64_t ix = ox * w.SW - w.PL + kx * w.DW;
            if (ix >= 0 && ix < w.W) in[ix] += from[ox];
          }
        }
      }
    }
  }
}

struct ConvShape {
  Window w;
  int64_t M, G, Cg, Mg, K; // K: rows of the column matrix, Cg·KH·KW
};

ConvShape conv_shape(const PreparedVertex& v) {
  const Window w = Window::from(v.params);
  const int64_t M = v.params[Conv::kM], G = v.params[Conv::kG];
  return {w, M, G, w.C / G, M / G, w.C / G * w.taps()};
}

// Checks the geometry, the group counts and the operand sizes shared by the three codelets.
StatusOr<ConvShape> validate_conv_shape(const format::Vertex& v, uint64_t x_elements, uint64_t w_elements,
                                        uint64_t y_elements) {
  IPU_ASSIGN_OR_RETURN(Window w, validate_window(v));
  const int64_t M = v.params(Conv::kM), G = v.params(Conv::kG);
  // Bounded like the window's dimensions, so every SGEMM dimension fits BLAS's int.
  if (M <= 0 || M > (int64_t{1} << 24))
    return invalid_argument("output channels " + std::to_string(M) + " outside [1, 2^24]");
  if (G <= 0 || w.C % G != 0 || M % G != 0) {
    return invalid_argument("channels " + std::to_string(w.C) + " and " + std::to_string(M) +
                            " are not both divisible by " + std::to_string(G) + " groups");
  }
  const int64_t K = w.C / G * w.taps();
  if (K > (int64_t{1} << 28) / w.out_plane())
    return invalid_argument("column buffer larger than 2^28 elements");
  IPU_RETURN_IF_ERROR(expect_elements({w.N, w.C, w.H, w.W}, x_elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({M, K}, w_elements, "W"));
  IPU_RETURN_IF_ERROR(expect_elements({w.N, M, w.OH, w.OW}, y_elements, "Y"));
  return ConvShape{w, M, G, w.C / G, M / G, K};
}

// The elements of one partial of an operand holding `parts` of them (a Conv's or ConvGradInput's
// channel share writes partial `part`), after checking that `part` is one of them and they divide it.
StatusOr<uint64_t> elements_per_partial(int64_t part, int64_t parts, uint64_t elements, const char* operand) {
  IPU_RETURN_IF_ERROR(expect_range(part, part + 1, parts, "partial"));
  if (elements % static_cast<uint64_t>(parts) != 0) {
    return invalid_argument(std::string(operand) + "'s " + std::to_string(elements) + " elements are not " +
                            std::to_string(parts) + " partials");
  }
  return elements / static_cast<uint64_t>(parts);
}

bool distinct(const format::Vertex& v) {
  for (int i = 0; i < v.operands_size(); ++i) {
    for (int j = i + 1; j < v.operands_size(); ++j) {
      if (v.operands(i) == v.operands(j)) return false;
    }
  }
  return true;
}

// The output rows a Conv vertex computes: [out_row_begin, out_row_end) if it gives them, else the
// whole plane (executables from before row splits).
struct RowRange {
  int64_t begin, end;
};
RowRange conv_rows(const PreparedVertex& v, const Window& w) {
  if (v.num_params > Conv::kOutRowEnd) return {v.params[Conv::kOutRowBegin], v.params[Conv::kOutRowEnd]};
  return {0, w.OH};
}

// The input channels (within a group) a Conv vertex sums, and the partial of Y it writes: with the
// share, [c_begin, c_end) into partial `part`; else every channel of the group into Y itself.
struct ChannelShare {
  int64_t c_begin, c_end, part;
};
ChannelShare conv_share(const PreparedVertex& v, const ConvShape& s) {
  if (v.num_params == Conv::kCount)
    return {v.params[Conv::kCBegin], v.params[Conv::kCEnd], v.params[Conv::kPart]};
  return {0, s.Cg, 0};
}

// Conv: Y[n, m, oy] = sum over the group's channels and taps of W[m] · X[n] (+ B[m]) for samples
// [n_begin, n_end), output channels [m_begin, m_end) and output rows [out_row_begin, out_row_end);
// with fused_relu 1, max(0, ·) of that (a Relu folded in by the compiler,
// compiler/passes/fuse_epilogues.h). Reads only the input rows those rows' windows reach. With the
// share, the sum over input channels [c_begin, c_end) only, into partial `part` of Y, the bias
// added by the share of c_begin 0 (as poplin splits a convolution's input channels).
//   operands: X [N,C,H,W], W [M,C/G,KH,KW], B [M] (optional), Y [N,M,OH,OW] (with the share,
//             [parts,N,M,OH,OW])
//   params:   format::params::Conv (fused_relu optional, 0 or 1; the row range optional after it,
//             then the share)
void run_conv(const PreparedVertex& v, KernelContext& context) {
  const ConvShape s = conv_shape(v);
  const Window& w = s.w;
  const bool has_bias = v.num_operands == 4;
  const int64_t plane = w.out_plane(), n_begin = v.params[Conv::kNBegin], n_end = v.params[Conv::kNEnd];
  const int64_t m_begin = v.params[Conv::kMBegin], m_end = v.params[Conv::kMEnd];
  const ChannelShare share = conv_share(v, s);
  float* y = v.f32(has_bias ? 3 : 2) + share.part * w.N * s.M * plane;
  const RowRange rows = conv_rows(v, w);
  if (n_end <= n_begin || rows.end <= rows.begin) return;
  const bool adds_bias = has_bias && share.c_begin == 0;
  // Group by group, except a depthwise convolution's groups (one input and one output channel
  // each), which run as one grouped call: oneDNN's depthwise kernels sum an output's taps in the
  // order a single group's call does, where its grouped kernels for wider groups do not (measured:
  // groups of 4 channels differ in the last bit, and with AVX2 alone, on an AMD EPYC, groups of
  // one input and two output channels).
  const bool depthwise = s.Cg == 1 && s.Mg == 1;
  for (int64_t lo = m_begin; lo < m_end;) {
    const int64_t g = lo / s.Mg;
    const int64_t groups = depthwise ? m_end - lo : 1;
    const int64_t hi = depthwise ? m_end : std::min(m_end, (g + 1) * s.Mg);
    ConvBlock block{v.f32(0) + (n_begin * w.C + g * s.Cg + share.c_begin) * w.in_plane(),
                    v.f32(1) + lo * s.K + share.c_begin * w.taps(),
                    adds_bias ? v.f32(2) + lo : nullptr,
                    y + (n_begin * s.M + lo) * plane,
                    n_end - n_begin,
                    share.c_end - share.c_begin,
                    hi - lo,
                    s.M,
                    rows.begin,
                    rows.end,
                    s.K};
    block.groups = groups;
    // Our own clamp rather than oneDNN's Relu post-op, which keeps a NaN: the unfused Relu kernel
    // makes it 0, and a fused model must compute what the unfused one did.
    block.relu = v.num_params > Conv::kFusedRelu && v.params[Conv::kFusedRelu] != 0;
    conv_forward(context, w, block);
    lo = hi;
  }
}

Status validate_conv(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  const bool has_bias = ops.size() == 4;
  if (has_bias) {
    IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  } else {
    IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  }
  // Without a row range the params end at the optional fused_relu; with one, it follows the flag,
  // and the share may follow the row range.
  const bool has_share = v.params_size() == Conv::kCount;
  const bool has_rows = has_share || v.params_size() == Conv::kOutRowEnd + 1;
  if (has_rows) {
    const int64_t flag = v.params(Conv::kFusedRelu);
    if (flag != 0 && flag != 1)
      return invalid_argument("fused_relu must be 0 or 1, got " + std::to_string(flag));
  } else {
    IPU_RETURN_IF_ERROR(expect_params_with_optional_flag(v, Conv::kFusedRelu, "fused_relu"));
  }
  uint64_t y_elements = ops.back().elements;
  if (has_share) {
    IPU_ASSIGN_OR_RETURN(
        y_elements, elements_per_partial(v.params(Conv::kPart), v.params(Conv::kParts), y_elements, "Y"));
    if (v.params(Conv::kG) != 1 || v.params(Conv::kFusedRelu) != 0)
      return invalid_argument("an input-channel share needs 1 group and fused_relu 0");
  }
  IPU_ASSIGN_OR_RETURN(ConvShape s, validate_conv_shape(v, ops[0].elements, ops[1].elements, y_elements));
  if (has_bias) IPU_RETURN_IF_ERROR(expect_elements({s.M}, ops[2].elements, "B"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(Conv::kNBegin), v.params(Conv::kNEnd), s.w.N, "sample"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(Conv::kMBegin), v.params(Conv::kMEnd), s.M, "channel"));
  if (has_rows)
    IPU_RETURN_IF_ERROR(
        expect_range(v.params(Conv::kOutRowBegin), v.params(Conv::kOutRowEnd), s.w.OH, "output row"));
  if (has_share) {
    IPU_RETURN_IF_ERROR(expect_range(v.params(Conv::kCBegin), v.params(Conv::kCEnd), s.Cg, "input channel"));
    if (v.params(Conv::kCBegin) == v.params(Conv::kCEnd))
      return invalid_argument("the input-channel share is empty");
  }
  if (!distinct(v)) return invalid_argument("operands must be distinct tensors");
  return Status();
}

// The block of dX a ConvGradInput vertex computes: input channels [c_begin, c_end) and input rows
// [row_begin, row_end) if it gives them, else every channel and the whole plane (executables from
// before these splits).
struct GradInputBlock {
  int64_t c_begin, c_end, row_begin, row_end;
};
GradInputBlock grad_input_block(const PreparedVertex& v, const Window& w) {
  using P = ConvGradInput;
  if (v.num_params > P::kInRowEnd) {
    return {v.params[P::kCBegin], v.params[P::kCEnd], v.params[P::kInRowBegin], v.params[P::kInRowEnd]};
  }
  return {0, w.C, 0, w.H};
}

// The output channels (within a group) a ConvGradInput vertex sums, and the partial of dX it
// writes: with the share, [m_begin, m_end) into partial `part`; else every output channel of the
// group into dX itself.
struct OutputShare {
  int64_t m_begin, m_end, part;
};
OutputShare grad_input_share(const PreparedVertex& v, const ConvShape& s) {
  using P = ConvGradInput;
  if (v.num_params == P::kCount) return {v.params[P::kMBegin], v.params[P::kMEnd], v.params[P::kPart]};
  return {0, s.Mg, 0};
}

// ConvGradInput: dX[n] = the adjoint of the convolution applied to dY[n], for samples
// [n_begin, n_end), input channels [c_begin, c_end) and input rows [in_row_begin, in_row_end)
// (the last four optional together). Reads only its channels' slice of the kernel and the rows of
// dY whose windows reach its rows; the sums are those of the whole plane, in the same order. With
// the share after them, the sum over output channels [m_begin, m_end) only, into partial `part`.
//   operands: dY [N,M,OH,OW], W [M,C/G,KH,KW], dX [N,C,H,W] (with the share, [parts,N,C,H,W])
//   params:   format::params::ConvGradInput
void run_conv_grad_input(const PreparedVertex& v, KernelContext& context) {
  const ConvShape s = conv_shape(v);
  const Window& w = s.w;
  const float* dy = v.f32(0);
  const float* weights = v.f32(1);
  const OutputShare share = grad_input_share(v, s);
  float* dx = v.f32(2) + share.part * w.N * w.C * w.in_plane();
  const int64_t plane = w.out_plane(), taps = w.taps(), summed = share.m_end - share.m_begin;
  const GradInputBlock b = grad_input_block(v, w);
  const IndexRange out = output_rows_reaching(w, b.row_begin, b.row_end);
  const int64_t cols = std::max<int64_t>(0, out.end - out.begin) * w.OW;
  float* col = context.scratch.floats(static_cast<size_t>(std::min(s.Cg, b.c_end - b.c_begin) * taps * cols));
  for (int64_t n = v.params[ConvGradInput::kNBegin]; n < v.params[ConvGradInput::kNEnd]; ++n) {
    for (int64_t g = b.c_begin / s.Cg; g * s.Cg < b.c_end; ++g) {
      const int64_t lo = std::max(b.c_begin, g * s.Cg), hi = std::min(b.c_end, (g + 1) * s.Cg);
      float* block = dx + (n * w.C + lo) * w.in_plane();
      for (int64_t c = 0; c < hi - lo; ++c) {
        std::fill(block + (c * w.H + b.row_begin) * w.W, block + (c * w.H + b.row_end) * w.W, 0.0f);
      }
      if (cols == 0) continue;
      // col[(hi − lo)·taps, rows·OW] = W[g's outputs, lo..hi]ᵀ · dY[n, g's outputs, out rows]
      const int64_t m_first = g * s.Mg + share.m_begin;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>((hi - lo) * taps),
                  static_cast<int>(cols), static_cast<int>(summed), 1.0f,
                  weights + m_first * s.K + (lo - g * s.Cg) * taps, static_cast<int>(s.K),
                  dy + (n * s.M + m_first) * plane + out.begin * w.OW, static_cast<int>(plane), 0.0f, col,
                  static_cast<int>(cols));
      col2im_add(w, col, hi - lo, out.begin, out.end, b.row_begin, b.row_end, block);
    }
  }
}

Status validate_conv_grad_input(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = ConvGradInput;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  // The block params are optional together: without them the params end at n_end. The share may
  // follow the block.
  const bool has_share = v.params_size() == P::kCount;
  const bool has_block = has_share || v.params_size() == P::kInRowEnd + 1;
  IPU_RETURN_IF_ERROR(expect_param_count(v,
                                         has_share   ? P::kCount
                                         : has_block ? P::kInRowEnd + 1
                                                     : P::kCBegin,
                                         0));
  uint64_t dx_elements = ops[2].elements;
  if (has_share) {
    IPU_ASSIGN_OR_RETURN(dx_elements,
                         elements_per_partial(v.params(P::kPart), v.params(P::kParts), dx_elements, "dX"));
    if (v.params(P::kG) != 1) return invalid_argument("an output-channel share needs 1 group");
  }
  IPU_ASSIGN_OR_RETURN(ConvShape s, validate_conv_shape(v, dx_elements, ops[1].elements, ops[0].elements));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kNBegin), v.params(P::kNEnd), s.w.N, "sample"));
  if (has_block) {
    IPU_RETURN_IF_ERROR(expect_range(v.params(P::kCBegin), v.params(P::kCEnd), s.w.C, "input channel"));
    IPU_RETURN_IF_ERROR(expect_range(v.params(P::kInRowBegin), v.params(P::kInRowEnd), s.w.H, "input row"));
  }
  if (has_share) {
    IPU_RETURN_IF_ERROR(expect_range(v.params(P::kMBegin), v.params(P::kMEnd), s.M, "output channel"));
    if (v.params(P::kMBegin) == v.params(P::kMEnd))
      return invalid_argument("the output-channel share is empty");
  }
  if (!distinct(v)) return invalid_argument("operands must be distinct tensors");
  return Status();
}

// The share of dW's sums a ConvGradWeight vertex takes: samples [n_begin, n_end) and output rows
// [row_begin, row_end), written to partial `part` of `parts`; without the optional tail, every
// sample and row into dW itself.
struct GradWeightShare {
  int64_t n_begin, n_end, row_begin, row_end, part;
};
GradWeightShare grad_weight_share(const PreparedVertex& v, const Window& w) {
  using P = ConvGradWeight;
  if (v.num_params > P::kPart) {
    return {v.params[P::kNBegin], v.params[P::kNEnd], v.params[P::kOutRowBegin], v.params[P::kOutRowEnd],
            v.params[P::kPart]};
  }
  return {0, w.N, 0, w.OH, 0};
}

// ConvGradWeight: dW[m, c] = sum over samples of dY[n, m] · im2col(X[n, c])ᵀ for output channels
// [m_begin, m_end) and channels [c_begin, c_end) within each group (so a vertex reads only those
// channels of X). With the optional tail it sums only its samples and output rows (reading the
// input rows their windows reach) into partial `part`, which a Reduce then adds up.
//   operands: X [N,C,H,W], dY [N,M,OH,OW], dW [M,C/G,KH,KW] (with the tail [parts,M,C/G,KH,KW])
//   params:   format::params::ConvGradWeight
void run_conv_grad_weight(const PreparedVertex& v, KernelContext& context) {
  const ConvShape s = conv_shape(v);
  const Window& w = s.w;
  const float* x = v.f32(0);
  const float* dy = v.f32(1);
  const GradWeightShare share = grad_weight_share(v, w);
  float* dw = v.f32(2) + share.part * s.M * s.K;
  const int64_t plane = w.out_plane(), m_begin = v.params[ConvGradWeight::kMBegin],
                m_end = v.params[ConvGradWeight::kMEnd];
  const int64_t c_begin = v.params[ConvGradWeight::kCBegin], c_end = v.params[ConvGradWeight::kCEnd],
                taps = w.taps();
  const int64_t cols = (c_end - c_begin) * taps;
  if (cols == 0) return;
  for (int64_t m = m_begin; m < m_end; ++m)
    std::fill(dw + m * s.K + c_begin * taps, dw + m * s.K + c_end * taps, 0.0f);
  const int64_t positions = (share.row_end - share.row_begin) * w.OW;
  if (positions == 0) return;
  float* col = context.scratch.floats(static_cast<size_t>(cols * positions));
  for (int64_t n = share.n_begin; n < share.n_end; ++n) {
    for (int64_t g = m_begin / s.Mg; g * s.Mg < m_end; ++g) {
      const int64_t lo = std::max(m_begin, g * s.Mg), hi = std::min(m_end, (g + 1) * s.Mg);
      if (hi <= lo) continue;
      im2col(w, x + (n * w.C + g * s.Cg + c_begin) * w.in_plane(), c_end - c_begin, share.row_begin,
             share.row_end, col);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(hi - lo), static_cast<int>(cols),
                  static_cast<int>(positions), 1.0f, dy + (n * s.M + lo) * plane + share.row_begin * w.OW,
                  static_cast<int>(plane), col, static_cast<int>(positions), 1.0f,
                  dw + lo * s.K + c_begin * taps, static_cast<int>(s.K));
    }
  }
}

Status validate_conv_grad_weight(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  using P = ConvGradWeight;
  // The share params are optional together: without them the params end at c_end.
  const bool has_share = v.params_size() == P::kCount;
  IPU_RETURN_IF_ERROR(expect_param_count(v, has_share ? P::kCount : P::kNBegin, 0));
  const int64_t parts = has_share ? v.params(P::kParts) : 1;
  if (parts <= 0 || parts > (int64_t{1} << 16))
    return invalid_argument("parts " + std::to_string(parts) + " outside [1, 2^16]");
  if (ops[2].elements % static_cast<uint64_t>(parts) != 0)
    return invalid_argument("dW does not hold " + std::to_string(parts) + " equal partials");
  IPU_ASSIGN_OR_RETURN(ConvShape s,
                       validate_conv_shape(v, ops[0].elements, ops[2].elements / static_cast<uint64_t>(parts),
                                           ops[1].elements));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kMBegin), v.params(P::kMEnd), s.M, "output channel"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kCBegin), v.params(P::kCEnd), s.Cg, "input channel"));
  if (has_share) {
    IPU_RETURN_IF_ERROR(expect_range(v.params(P::kNBegin), v.params(P::kNEnd), s.w.N, "sample"));
    IPU_RETURN_IF_ERROR(
        expect_range(v.params(P::kOutRowBegin), v.params(P::kOutRowEnd), s.w.OH, "output row"));
    if (v.params(P::kPart) < 0 || v.params(P::kPart) >= parts)
      return invalid_argument("part " + std::to_string(v.params(P::kPart)) + " outside [0, parts)");
  }
  if (!distinct(v)) return invalid_argument("operands must be distinct tensors");
  return Status();
}

// Host tasks take all of a sample's output channels before more samples: one primitive call
// then covers a sample's every channel and converts its input to oneDNN's layout once, where
// tasks of a few channels over many samples would each convert every sample.
bool channels_first(const PreparedVertex&) {
  return true;
}

// oneDNN's direct convolution runs a block of 8 output channels at about a third of its speed on
// 32 or more (as with AVX2, at batch 1), so a task takes at least 32 channels, or all there are,
// even past the target task size. At batch 1 the compiler gives each tile a channel or two.
constexpr int64_t kMinTaskChannels = 32;
bool too_few_channels(const PreparedVertex& task, const WorkRange& range) {
  const int64_t channels = task.params[Conv::kMEnd] - task.params[Conv::kMBegin];
  return range.begin == Conv::kMBegin && channels < std::min(kMinTaskChannels, task.params[Conv::kM]);
}

// A block's output rows merge with the next block's where the vertices give them, except in a 1×1
// convolution: oneDNN's 1×1 kernel blocks many input channels by the rows of a call, so merged
// rows would sum in another order than the vertices' calls did (ARCHITECTURE.md, "oneDNN").
WorkRange rows_unless_pointwise(const PreparedVertex& v) {
  const bool pointwise = v.params[Conv::kKH] == 1 && v.params[Conv::kKW] == 1;
  if (v.num_params <= Conv::kOutRowEnd || pointwise) return {};
  return {Conv::kOutRowBegin, Conv::kOutRowEnd};
}

} // namespace

const KernelDef& conv_kernel() {
  static const KernelDef def = [] {
    // Vertices already run in parallel on TBB's threads; OpenBLAS must not add its own.
    openblas_set_num_threads(1);
    return KernelDef{Codelet::kConv,
                     run_conv,
                     validate_conv,
                     {Conv::kNBegin, Conv::kNEnd},
                     {Conv::kMBegin, Conv::kMEnd},
                     channels_first,
                     too_few_channels,
                     rows_unless_pointwise};
  }();
  return def;
}
const KernelDef& conv_grad_input_kernel() {
  static const KernelDef def{Codelet::kConvGradInput,
                             run_conv_grad_input,
                             validate_conv_grad_input,
                             {ConvGradInput::kNBegin, ConvGradInput::kNEnd}};
  return def;
}
const KernelDef& conv_grad_weight_kernel() {
  static const KernelDef def{Codelet::kConvGradWeight,
                             run_conv_grad_weight,
                             validate_conv_grad_weight,
                             {ConvGradWeight::kMBegin, ConvGradWeight::kMEnd},
                             {ConvGradWeight::kCBegin, ConvGradWeight::kCEnd}};
  return def;
}
} // namespace ipu::kernels
