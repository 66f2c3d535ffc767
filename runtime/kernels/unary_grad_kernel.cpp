// The gradients of the Unary kinds whose derivative is piecewise or needs several functions of X
// (format::has_unary_grad_kernel): the derivatives of run_unary (unary_kernel.cpp), with
// PyTorch's values at the kinks, where its autograd and finite differences part.
#include <cmath>
#include <numbers>

#include "runtime/format/tensor_kinds.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;
using format::UnaryKind;

template <typename F>
void map(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, F derivative) {
  for (int64_t i = begin; i < end; ++i)
    dx[i] = dy[i] * derivative(x[i]);
}

// d/dx x·Φ(x) = Φ(x) + x·φ(x), φ the standard normal density (torch's gelu_backward).
float gelu_derivative(float x) {
  constexpr float kInvSqrt2 = 1.0f / std::numbers::sqrt2_v<float>;
  const float kInvSqrt2Pi = static_cast<float>(1.0 / std::sqrt(2.0 * std::numbers::pi));
  const float cdf = 0.5f * (1.0f + std::erf(x * kInvSqrt2));
  return cdf + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
}

// d/dx 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), in double as run_unary's forward is:
// 0.5·(1 + tanh u) + 0.5·x·(1 − tanh² u)·√(2/π)·(1 + 3·0.044715·x²) (torch's gelu_backward, tanh).
float gelu_tanh_derivative(float x) {
  const double d = x, k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
  const double t = std::tanh(k * (d + c * d * d * d));
  return static_cast<float>(0.5 * (1.0 + t) + 0.5 * d * (1.0 - t * t) * k * (1.0 + 3.0 * c * d * d));
}

// UnaryGrad: dX[i] = dY[i] · f'(X[i]; alpha, beta) for i in [begin, end), f the Unary of that kind.
// At a kink the derivative is torch's: Clip passes dY strictly inside (min, max) (hardtanh and
// relu6; the bounds get 0), HardSigmoid where alpha·x + beta lies strictly inside (0, 1), HardSwish
// takes its middle piece at both ends of it, LeakyRelu takes the slope at 0, Elu, Selu and Celu
// their negative side's derivative at 0 (alpha, gamma·alpha, 1).
//   operands: X, dY, dX (one size; dX may be dY);  params: format::params::UnaryGrad;
//   fparams: format::fparams::UnaryGrad
void run_unary_grad(const PreparedVertex& v) {
  using P = format::params::UnaryGrad;
  using F = format::fparams::UnaryGrad;
  const float* x = v.f32(0);
  const float* dy = v.f32(1);
  float* dx = v.f32(2);
  const int64_t b = v.params[P::kBegin], e = v.params[P::kEnd];
  const float alpha = v.fparams[F::kAlpha], beta = v.fparams[F::kBeta];
  switch (static_cast<UnaryKind>(v.params[P::kKind])) {
  case UnaryKind::kGelu:
    map(x, dy, dx, b, e, gelu_derivative);
    break;
  case UnaryKind::kGeluTanh:
    map(x, dy, dx, b, e, gelu_tanh_derivative);
    break;
  case UnaryKind::kElu:
    map(x, dy, dx, b, e, [&](float t) { return t > 0.0f ? 1.0f : alpha * std::exp(t); });
    break;
  case UnaryKind::kSelu:
    map(x, dy, dx, b, e, [&](float t) { return t > 0.0f ? beta : beta * alpha * std::exp(t); });
    break;
  case UnaryKind::kLeakyRelu:
    map(x, dy, dx, b, e, [&](float t) { return t > 0.0f ? 1.0f : alpha; });
    break;
  case UnaryKind::kHardSigmoid:
    map(x, dy, dx, b, e, [&](float t) {
      const float s = alpha * t + beta;
      return s > 0.0f && s < 1.0f ? alpha : 0.0f;
    });
    break;
  case UnaryKind::kClip:
    map(x, dy, dx, b, e, [&](float t) { return t > alpha && t < beta ? 1.0f : 0.0f; });
    break;
  case UnaryKind::kHardSwish: // torch's hardswish_backward: 0 below −3, x/3 + ½ up to 3 inclusive, 1 above
    map(x, dy, dx, b, e, [&](float t) {
      const float s = alpha * t + beta;
      return s < 0.0f ? 0.0f : (s <= 1.0f ? 2.0f * alpha * t + beta : 1.0f);
    });
    break;
  case UnaryKind::kCelu:
    map(x, dy, dx, b, e, [&](float t) { return t > 0.0f ? 1.0f : std::exp(t / alpha); });
    break;
  default: // validate_unary_grad admits no other kind
    break;
  }
}

Status validate_unary_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::UnaryGrad;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::UnaryGrad::kCount));
  const int64_t kind = v.params(P::kKind);
  if (kind < 0 || kind >= format::kUnaryKindCount ||
      !format::has_unary_grad_kernel(static_cast<UnaryKind>(kind))) {
    return invalid_argument("unary kind " + std::to_string(kind) + " has no gradient kernel");
  }
  if (ops[0].elements != ops[1].elements || ops[0].elements != ops[2].elements)
    return invalid_argument("X, dY and dX sizes differ");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& unary_grad_kernel() {
  static const KernelDef def{Codelet::kUnaryGrad, run_unary_grad, validate_unary_grad,
                             begin_end<format::params::UnaryGrad>()};
  return def;
}

} // namespace ipu::kernels
