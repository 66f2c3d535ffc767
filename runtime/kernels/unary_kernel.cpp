// The Unary codelet: one function of each element, chosen by its UnaryKind (docs/adding_an_op.md:
// a new kind joins the switch of run_unary). Each vertex owns a contiguous range of its output.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/format/tensor_kinds.h"
#include "runtime/kernels/activations.h"
#include "runtime/kernels/validate_util.h"
#include "runtime/kernels/vector_math.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;
using format::UnaryKind;

float sign(float x) {
  return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
}

template <typename F> void map(const float* x, float* y, int64_t begin, int64_t end, F f) {
  for (int64_t i = begin; i < end; ++i)
    y[i] = f(x[i]);
}

// x·Φ(x) = (x · (erf(x / √2) + 1)) · 0.5, in float, in that order: the five ops of PyTorch's
// exported GELU, which the compiler replaces by this (compiler/passes/fuse_gelu.h), so a fused
// model computes bitwise what the unfused one did. y may be x.
void gelu(const float* x, float* y, int64_t n) {
  constexpr int64_t kChunk = 256;
  float t[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    for (int64_t j = 0; j < m; ++j)
      t[j] = x[i + j] / std::numbers::sqrt2_v<float>;
    vector_erf(t, t, m);
    for (int64_t j = 0; j < m; ++j)
      y[i + j] = x[i + j] * (t[j] + 1.0f) * 0.5f;
  }
}

// x·sigmoid(x) in float, the sigmoid as the Sigmoid kernels compute it (libm_sigmoid): the two ops
// of an exported SiLU, which the compiler replaces by this (compiler/passes/fuse_silu.h), so a
// fused model computes bitwise what the unfused one did, reading x once instead of three times
// and writing no sigmoid. y may be x.
void silu(const float* x, float* y, int64_t n) {
  constexpr int64_t kChunk = 256;
  float sigmoid[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    libm_sigmoid(x + i, sigmoid, m);
    for (int64_t j = 0; j < m; ++j)
      y[i + j] = x[i + j] * sigmoid[j];
  }
}

// Unary: Y[i] = f(X[i]; alpha, beta) for i in [begin, end).
//   operands: X, Y (same size; Y may be X);  params: format::params::Unary (kind is a UnaryKind);
//   fparams: format::fparams::Unary
void run_unary(const PreparedVertex& v) {
  using P = format::params::Unary;
  using F = format::fparams::Unary;
  const float* x = v.f32(0);
  float* y = v.f32(1);
  const int64_t b = v.params[P::kBegin], e = v.params[P::kEnd];
  const float alpha = v.fparams[F::kAlpha], beta = v.fparams[F::kBeta];
  switch (static_cast<UnaryKind>(v.params[P::kKind])) {
  case UnaryKind::kIdentity:
    map(x, y, b, e, [](float t) { return t; });
    break;
  case UnaryKind::kAbs:
    map(x, y, b, e, [](float t) { return std::fabs(t); });
    break;
  case UnaryKind::kNeg:
    map(x, y, b, e, [](float t) { return -t; });
    break;
  case UnaryKind::kExp:
    vector_exp(x + b, y + b, e - b);
    break;
  case UnaryKind::kLog:
    map(x, y, b, e, [](float t) { return std::log(t); });
    break;
  case UnaryKind::kSqrt:
    map(x, y, b, e, [](float t) { return std::sqrt(t); });
    break;
  case UnaryKind::kReciprocal:
    map(x, y, b, e, [](float t) { return 1.0f / t; });
    break;
  case UnaryKind::kCeil:
    map(x, y, b, e, [](float t) { return std::ceil(t); });
    break;
  case UnaryKind::kFloor:
    map(x, y, b, e, [](float t) { return std::floor(t); });
    break;
  case UnaryKind::kSign:
    map(x, y, b, e, sign);
    break;
  case UnaryKind::kErf:
    vector_erf(x + b, y + b, e - b);
    break;
  case UnaryKind::kGelu:
    gelu(x + b, y + b, e - b);
    break;
  case UnaryKind::kGeluTanh:
    map(x, y, b, e, [](float t) {
      const double d = t;
      return static_cast<float>(
          0.5 * d * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (d + 0.044715 * d * d * d))));
    });
    break;
  case UnaryKind::kSoftplus:
    // log(1 + eˣ) = max(x, 0) + log1p(e^-|x|): no overflow for large x.
    map(x, y, b, e, [](float t) { return std::max(t, 0.0f) + std::log1p(std::exp(-std::fabs(t))); });
    break;
  case UnaryKind::kElu:
    map(x, y, b, e, [&](float t) { return t > 0.0f ? t : alpha * std::expm1(t); });
    break;
  case UnaryKind::kSelu:
    map(x, y, b, e, [&](float t) { return beta * (t > 0.0f ? t : alpha * std::expm1(t)); });
    break;
  case UnaryKind::kLeakyRelu:
    map(x, y, b, e, [&](float t) { return t >= 0.0f ? t : alpha * t; });
    break;
  case UnaryKind::kHardSigmoid:
    map(x, y, b, e, [&](float t) { return std::max(0.0f, std::min(1.0f, alpha * t + beta)); });
    break;
  case UnaryKind::kClip:
    map(x, y, b, e, [&](float t) { return std::min(std::max(t, alpha), beta); });
    break;
  case UnaryKind::kNot:
    map(x, y, b, e, [](float t) { return t == 0.0f ? 1.0f : 0.0f; });
    break;
  case UnaryKind::kTrunc:
    map(x, y, b, e, [](float t) { return std::trunc(t); });
    break;
  case UnaryKind::kNonZero:
    map(x, y, b, e, [](float t) { return t != 0.0f ? 1.0f : 0.0f; });
    break;
  case UnaryKind::kAffine:
    map(x, y, b, e, [&](float t) { return alpha * t + beta; });
    break;
  case UnaryKind::kRelu:
    vector_relu(x + b, y + b, e - b);
    break;
  case UnaryKind::kSigmoid:
    libm_sigmoid(x + b, y + b, e - b);
    break;
  case UnaryKind::kSilu:
    silu(x + b, y + b, e - b);
    break;
  case UnaryKind::kTanh:
    map(x, y, b, e, activation::tanh);
    break;
  case UnaryKind::kPowScalar:
    if (alpha == 2.0f) {
      map(x, y, b, e, [](float t) { return t * t; }); // exact square, as Binary kPow
    } else {
      map(x, y, b, e, [&](float t) { return std::pow(t, alpha); });
    }
    break;
  case UnaryKind::kSquare:
    map(x, y, b, e, [](float t) { return t * t; });
    break;
  case UnaryKind::kSoftsign:
    map(x, y, b, e, [](float t) { return t / (1.0f + std::fabs(t)); });
    break;
  case UnaryKind::kHardSwish:
    map(x, y, b, e, [&](float t) { return t * std::max(0.0f, std::min(1.0f, alpha * t + beta)); });
    break;
  case UnaryKind::kCelu:
    map(x, y, b, e, [&](float t) { return t > 0.0f ? t : alpha * std::expm1(t / alpha); });
    break;
  }
}

Status validate_unary(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Unary;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::Unary::kCount));
  if (v.params(P::kKind) < 0 || v.params(P::kKind) >= format::kUnaryKindCount)
    return invalid_argument("unknown unary kind");
  if (ops[0].elements != ops[1].elements) return invalid_argument("input and output sizes differ");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& unary_kernel() {
  static const KernelDef def{Codelet::kUnary, run_unary, validate_unary, begin_end<format::params::Unary>()};
  return def;
}

} // namespace ipu::kernels
