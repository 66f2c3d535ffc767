// C[M,N] (+)= op(A)[M,K] · op(B)[K,N] restricted to an output block, through single-threaded
// OpenBLAS set to one thread (TBB owns the threads); SGEMV for a single row. With a bias,
// C = op(A)·op(B) + bias[N], and with fused_relu 1, max(0, ·) of the result: a BiasAdd and a
// Relu the compiler folded in (compiler/passes/fuse_epilogues.h), applied to the block while
// it is in cache.
//   operands: A (f32), B (f32), bias (f32 [N], optional), C (f32)
//   params:   format::params::MatMul (fused_relu optional, 0 or 1)
#include <cblas.h>

#include <algorithm>

#include "runtime/kernels/validate_util.h"
#include "runtime/kernels/vector_math.h"

namespace ipu::kernels {
namespace {

using P = format::params::MatMul;

// The block's product itself: c (+)= op(A)·op(B), scaled onto c by beta.
void product(const PreparedVertex& v, int64_t rows, int64_t cols, const float* a, const float* b, float beta,
             float* c) {
  const auto& p = v.params;
  const int64_t M = p[P::kM], N = p[P::kN], K = p[P::kK];
  const bool trans_a = p[P::kTransA] != 0, trans_b = p[P::kTransB] != 0;
  if (rows == 1) {
    // One row of C (batch 1): SGEMM would pack the whole of B for a single product per
    // column, which costs as much as the product itself; SGEMV streams B once.
    const int incx = static_cast<int>(trans_a ? M : 1);
    if (trans_b) { // c = B[cols, K] · a
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(cols), static_cast<int>(K), 1.0f, b,
                  static_cast<int>(K), a, incx, beta, c, 1);
    } else { // c = B[K, cols]ᵀ · a
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(K), static_cast<int>(cols), 1.0f, b,
                  static_cast<int>(N), a, incx, beta, c, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(K), 1.0f, a,
              static_cast<int>(trans_a ? M : K), b, static_cast<int>(trans_b ? K : N), beta, c,
              static_cast<int>(N));
}

void run(const PreparedVertex& v) {
  const auto& p = v.params;
  const int64_t N = p[P::kN], K = p[P::kK];
  const int64_t rows = p[P::kRowEnd] - p[P::kRowBegin], cols = p[P::kColEnd] - p[P::kColBegin];
  if (rows == 0 || cols == 0) return;
  const bool trans_a = p[P::kTransA] != 0, trans_b = p[P::kTransB] != 0;
  const float* a = v.f32(0) + (trans_a ? p[P::kRowBegin] : p[P::kRowBegin] * K);
  const float* b = v.f32(1) + (trans_b ? p[P::kColBegin] * K : p[P::kColBegin]);
  const bool has_bias = v.num_operands == 4;
  float* c = v.f32(has_bias ? 3 : 2) + p[P::kRowBegin] * N + p[P::kColBegin];
  product(v, rows, cols, a, b, p[P::kAccumulate] ? 1.0f : 0.0f, c);
  // The folded ops in their own order (the bias added to the finished product, then the
  // clamp), so a fused model computes bitwise what the unfused one did.
  const bool relu = v.num_params > P::kFusedRelu && p[P::kFusedRelu] != 0;
  if (!has_bias && !relu) return;
  const float* bias = has_bias ? v.f32(2) + p[P::kColBegin] : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = c + r * N;
    if (has_bias) {
      for (int64_t j = 0; j < cols; ++j)
        row[j] += bias[j];
    }
    if (relu) vector_relu(row, row, cols);
  }
}

Status validate(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using format::FLOAT32;
  const bool has_bias = ops.size() == 4;
  if (has_bias) {
    IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  } else {
    IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  }
  IPU_RETURN_IF_ERROR(expect_params_with_optional_flag(v, P::kFusedRelu, "fused_relu"));
  const auto& p = v.params();
  IPU_RETURN_IF_ERROR(expect_elements({p[P::kM], p[P::kK]}, ops[0].elements, "A"));
  IPU_RETURN_IF_ERROR(expect_elements({p[P::kK], p[P::kN]}, ops[1].elements, "B"));
  if (has_bias) {
    IPU_RETURN_IF_ERROR(expect_elements({p[P::kN]}, ops[2].elements, "bias"));
    if (p[P::kAccumulate] != 0) return invalid_argument("a bias cannot be accumulated");
  }
  IPU_RETURN_IF_ERROR(expect_elements({p[P::kM], p[P::kN]}, ops.back().elements, "C"));
  if (p[P::kM] > INT32_MAX || p[P::kN] > INT32_MAX || p[P::kK] > INT32_MAX)
    return invalid_argument("dimension exceeds BLAS limits");
  IPU_RETURN_IF_ERROR(expect_range(p[P::kRowBegin], p[P::kRowEnd], p[P::kM], "row"));
  IPU_RETURN_IF_ERROR(expect_range(p[P::kColBegin], p[P::kColEnd], p[P::kN], "column"));
  const int c = v.operands_size() - 1;
  for (int i = 0; i < c; ++i) {
    if (v.operands(c) == v.operands(i)) return invalid_argument("output aliases an input");
  }
  return Status();
}

// Host tasks span the shorter side of C whole and split the longer one. Each task's SGEMM packs
// its rows of op(A) and its columns of op(B), so a task of r rows and c columns packs K·(r + c)
// values for r·c·K products: all rows of a few columns suits a wide C (batch 1, big weights),
// all columns of a few rows a tall one (a transformer's batch × sequence rows).
bool rows_first(const PreparedVertex& v) {
  return v.params[P::kM] < v.params[P::kN];
}

// MatMulPartial: partials[part][block] = op(A)[block rows, k_begin:k_end] · op(B)[k_begin:k_end,
// block cols], one share of a MatMul split over K (the compiler sums the shares with a Reduce).
// With a bias, the share adds bias[block cols] to its rows: the compiler gives a folded bias to
// the first share only, so the sum of the shares is the biased product.
//   operands: A (f32), B (f32), bias (f32 [N], optional), partials (f32 [parts, M, N])
//   params:   format::params::MatMulPartial
namespace partial {

using Q = format::params::MatMulPartial;

// The share's product into its block c of the partials (row stride N).
void product_share(const PreparedVertex& v, int64_t rows, int64_t cols, int64_t depth, float* c) {
  const auto& p = v.params;
  const int64_t M = p[Q::kM], N = p[Q::kN], K = p[Q::kK];
  const bool trans_a = p[Q::kTransA] != 0, trans_b = p[Q::kTransB] != 0;
  // op(A)[r, k] is A[r, k] or A[k, r]; op(B)[k, c] is B[k, c] or B[c, k].
  const float* a =
      v.f32(0) + (trans_a ? p[Q::kKBegin] * M + p[Q::kRowBegin] : p[Q::kRowBegin] * K + p[Q::kKBegin]);
  const float* b =
      v.f32(1) + (trans_b ? p[Q::kColBegin] * K + p[Q::kKBegin] : p[Q::kKBegin] * N + p[Q::kColBegin]);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(depth), 1.0f, a,
              static_cast<int>(trans_a ? M : K), b, static_cast<int>(trans_b ? K : N), 0.0f, c,
              static_cast<int>(N));
}

void run(const PreparedVertex& v) {
  const auto& p = v.params;
  const int64_t M = p[Q::kM], N = p[Q::kN];
  const int64_t rows = p[Q::kRowEnd] - p[Q::kRowBegin], cols = p[Q::kColEnd] - p[Q::kColBegin];
  const int64_t depth = p[Q::kKEnd] - p[Q::kKBegin];
  const bool has_bias = v.num_operands == 4;
  float* c = v.f32(has_bias ? 3 : 2) + p[Q::kPart] * M * N + p[Q::kRowBegin] * N + p[Q::kColBegin];
  if (rows == 0 || cols == 0) return;
  if (depth == 0) {
    for (int64_t r = 0; r < rows; ++r)
      std::fill_n(c + r * N, cols, 0.0f);
  } else {
    product_share(v, rows, cols, depth, c);
  }
  if (!has_bias) return;
  const float* bias = v.f32(2) + p[Q::kColBegin];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j)
      c[r * N + j] += bias[j];
  }
}

Status validate(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using format::FLOAT32;
  const bool has_bias = ops.size() == 4;
  if (has_bias) {
    IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  } else {
    IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  }
  IPU_RETURN_IF_ERROR(expect_param_count(v, Q::kCount, 0));
  const auto& p = v.params();
  if (p[Q::kM] > INT32_MAX || p[Q::kN] > INT32_MAX || p[Q::kK] > INT32_MAX)
    return invalid_argument("dimension exceeds BLAS limits");
  IPU_RETURN_IF_ERROR(expect_elements({p[Q::kM], p[Q::kK]}, ops[0].elements, "A"));
  IPU_RETURN_IF_ERROR(expect_elements({p[Q::kK], p[Q::kN]}, ops[1].elements, "B"));
  IPU_RETURN_IF_ERROR(expect_range(p[Q::kPart], p[Q::kPart] + 1, p[Q::kParts], "part"));
  if (has_bias) IPU_RETURN_IF_ERROR(expect_elements({p[Q::kN]}, ops[2].elements, "bias"));
  IPU_RETURN_IF_ERROR(expect_elements({p[Q::kParts], p[Q::kM], p[Q::kN]}, ops.back().elements, "partials"));
  IPU_RETURN_IF_ERROR(expect_range(p[Q::kRowBegin], p[Q::kRowEnd], p[Q::kM], "row"));
  IPU_RETURN_IF_ERROR(expect_range(p[Q::kColBegin], p[Q::kColEnd], p[Q::kN], "column"));
  IPU_RETURN_IF_ERROR(expect_range(p[Q::kKBegin], p[Q::kKEnd], p[Q::kK], "K"));
  const int out = v.operands_size() - 1;
  for (int i = 0; i < out; ++i) {
    if (v.operands(out) == v.operands(i)) return invalid_argument("output aliases an input");
  }
  return Status();
}

} // namespace partial

} // namespace

const KernelDef& matmul_kernel() {
  static const KernelDef def = [] {
    // Vertices already run in parallel on TBB's threads; OpenBLAS must not add its own.
    openblas_set_num_threads(1);
    return KernelDef{Codelet::kMatMul,           run,       validate, {P::kColBegin, P::kColEnd},
                     {P::kRowBegin, P::kRowEnd}, rows_first};
  }();
  return def;
}

} // namespace ipu::kernels

namespace ipu::kernels {

const KernelDef& matmul_partial_kernel() {
  using Q = partial::Q;
  static const KernelDef def = [] {
    openblas_set_num_threads(1);
    return KernelDef{Codelet::kMatMulPartial,
                     partial::run,
                     partial::validate,
                     {Q::kColBegin, Q::kColEnd},
                     {Q::kRowBegin, Q::kRowEnd}};
  }();
  return def;
}

} // namespace ipu::kernels
