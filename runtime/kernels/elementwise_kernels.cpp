// Elementwise codelets: each vertex owns a contiguous range of its output.
#include "runtime/kernels/activations.h"
#include "runtime/kernels/validate_util.h"
#include "runtime/kernels/vector_math.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// BiasAdd: Y[r, :] = X[r, :] + b for rows [row_begin, row_end).
//   operands: X [M,N], b [N], Y [M,N] (Y may be X)
//   params:   format::params::BiasAdd
void run_bias_add(const PreparedVertex& v) {
  using P = format::params::BiasAdd;
  const int64_t N = v.params[P::kN];
  const float* b = v.f32(1);
  for (int64_t r = v.params[P::kRowBegin]; r < v.params[P::kRowEnd]; ++r) {
    const float* x = v.f32(0) + r * N;
    float* y = v.f32(2) + r * N;
    for (int64_t c = 0; c < N; ++c)
      y[c] = x[c] + b[c];
  }
}

Status validate_bias_add(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  using P = format::params::BiasAdd;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM), v.params(P::kN)}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kN)}, ops[1].elements, "b"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kM), v.params(P::kN)}, ops[2].elements, "Y"));
  return expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kM), "row");
}

// Activation: Y[i] = f(X[i]) for i in [begin, end).
//   operands: X, Y (same size; Y may be X)
//   params:   format::params::Activation (kind is an ActivationKind)
void run_activation(const PreparedVertex& v) {
  using P = format::params::Activation;
  const float* x = v.f32(0);
  float* y = v.f32(1);
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  switch (static_cast<ActivationKind>(v.params[P::kKind])) {
  case ActivationKind::kRelu:
    vector_relu(x + begin, y + begin, end - begin);
    break;
  case ActivationKind::kSigmoid:
    libm_sigmoid(x + begin, y + begin, end - begin);
    break;
  case ActivationKind::kTanh:
    for (int64_t i = begin; i < end; ++i)
      y[i] = activation::tanh(x[i]);
    break;
  }
}

Status validate_activation(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Activation;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  if (v.params(P::kKind) < 0 || v.params(P::kKind) >= kActivationKindCount)
    return invalid_argument("unknown activation kind");
  if (ops[0].elements != ops[1].elements) return invalid_argument("input and output sizes differ");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

// ActivationGrad: dX[i] = dY[i] * f'(x) expressed through the activation's output Y.
//   operands: Y, dY, dX (same size)
//   params:   format::params::ActivationGrad
void run_activation_grad(const PreparedVertex& v) {
  using P = format::params::ActivationGrad;
  const float* y = v.f32(0);
  const float* dy = v.f32(1);
  float* dx = v.f32(2);
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  switch (static_cast<ActivationKind>(v.params[P::kKind])) {
  case ActivationKind::kRelu:
    vector_relu_grad(y + begin, dy + begin, dx + begin, end - begin);
    break;
  case ActivationKind::kSigmoid:
    for (int64_t i = begin; i < end; ++i)
      dx[i] = dy[i] * y[i] * (1.0f - y[i]);
    break;
  case ActivationKind::kTanh:
    for (int64_t i = begin; i < end; ++i)
      dx[i] = dy[i] * (1.0f - y[i] * y[i]);
    break;
  }
}

Status validate_activation_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ActivationGrad;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  if (v.params(P::kKind) < 0 || v.params(P::kKind) >= kActivationKindCount)
    return invalid_argument("unknown activation kind");
  if (ops[0].elements != ops[1].elements || ops[0].elements != ops[2].elements) {
    return invalid_argument("operand sizes differ");
  }
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

// Accumulate: A[i] += G[i] for i in [begin, end) (gradient accumulation over micro-batches).
//   operands: A, G (same size, distinct);  params: format::params::Accumulate
void run_accumulate(const PreparedVertex& v) {
  using P = format::params::Accumulate;
  float* a = v.f32(0);
  const float* g = v.f32(1);
  for (int64_t i = v.params[P::kBegin]; i < v.params[P::kEnd]; ++i)
    a[i] += g[i];
}

Status validate_accumulate(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Accumulate;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  if (ops[0].elements != ops[1].elements || v.operands(0) == v.operands(1)) {
    return invalid_argument("accumulator and gradient must be distinct tensors of one size");
  }
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& bias_add_kernel() {
  static const KernelDef def{Codelet::kBiasAdd,
                             run_bias_add,
                             validate_bias_add,
                             {format::params::BiasAdd::kRowBegin, format::params::BiasAdd::kRowEnd}};
  return def;
}
const KernelDef& activation_kernel() {
  static const KernelDef def{Codelet::kActivation, run_activation, validate_activation,
                             begin_end<format::params::Activation>()};
  return def;
}
const KernelDef& activation_grad_kernel() {
  static const KernelDef def{Codelet::kActivationGrad, run_activation_grad, validate_activation_grad,
                             begin_end<format::params::ActivationGrad>()};
  return def;
}
const KernelDef& accumulate_kernel() {
  static const KernelDef def{Codelet::kAccumulate, run_accumulate, validate_accumulate,
                             begin_end<format::params::Accumulate>()};
  return def;
}

} // namespace ipu::kernels
