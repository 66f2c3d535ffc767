// The gradient of a product reduction, over rows that hold each reduced group contiguously (the
// compiler transposes the reduced axes last).
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// ReduceProdGrad: dX[r, i] = dY[r] · Π_{j≠i} X[r, j] for rows [row_begin, row_end), as the
// product of the elements before i and the elements after it. Never Y / X[r, i]: that divides by
// zero where an element is 0, and the product of the others is exact where one is (only the
// zero's gradient is nonzero) or several are (every gradient is zero).
//   operands: X [rows, n], dY [rows], dX [rows, n];  params: format::params::ReduceProdGrad
void run_reduce_prod_grad(const PreparedVertex& v) {
  using P = format::params::ReduceProdGrad;
  const int64_t n = v.params[P::kN];
  const float* dy = v.f32(1);
  for (int64_t r = v.params[P::kRowBegin]; r < v.params[P::kRowEnd]; ++r) {
    const float* x = v.f32(0) + r * n;
    float* dx = v.f32(2) + r * n;
    double before = 1.0;
    for (int64_t i = 0; i < n; ++i) {
      dx[i] = static_cast<float>(before);
      before *= static_cast<double>(x[i]);
    }
    double after = static_cast<double>(dy[r]);
    for (int64_t i = n - 1; i >= 0; --i) {
      dx[i] = static_cast<float>(static_cast<double>(dx[i]) * after);
      after *= static_cast<double>(x[i]);
    }
  }
}

Status validate_reduce_prod_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ReduceProdGrad;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows), v.params(P::kN)}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows)}, ops[1].elements, "dY"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kRows), v.params(P::kN)}, ops[2].elements, "dX"));
  if (v.operands(2) == v.operands(0) || v.operands(2) == v.operands(1))
    return invalid_argument("output aliases an input");
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kRows), "row");
}

} // namespace

const KernelDef& reduce_prod_grad_kernel() {
  static const KernelDef def{
      Codelet::kReduceProdGrad,
      run_reduce_prod_grad,
      validate_reduce_prod_grad,
      {format::params::ReduceProdGrad::kRowBegin, format::params::ReduceProdGrad::kRowEnd}};
  return def;
}

} // namespace ipu::kernels
