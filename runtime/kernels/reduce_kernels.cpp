// Generic codelets that combine elements along axes: Reduce (sum, mean, max, min, prod, arg
// max/min), AxisSoftmax, BatchMatMul (numpy-broadcast batches), Gather and its gradient.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/kernels/strided.h"
#include "runtime/kernels/validate_util.h"
#include "runtime/kernels/vector_math.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;
using format::ReduceKind;

// max(0, sum) as a float, NaN to 0 as the Relu kernel makes it.
float relu_of(double sum) {
  return sum > 0.0 ? static_cast<float>(sum) : 0.0f;
}

// A sum's, a mean's or a Relu'd sum's float results of the doubles `sums[0, n)` of `count` items
// each, one loop per kind so that each converts a vector at a time: relu_of(s) is Relu of
// float(s) (a NaN, -0 and every negative give +0 either way), which vector_relu takes without
// a branch on each sum's sign.
void finish_sums(ReduceKind kind, const double* sums, int64_t count, float* y, int64_t n) {
  if (kind == ReduceKind::kMean) {
    for (int64_t c = 0; c < n; ++c)
      y[c] = static_cast<float>(sums[c] / static_cast<double>(count));
    return;
  }
  for (int64_t c = 0; c < n; ++c)
    y[c] = static_cast<float>(sums[c]);
  if (kind == ReduceKind::kSumRelu) vector_relu(y, y, n);
}

// Reduce: Y[i] = reduce over the box red_dims of X[Σ o_k·os_k + Σ r_k·rs_k], for output
// elements i in [begin, end) of out_dims (o = the multi-index of i).
//   operands: X, Y
//   params:   format::params::Reduce (kind is a ReduceKind), then out_dims[out_rank],
//             out_strides[out_rank], red_dims[red_rank], red_strides[red_rank]
void run_reduce(const PreparedVertex& v) {
  using P = format::params::Reduce;
  const auto kind = static_cast<ReduceKind>(v.params[P::kKind]);
  const int64_t out_rank = v.params[P::kOutRank], red_rank = v.params[P::kReducedRank];
  const int64_t* out_dims = &v.params[P::kOutDims];
  const int64_t* out_strides = out_dims + out_rank;
  const int64_t* red_dims = out_strides + out_rank;
  const int64_t* red_strides = red_dims + red_rank;
  int64_t count = 1;
  for (int64_t k = 0; k < red_rank; ++k)
    count *= red_dims[k];
  const float* x = v.f32(0);
  float* y = v.f32(1);
  if ((kind == ReduceKind::kSum || kind == ReduceKind::kMean || kind == ReduceKind::kSumRelu) &&
      red_rank == 1) {
    // One reduced axis (LayerNorm's mean, a split sum's shares), adding in the same order as
    // below. Outputs go in chunks along a row of the innermost output axis, each reduced item
    // added to the whole chunk before the next: a split sum's shares lie a whole [M, N] apart,
    // so summing one output at a time would cross every share for every element. Contiguous
    // outputs (a split sum's) are summed in vector registers (vector_math.h).
    constexpr int64_t kChunk = 256;
    const int64_t stride = red_strides[0], step = out_strides[out_rank - 1];
    for_each_strided_run<1>(out_rank, out_dims, {out_strides}, {0}, v.params[P::kBegin], v.params[P::kEnd],
                            [&](int64_t i, const std::array<int64_t, 1>& base, int64_t run) {
                              for (int64_t first = 0; first < run; first += kChunk) {
                                const int64_t n = std::min(kChunk, run - first);
                                std::array<double, kChunk> acc{};
                                const float* items = x + base[0] + first * step;
                                if (step == 1) {
                                  sum_rows_in_double(items, stride, count, n, acc.data());
                                } else {
                                  for (int64_t j = 0; j < count; ++j)
                                    for (int64_t c = 0; c < n; ++c)
                                      acc[static_cast<size_t>(c)] += items[j * stride + c * step];
                                }
                                finish_sums(kind, acc.data(), count, y + i + first, n);
                              }
                            });
    return;
  }
  for_each_strided<1>(out_rank, out_dims, {out_strides}, {0}, v.params[P::kBegin], v.params[P::kEnd],
                      [&](int64_t i, const std::array<int64_t, 1>& base) {
                        double acc = kind == ReduceKind::kProd ? 1.0 : 0.0;
                        float best = 0.0f;
                        int64_t best_at = -1;
                        for_each_strided<1>(red_rank, red_dims, {red_strides}, base, 0, count,
                                            [&](int64_t j, const std::array<int64_t, 1>& o) {
                                              const float t = x[o[0]];
                                              switch (kind) {
                                              case ReduceKind::kSum:
                                              case ReduceKind::kMean:
                                              case ReduceKind::kSumRelu:
                                                acc += t;
                                                break;
                                              case ReduceKind::kProd:
                                                acc *= t;
                                                break;
                                              case ReduceKind::kMax:
                                              case ReduceKind::kArgMax:
                                                if (best_at < 0 || t > best || std::isnan(t))
                                                  best = t, best_at = j;
                                                break;
                                              case ReduceKind::kMin:
                                              case ReduceKind::kArgMin:
                                                if (best_at < 0 || t < best || std::isnan(t))
                                                  best = t, best_at = j;
                                                break;
                                              case ReduceKind::kArgMaxLast:
                                                if (best_at < 0 || t >= best) best = t, best_at = j;
                                                break;
                                              case ReduceKind::kArgMinLast:
                                                if (best_at < 0 || t <= best) best = t, best_at = j;
                                                break;
                                              }
                                            });
                        switch (kind) {
                        case ReduceKind::kSum:
                        case ReduceKind::kProd:
                          y[i] = static_cast<float>(acc);
                          break;
                        case ReduceKind::kMean:
                          y[i] = static_cast<float>(acc / static_cast<double>(count));
                          break;
                        case ReduceKind::kSumRelu:
                          y[i] = relu_of(acc);
                          break;
                        case ReduceKind::kMax:
                        case ReduceKind::kMin:
                          y[i] = best;
                          break;
                        default:
                          y[i] = static_cast<float>(best_at);
                          break;
                        }
                      });
}

Status validate_reduce(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Reduce;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  if (v.params_size() < P::kOutDims) {
    return invalid_argument("expects at least " + std::to_string(P::kOutDims) + " parameters");
  }
  const int64_t kind = v.params(P::kKind), out_rank = v.params(P::kOutRank),
                red_rank = v.params(P::kReducedRank);
  if (kind < 0 || kind >= format::kReduceKindCount) return invalid_argument("unknown reduce kind");
  if (out_rank < 1 || out_rank > format::kMaxTensorRank || red_rank < 1 ||
      red_rank > format::kMaxTensorRank) {
    return invalid_argument("ranks must be in [1, 8]");
  }
  if (kind >= static_cast<int64_t>(ReduceKind::kArgMax) &&
      kind <= static_cast<int64_t>(ReduceKind::kArgMinLast) && red_rank != 1) {
    return invalid_argument("arg reductions take one axis");
  }
  IPU_RETURN_IF_ERROR(expect_param_count(v, tailed_param_count<P>(v), 0));
  const int64_t* p = v.params().data() + P::kOutDims;
  IPU_RETURN_IF_ERROR(check_dims(out_rank, p, ops[1].elements, "output"));
  IPU_RETURN_IF_ERROR(
      expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[1].elements), "element"));
  // The combined box (output axes, then reduced axes) must stay inside X.
  std::array<int64_t, 2 * format::kMaxTensorRank> dims{}, strides{};
  uint64_t red_count = 1;
  for (int64_t k = 0; k < out_rank; ++k) {
    dims[static_cast<size_t>(k)] = p[k];
    strides[static_cast<size_t>(k)] = p[out_rank + k];
  }
  for (int64_t k = 0; k < red_rank; ++k) {
    const int64_t d = p[2 * out_rank + k];
    if (d <= 0 || red_count > (uint64_t{1} << 40) / static_cast<uint64_t>(d)) {
      return invalid_argument("reduced dimension " + std::to_string(d) + " is invalid");
    }
    red_count *= static_cast<uint64_t>(d);
    dims[static_cast<size_t>(out_rank + k)] = d;
    strides[static_cast<size_t>(out_rank + k)] = p[2 * out_rank + red_rank + k];
  }
  IPU_RETURN_IF_ERROR(
      check_strides(out_rank + red_rank, dims.data(), strides.data(), 0, ops[0].elements, "input"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("output aliases the input");
  return Status();
}

// Lines a softmax vertex takes together: each line's max and sum are a chain of dependent
// operations (maxss, then addsd: four cycles each), so eight lines' chains interleave where one
// line's would stall. Each line is still reduced alone and in order, so results are the same bits.
constexpr int64_t kSoftmaxLines = 8;

// AxisSoftmax: softmax (or log-softmax) of X viewed as [outer, axis, inner] along the middle
// axis, for lines [begin, end) of the outer·inner lines. Each element's exponential is computed
// once, in float, of x − max ≤ 0 (so it cannot overflow); the sum is accumulated in double, in
// order along the line.
//   operands: X, Y (same size; Y may be X);  params: format::params::AxisSoftmax (kind is a
//   SoftmaxKind, n the axis)
void run_axis_softmax(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::AxisSoftmax;
  const bool log = v.params[P::kKind] == static_cast<int64_t>(format::SoftmaxKind::kLogSoftmax);
  const int64_t n = v.params[P::kN], inner = v.params[P::kInner];
  const float* x = v.f32(0);
  float* y = v.f32(1);
  // The group's lines side by side, contiguous, for the vector exp: strided lines are gathered,
  // and Y may be X (a line's outputs are written only after all its inputs are read).
  float* lines = context.scratch.floats(static_cast<size_t>(kSoftmaxLines * n));
  for (int64_t first = v.params[P::kBegin]; first < v.params[P::kEnd]; first += kSoftmaxLines) {
    // A short last group repeats its last line in the spare lanes, whose results are dropped.
    const int64_t count = std::min(kSoftmaxLines, v.params[P::kEnd] - first);
    std::array<int64_t, kSoftmaxLines> base{}, exps_at{}; // where lane k's x and exps start
    for (int64_t k = 0; k < kSoftmaxLines; ++k) {
      const int64_t l = first + std::min(k, count - 1);
      base[k] = (l / inner) * n * inner + l % inner;
      exps_at[k] = std::min(k, count - 1) * n;
    }
    std::array<float, kSoftmaxLines> max{};
    max.fill(-std::numeric_limits<float>::infinity());
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < kSoftmaxLines; ++k)
        max[k] = std::max(max[k], x[base[k] + j * inner]);
    for (int64_t k = 0; k < count; ++k)
      for (int64_t j = 0; j < n; ++j)
        lines[k * n + j] = x[base[k] + j * inner] - max[k];
    vector_exp(lines, lines, count * n);
    std::array<double, kSoftmaxLines> sum{};
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < kSoftmaxLines; ++k)
        sum[k] += lines[exps_at[k] + j];
    for (int64_t k = 0; k < count; ++k) {
      const float* line = lines + k * n;
      if (log) {
        const float log_sum = static_cast<float>(std::log(sum[k]));
        for (int64_t j = 0; j < n; ++j)
          y[base[k] + j * inner] = (x[base[k] + j * inner] - max[k]) - log_sum;
      } else {
        const float scale = static_cast<float>(1.0 / sum[k]);
        for (int64_t j = 0; j < n; ++j)
          y[base[k] + j * inner] = line[j] * scale;
      }
    }
  }
}

Status validate_axis_softmax(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::AxisSoftmax;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  if (v.params(P::kKind) < 0 || v.params(P::kKind) >= format::kSoftmaxKindCount)
    return invalid_argument("unknown softmax kind");
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kOuter), v.params(P::kN), v.params(P::kInner)}, ops[0].elements, "X"));
  if (ops[1].elements != ops[0].elements) return invalid_argument("output size differs from the input");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), v.params(P::kOuter) * v.params(P::kInner),
                      "line");
}

// BatchMatMul: C[b] = A[Σ idx_k·sa_k] · B[Σ idx_k·sb_k] for batches b in [begin, end) of the
// row-major batch shape dims (idx = the multi-index of b; strides count elements, 0
// broadcasts). Each matrix is row-major: A [M,K], B [K,N], C [M,N].
//   operands: A, B, C
//   params:   format::params::BatchMatMul (rank is the batch rank), then dims[rank], sa[rank], sb[rank]
void run_batch_matmul(const PreparedVertex& v) {
  using P = format::params::BatchMatMul;
  const int64_t M = v.params[P::kM], N = v.params[P::kN], K = v.params[P::kK], rank = v.params[P::kRank];
  const int64_t* dims = &v.params[P::kDims];
  const float* a = v.f32(0);
  const float* b = v.f32(1);
  float* c = v.f32(2);
  for_each_strided<2>(rank, dims, {dims + rank, dims + 2 * rank}, {0, 0}, v.params[P::kBegin],
                      v.params[P::kEnd], [&](int64_t batch, const std::array<int64_t, 2>& o) {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M),
                                    static_cast<int>(N), static_cast<int>(K), 1.0f, a + o[0],
                                    static_cast<int>(K), b + o[1], static_cast<int>(N), 0.0f,
                                    c + batch * M * N, static_cast<int>(N));
                      });
}

Status validate_batch_matmul(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::BatchMatMul;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  const int64_t rank = v.params_size() > P::kRank ? v.params(P::kRank) : 0;
  if (rank < 1 || rank > format::kMaxTensorRank) return invalid_argument("batch rank must be in [1, 8]");
  IPU_RETURN_IF_ERROR(expect_param_count(v, tailed_param_count<P>(v), 0));
  const int64_t M = v.params(P::kM), N = v.params(P::kN), K = v.params(P::kK);
  for (int64_t d : {M, N, K}) {
    if (d <= 0 || d > INT32_MAX)
      return invalid_argument("matrix dimension " + std::to_string(d) + " is invalid");
  }
  const int64_t* dims = v.params().data() + P::kDims;
  int64_t batches = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (dims[k] <= 0 || batches > (int64_t{1} << 40) / dims[k])
      return invalid_argument("invalid batch dimension");
    batches *= dims[k];
  }
  if (M > (int64_t{1} << 40) / N || batches > (int64_t{1} << 40) / (M * N))
    return invalid_argument("too large");
  if (ops[2].elements != static_cast<uint64_t>(batches * M * N))
    return invalid_argument("C size does not match");
  if (ops[0].elements < static_cast<uint64_t>(M) * static_cast<uint64_t>(K) ||
      ops[1].elements < static_cast<uint64_t>(K) * static_cast<uint64_t>(N)) {
    return invalid_argument("A or B is smaller than one matrix");
  }
  // The last matrix starting at the largest offset must end inside its operand.
  IPU_RETURN_IF_ERROR(
      check_strides(rank, dims, dims + rank, 0, ops[0].elements - static_cast<uint64_t>(M * K) + 1, "A"));
  IPU_RETURN_IF_ERROR(
      check_strides(rank, dims, dims + 2 * rank, 0, ops[1].elements - static_cast<uint64_t>(K * N) + 1, "B"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kBegin), v.params(P::kEnd), batches, "batch"));
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1))
    return invalid_argument("output aliases an input");
  return Status();
}

// Gather: Y[o, j, i] = X[o, idx_j, i] with X viewed as [outer, axis, inner], idx_j = indices[j]
// (a float holding an integer; negative counts from the end). Gather and GatherGrad write a
// [rows, inner] matrix in blocks: rows [row_begin, row_end) × columns [col_begin, col_end).
// An index outside [-axis, axis) is a fault, as in ONNX Runtime.
//   operands: X, indices, Y;  params: format::params::Gather (n is the axis, index_count the indices)
// The row of an axis of n that index value f names (negative counts from the end), or -1.
int64_t resolve_index(float f, int64_t n) {
  if (!(f >= -static_cast<float>(n) && f < static_cast<float>(n))) return -1;
  const auto index = static_cast<int64_t>(f);
  return index < 0 ? index + n : index;
}

KernelFault index_fault(const float* indices, int64_t j, int64_t n) {
  return out_of_range("index", "indices", j, static_cast<double>(indices[j]), -n, n);
}

void run_gather(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::Gather;
  const int64_t n = v.params[P::kN], inner = v.params[P::kInner], count = v.params[P::kIndexCount];
  const int64_t col_begin = v.params[P::kColBegin], col_end = v.params[P::kColEnd];
  const float* x = v.f32(0);
  const float* indices = v.f32(1);
  float* y = v.f32(2);
  for (int64_t row = v.params[P::kRowBegin]; row < v.params[P::kRowEnd]; ++row) {
    const int64_t j = row % count, o = row / count;
    const int64_t index = resolve_index(indices[j], n);
    if (index < 0) {
      context.fault = index_fault(indices, j, n);
      return;
    }
    const float* source = x + (o * n + index) * inner;
    std::copy(source + col_begin, source + col_end, y + row * inner + col_begin);
  }
}

// Gather and GatherGrad (layout P) share one shape: the table [outer, n, inner] and the gathered
// rows [outer, index_count, inner], one of them the input (operand 0) and the other the output
// (operand 2), whose [rows, inner] view the block lies in.
template <typename P>
Status validate_gather_layout(const format::Vertex& v, const std::vector<OperandInfo>& ops,
                              bool writes_table) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  const size_t table = writes_table ? 2 : 0, rows = writes_table ? 0 : 2;
  const int64_t outer = v.params(P::kOuter), n = v.params(P::kN), inner = v.params(P::kInner);
  const int64_t count = v.params(P::kIndexCount);
  IPU_RETURN_IF_ERROR(expect_elements({outer, n, inner}, ops[table].elements, writes_table ? "dX" : "X"));
  IPU_RETURN_IF_ERROR(expect_elements({count}, ops[1].elements, "indices"));
  IPU_RETURN_IF_ERROR(expect_elements({outer, count, inner}, ops[rows].elements, writes_table ? "dY" : "Y"));
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1))
    return invalid_argument("output aliases an input");
  const int64_t output_rows = outer * (writes_table ? n : count);
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), output_rows, "row"));
  return expect_range(v.params(P::kColBegin), v.params(P::kColEnd), inner, "column");
}

Status validate_gather(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  return validate_gather_layout<format::params::Gather>(v, ops, /*writes_table=*/false);
}

// GatherGrad, the adjoint of Gather (a scatter-add): dX[o, r, i] = Σ_j [indices[j] = r] dY[o, j, i]
// over a block of dX's [outer·n, inner] rows × columns, so vertices own disjoint parts of dX and
// each element sums in index order (deterministic, whatever the blocks). An index out of range is
// a fault, as in Gather; every vertex checks every index, so each finds it.
//   operands: dY, indices, dX;  params: format::params::GatherGrad
void run_gather_grad(const PreparedVertex& v, KernelContext& context) {
  using P = format::params::GatherGrad;
  const int64_t n = v.params[P::kN], inner = v.params[P::kInner], count = v.params[P::kIndexCount];
  const int64_t row_begin = v.params[P::kRowBegin], row_end = v.params[P::kRowEnd];
  const int64_t col_begin = v.params[P::kColBegin], col_end = v.params[P::kColEnd];
  const float* dy = v.f32(0);
  const float* indices = v.f32(1);
  float* dx = v.f32(2);
  for (int64_t j = 0; j < count; ++j) {
    if (resolve_index(indices[j], n) < 0) {
      context.fault = index_fault(indices, j, n);
      return;
    }
  }
  if (row_begin == row_end) return;
  for (int64_t row = row_begin; row < row_end; ++row)
    std::fill(dx + row * inner + col_begin, dx + row * inner + col_end, 0.0f);
  for (int64_t o = row_begin / n; o <= (row_end - 1) / n; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      const int64_t row = o * n + resolve_index(indices[j], n);
      if (row < row_begin || row >= row_end) continue;
      const float* source = dy + (o * count + j) * inner; // dY's row j of outer slice o
      float* target = dx + row * inner;
      for (int64_t e = col_begin; e < col_end; ++e)
        target[e] += source[e];
    }
  }
}

Status validate_gather_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  return validate_gather_layout<format::params::GatherGrad>(v, ops, /*writes_table=*/true);
}

// A block's rows and columns, the two ranges a Gather or GatherGrad vertex merges along.
template <typename P> constexpr WorkRange rows() {
  return {P::kRowBegin, P::kRowEnd};
}
template <typename P> constexpr WorkRange columns() {
  return {P::kColBegin, P::kColEnd};
}

} // namespace

const KernelDef& reduce_kernel() {
  static const KernelDef def{Codelet::kReduce, run_reduce, validate_reduce,
                             begin_end<format::params::Reduce>()};
  return def;
}
const KernelDef& axis_softmax_kernel() {
  static const KernelDef def{Codelet::kAxisSoftmax, run_axis_softmax, validate_axis_softmax,
                             begin_end<format::params::AxisSoftmax>()};
  return def;
}
const KernelDef& batch_matmul_kernel() {
  static const KernelDef def = [] {
    openblas_set_num_threads(1); // TBB owns the threads (see matmul_kernel.cpp)
    return KernelDef{Codelet::kBatchMatMul, run_batch_matmul, validate_batch_matmul,
                     begin_end<format::params::BatchMatMul>()};
  }();
  return def;
}
const KernelDef& gather_kernel() {
  static const KernelDef def{Codelet::kGather, KernelEntry::fallible(run_gather), validate_gather,
                             rows<format::params::Gather>(), columns<format::params::Gather>()};
  return def;
}

const KernelDef& gather_grad_kernel() {
  static const KernelDef def{Codelet::kGatherGrad, KernelEntry::fallible(run_gather_grad),
                             validate_gather_grad, rows<format::params::GatherGrad>(),
                             columns<format::params::GatherGrad>()};
  return def;
}

} // namespace ipu::kernels
