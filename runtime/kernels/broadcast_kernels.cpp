// Generic elementwise codelets with numpy broadcasting and strided data movement: Binary, Where,
// StridedCopy, BlockCopy. Each vertex owns a contiguous range of its output.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/strided.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::BinaryKind;
using format::FLOAT32;

float binary(BinaryKind kind, float a, float b) {
  switch (kind) {
  case BinaryKind::kAdd:
    return a + b;
  case BinaryKind::kSub:
    return a - b;
  case BinaryKind::kMul:
    return a * b;
  case BinaryKind::kDiv:
    return a / b;
  // a·a is the correctly rounded square; powf is only within an ulp of it, and far slower.
  case BinaryKind::kPow:
    return b == 2.0f ? a * a : std::pow(a, b);
  case BinaryKind::kMax:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case BinaryKind::kMin:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case BinaryKind::kEqual:
    return a == b ? 1.0f : 0.0f;
  case BinaryKind::kLess:
    return a < b ? 1.0f : 0.0f;
  case BinaryKind::kGreater:
    return a > b ? 1.0f : 0.0f;
  case BinaryKind::kLessOrEqual:
    return a <= b ? 1.0f : 0.0f;
  case BinaryKind::kGreaterOrEqual:
    return a >= b ? 1.0f : 0.0f;
  case BinaryKind::kAnd:
    return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
  case BinaryKind::kOr:
    return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
  case BinaryKind::kXor:
    return ((a != 0.0f) != (b != 0.0f)) ? 1.0f : 0.0f;
  case BinaryKind::kFmod:
    return std::fmod(a, b);
  case BinaryKind::kMod: { // fmod is exact; a remainder of the other sign moves by one divisor
    const float r = std::fmod(a, b);
    return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
  }
  }
  return NAN;
}

// Binary: Y[i] = A[Σ idx_k·sa_k] ∘ B[Σ idx_k·sb_k] for output elements i in [begin, end) of the
// row-major shape dims (idx = the multi-index of i; a stride of 0 broadcasts).
//   operands: A, B, Y
//   params:   format::params::Binary (kind is a BinaryKind), then dims[rank], sa[rank], sb[rank]
template <BinaryKind K> void binary_loop(const PreparedVertex& v) {
  using P = format::params::Binary;
  const int64_t rank = v.params[P::kRank];
  const int64_t* dims = &v.params[P::kDims];
  const float* a = v.f32(0);
  const float* b = v.f32(1);
  float* y = v.f32(2);
  const int64_t sa = dims[2 * rank - 1], sb = dims[3 * rank - 1]; // innermost strides
  // Contiguous and broadcast rows get loops the compiler vectorises; the results are the same
  // element by element as the general strided loop.
  for_each_strided_run<2>(rank, dims, {dims + rank, dims + 2 * rank}, {0, 0}, v.params[P::kBegin],
                          v.params[P::kEnd], [&](int64_t i, const std::array<int64_t, 2>& o, int64_t count) {
                            const float* pa = a + o[0];
                            const float* pb = b + o[1];
                            float* py = y + i;
                            if (sa == 1 && sb == 1) {
                              for (int64_t j = 0; j < count; ++j)
                                py[j] = binary(K, pa[j], pb[j]);
                            } else if (sa == 1 && sb == 0) {
                              const float rhs = *pb;
                              for (int64_t j = 0; j < count; ++j)
                                py[j] = binary(K, pa[j], rhs);
                            } else if (sa == 0 && sb == 1) {
                              const float lhs = *pa;
                              for (int64_t j = 0; j < count; ++j)
                                py[j] = binary(K, lhs, pb[j]);
                            } else {
                              for (int64_t j = 0; j < count; ++j)
                                py[j] = binary(K, pa[j * sa], pb[j * sb]);
                            }
                          });
}

void run_binary(const PreparedVertex& v) {
  switch (static_cast<BinaryKind>(v.params[format::params::Binary::kKind])) {
  case BinaryKind::kAdd:
    return binary_loop<BinaryKind::kAdd>(v);
  case BinaryKind::kSub:
    return binary_loop<BinaryKind::kSub>(v);
  case BinaryKind::kMul:
    return binary_loop<BinaryKind::kMul>(v);
  case BinaryKind::kDiv:
    return binary_loop<BinaryKind::kDiv>(v);
  case BinaryKind::kPow:
    return binary_loop<BinaryKind::kPow>(v);
  case BinaryKind::kMax:
    return binary_loop<BinaryKind::kMax>(v);
  case BinaryKind::kMin:
    return binary_loop<BinaryKind::kMin>(v);
  case BinaryKind::kEqual:
    return binary_loop<BinaryKind::kEqual>(v);
  case BinaryKind::kLess:
    return binary_loop<BinaryKind::kLess>(v);
  case BinaryKind::kGreater:
    return binary_loop<BinaryKind::kGreater>(v);
  case BinaryKind::kLessOrEqual:
    return binary_loop<BinaryKind::kLessOrEqual>(v);
  case BinaryKind::kGreaterOrEqual:
    return binary_loop<BinaryKind::kGreaterOrEqual>(v);
  case BinaryKind::kAnd:
    return binary_loop<BinaryKind::kAnd>(v);
  case BinaryKind::kOr:
    return binary_loop<BinaryKind::kOr>(v);
  case BinaryKind::kXor:
    return binary_loop<BinaryKind::kXor>(v);
  case BinaryKind::kFmod:
    return binary_loop<BinaryKind::kFmod>(v);
  case BinaryKind::kMod:
    return binary_loop<BinaryKind::kMod>(v);
  }
}

// The shared part of Binary and Where (layout P): rank, begin, end, then dims and one stride
// list per input operand; the last operand is the output.
template <typename P>
Status validate_broadcast(const format::Vertex& v, const std::vector<OperandInfo>& ops, int inputs) {
  const int64_t rank = v.params_size() > P::kRank ? v.params(P::kRank) : 0;
  if (rank < 1 || rank > format::kMaxTensorRank) return invalid_argument("rank must be in [1, 8]");
  IPU_RETURN_IF_ERROR(expect_param_count(v, tailed_param_count<P>(v), 0));
  const int64_t* dims = v.params().data() + P::kDims;
  IPU_RETURN_IF_ERROR(check_dims(rank, dims, ops.back().elements, "output"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kBegin), v.params(P::kEnd),
                                   static_cast<int64_t>(ops.back().elements), "element"));
  for (int o = 0; o < inputs; ++o) {
    IPU_RETURN_IF_ERROR(
        check_strides(rank, dims, dims + rank * (o + 1), 0, ops[static_cast<size_t>(o)].elements, "input"));
    if (v.operands(o) == v.operands(inputs)) return invalid_argument("output aliases an input");
  }
  return Status();
}

Status validate_binary(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  using P = format::params::Binary;
  if (v.params_size() <= P::kKind || v.params(P::kKind) < 0 ||
      v.params(P::kKind) >= format::kBinaryKindCount) {
    return invalid_argument("unknown binary kind");
  }
  return validate_broadcast<P>(v, ops, 2);
}

// Where: Y[i] = C[..] != 0 ? A[..] : B[..], broadcast like Binary.
//   operands: C, A, B, Y;  params: format::params::Where, then dims[rank], sc[rank], sa[rank], sb[rank]
void run_where(const PreparedVertex& v) {
  using P = format::params::Where;
  const int64_t rank = v.params[P::kRank];
  const int64_t* dims = &v.params[P::kDims];
  const float* c = v.f32(0);
  const float* a = v.f32(1);
  const float* b = v.f32(2);
  float* y = v.f32(3);
  for_each_strided<3>(
      rank, dims, {dims + rank, dims + 2 * rank, dims + 3 * rank}, {0, 0, 0}, v.params[P::kBegin],
      v.params[P::kEnd],
      [&](int64_t i, const std::array<int64_t, 3>& o) { y[i] = c[o[0]] != 0.0f ? a[o[1]] : b[o[2]]; });
}

Status validate_where(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  return validate_broadcast<format::params::Where>(v, ops, 3);
}

// StridedCopy: Y[i] = X[offset + Σ idx_k·stride_k] if lo_k <= idx_k < hi_k for every k, else
// fill, for i in [begin, end) of the row-major shape dims. Strides may be 0 (Expand) or
// negative (reversed slices); the box [lo, hi) leaves a padding border (Pad).
//   operands: X, Y;  params: format::params::StridedCopy, then dims[rank], stride[rank], lo[rank],
//   hi[rank];  fparams: format::fparams::StridedCopy
void run_strided_copy(const PreparedVertex& v) {
  using P = format::params::StridedCopy;
  const int64_t rank = v.params[P::kRank];
  const int64_t* dims = &v.params[P::kDims];
  const int64_t* lo = dims + 2 * rank;
  const int64_t* hi = dims + 3 * rank;
  const float* x = v.f32(0);
  float* y = v.f32(1);
  const float fill = v.fparams[format::fparams::StridedCopy::kFill];
  const int64_t last = rank - 1, row = dims[last], inner_stride = dims[2 * rank - 1];
  bool padded = false;
  for (int64_t k = 0; k < rank; ++k)
    padded = padded || lo[k] > 0 || hi[k] < dims[k];
  // Whole runs of the innermost axis at a time (a Transpose keeps it or moves it: contiguous or
  // strided reads; a Pad's border is filled), instead of carrying the multi-index per element.
  // A run's input offset `o` is used only inside the box, where it is in range.
  const auto copy_run = [&](int64_t i, const std::array<int64_t, 1>& o, int64_t count) {
    // The run's row lies in the box's outer axes, or wholly in the border (a Transpose or a
    // slice has no border: no divisions per row).
    bool row_inside = true;
    int64_t rest = padded ? i / row : 0;
    for (int64_t k = last - 1; padded && k >= 0 && row_inside; --k) {
      const int64_t idx = rest % dims[k];
      rest /= dims[k];
      row_inside = idx >= lo[k] && idx < hi[k];
    }
    // Columns [copy_begin, copy_end) of the run are inside the box: copied; the others filled.
    const int64_t first_col = padded ? i % row : 0;
    const int64_t copy_begin = row_inside ? std::clamp(lo[last] - first_col, int64_t{0}, count) : count;
    const int64_t copy_end = row_inside ? std::clamp(hi[last] - first_col, copy_begin, count) : count;
    std::fill(y + i, y + i + copy_begin, fill);
    if (copy_end > copy_begin && inner_stride == 1) {
      std::copy_n(x + o[0] + copy_begin, copy_end - copy_begin, y + i + copy_begin);
    } else {
      for (int64_t j = copy_begin; j < copy_end; ++j)
        y[i + j] = x[o[0] + j * inner_stride];
    }
    std::fill(y + i + copy_end, y + i + count, fill);
  };
  for_each_strided_run<1>(rank, dims, {dims + rank}, {v.params[P::kOffset]}, v.params[P::kBegin],
                          v.params[P::kEnd], copy_run);
}

Status validate_strided_copy(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::StridedCopy;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  const int64_t rank = v.params_size() > P::kRank ? v.params(P::kRank) : 0;
  if (rank < 1 || rank > format::kMaxTensorRank) return invalid_argument("rank must be in [1, 8]");
  IPU_RETURN_IF_ERROR(expect_param_count(v, tailed_param_count<P>(v), format::fparams::StridedCopy::kCount));
  const int64_t* dims = v.params().data() + P::kDims;
  IPU_RETURN_IF_ERROR(check_dims(rank, dims, ops[1].elements, "output"));
  IPU_RETURN_IF_ERROR(
      expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[1].elements), "element"));
  IPU_RETURN_IF_ERROR(check_strides(rank, dims, dims + rank, v.params(P::kOffset), ops[0].elements, "input",
                                    dims + 2 * rank, dims + 3 * rank));
  if (v.operands(0) == v.operands(1)) return invalid_argument("output aliases the input");
  return Status();
}

// BlockCopy: Y[r·y_row + y_col + c] = X[r·x_row + c] for the elements [begin, end) of X: one input
// of a Concat placed into its columns of the output. A vertex's range of X may start and end
// inside a row, so a Concat splits along its axis too (at batch 1 on the channel axis there is
// only one row).
//   operands: X [rows, x_row], Y [rows, y_row]
//   params:   format::params::BlockCopy
void run_block_copy(const PreparedVertex& v) {
  using P = format::params::BlockCopy;
  const int64_t x_row = v.params[P::kXRow], y_row = v.params[P::kYRow], y_col = v.params[P::kYCol];
  const float* x = v.f32(0);
  float* y = v.f32(1);
  for (int64_t i = v.params[P::kBegin], end = v.params[P::kEnd]; i < end;) {
    const int64_t row = i / x_row, col = i % x_row, n = std::min(end - i, x_row - col);
    std::copy_n(x + i, n, y + row * y_row + y_col + col);
    i += n;
  }
}

Status validate_block_copy(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  using P = format::params::BlockCopy;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows), v.params(P::kXRow)}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows), v.params(P::kYRow)}, ops[1].elements, "Y"));
  // y_col is bounded before the sum so that a hostile value cannot overflow it.
  const int64_t y_col = v.params(P::kYCol);
  IPU_RETURN_IF_ERROR(expect_range(y_col, y_col, v.params(P::kYRow), "column"));
  IPU_RETURN_IF_ERROR(expect_range(y_col, y_col + v.params(P::kXRow), v.params(P::kYRow), "column"));
  IPU_RETURN_IF_ERROR(
      expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements), "element"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("output aliases the input");
  return Status();
}

} // namespace

const KernelDef& binary_kernel() {
  static const KernelDef def{Codelet::kBinary, run_binary, validate_binary,
                             begin_end<format::params::Binary>()};
  return def;
}
const KernelDef& where_kernel() {
  static const KernelDef def{Codelet::kWhere, run_where, validate_where, begin_end<format::params::Where>()};
  return def;
}
const KernelDef& strided_copy_kernel() {
  static const KernelDef def{Codelet::kStridedCopy, run_strided_copy, validate_strided_copy,
                             begin_end<format::params::StridedCopy>()};
  return def;
}
const KernelDef& block_copy_kernel() {
  static const KernelDef def{Codelet::kBlockCopy, run_block_copy, validate_block_copy,
                             begin_end<format::params::BlockCopy>()};
  return def;
}

} // namespace ipu::kernels
