// C[M,N] (+)= op(A)[M,K] · op(B)[K,N] restricted to an output block, through single-threaded
// OpenBLAS set to one thread (TBB owns the threads); SGEMV for a single row.
//   operands: A (f32), B (f32), C (f32)
//   params:   M, N, K, trans_a, trans_b, row_begin, row_end, col_begin, col_end, accumulate
#include <cblas.h>

#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

enum Param { kM, kN, kK, kTransA, kTransB, kRowBegin, kRowEnd, kColBegin, kColEnd, kAccumulate, kParamCount };

void run(const PreparedVertex& v) {
  const auto& p = v.params;
  const int64_t M = p[kM], N = p[kN], K = p[kK];
  const int64_t rows = p[kRowEnd] - p[kRowBegin], cols = p[kColEnd] - p[kColBegin];
  if (rows == 0 || cols == 0) return;
  const bool trans_a = p[kTransA] != 0, trans_b = p[kTransB] != 0;
  const float* a = v.f32(0) + (trans_a ? p[kRowBegin] : p[kRowBegin] * K);
  const float* b = v.f32(1) + (trans_b ? p[kColBegin] * K : p[kColBegin]);
  float* c = v.f32(2) + p[kRowBegin] * N + p[kColBegin];
  const float beta = p[kAccumulate] ? 1.0f : 0.0f;
  if (rows == 1) {
    // One row of C (batch 1): SGEMM would pack the whole of B for a single product per
    // column, which costs as much as the product itself; SGEMV streams B once.
    const int incx = static_cast<int>(trans_a ? M : 1);
    if (trans_b) {  // c = B[cols, K] · a
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(cols), static_cast<int>(K), 1.0f, b,
                  static_cast<int>(K), a, incx, beta, c, 1);
    } else {  // c = B[K, cols]ᵀ · a
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(K), static_cast<int>(cols), 1.0f, b,
                  static_cast<int>(N), a, incx, beta, c, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(K), 1.0f, a,
              static_cast<int>(trans_a ? M : K), b, static_cast<int>(trans_b ? K : N), beta, c, static_cast<int>(N));
}

Status validate(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using format::FLOAT32;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, kParamCount, 0));
  const auto& p = v.params();
  IPU_RETURN_IF_ERROR(expect_elements({p[kM], p[kK]}, ops[0].elements, "A"));
  IPU_RETURN_IF_ERROR(expect_elements({p[kK], p[kN]}, ops[1].elements, "B"));
  IPU_RETURN_IF_ERROR(expect_elements({p[kM], p[kN]}, ops[2].elements, "C"));
  if (p[kM] > INT32_MAX || p[kN] > INT32_MAX || p[kK] > INT32_MAX) return invalid_argument("dimension exceeds BLAS limits");
  IPU_RETURN_IF_ERROR(expect_range(p[kRowBegin], p[kRowEnd], p[kM], "row"));
  IPU_RETURN_IF_ERROR(expect_range(p[kColBegin], p[kColEnd], p[kN], "column"));
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1)) {
    return invalid_argument("output aliases an input");
  }
  return Status();
}

// Host tasks span the shorter side of C whole and split the longer one. Each task's SGEMM packs
// its rows of op(A) and its columns of op(B), so a task of r rows and c columns packs K·(r + c)
// values for r·c·K products: all rows of a few columns suits a wide C (batch 1, big weights),
// all columns of a few rows a tall one (a transformer's batch × sequence rows).
bool rows_first(const PreparedVertex& v) { return v.params[kM] < v.params[kN]; }

}  // namespace

const KernelDef& matmul_kernel() {
  static const KernelDef def = [] {
    // Vertices already run in parallel on TBB's threads; OpenBLAS must not add its own.
    openblas_set_num_threads(1);
    return KernelDef{Codelet::kMatMul, run, validate, {kColBegin, kColEnd}, {kRowBegin, kRowEnd}, rows_first};
  }();
  return def;
}

}  // namespace ipu::kernels
