// The `kind` parameters of the generic tensor codelets (ids 20-28: Unary, Binary, Reduce,
// AxisSoftmax): part of the executable format, written by the compiler, run by
// runtime/kernels/{broadcast,reduce}_kernels.cpp. Append only; never renumber.
#pragma once

#include <cstdint>

namespace ipu::format {

// Unary: y = f(x; alpha, beta).
enum class UnaryKind : int64_t {
  kIdentity = 0,
  kAbs = 1,
  kNeg = 2,
  kExp = 3,
  kLog = 4,
  kSqrt = 5,
  kReciprocal = 6,
  kCeil = 7,
  kFloor = 8,
  kSign = 9,
  kErf = 10,
  kGelu = 11,        // x·Φ(x)
  kGeluTanh = 12,    // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
  kSoftplus = 13,    // log(1 + eˣ)
  kElu = 14,         // alpha
  kSelu = 15,        // alpha, beta = gamma
  kLeakyRelu = 16,   // alpha
  kHardSigmoid = 17, // max(0, min(1, alpha·x + beta))
  kClip = 18,        // min(max(x, alpha), beta)
  kNot = 19,         // x == 0 ? 1 : 0
  kTrunc = 20,       // toward zero (float → integer casts)
  kNonZero = 21,     // x != 0 ? 1 : 0 (casts to bool)
  kAffine = 22,      // alpha·x + beta
  kRelu = 23,
  kSigmoid = 24,
  kTanh = 25,
  kPowScalar = 26, // x^alpha
  kSquare = 27,
  kSoftsign = 28,  // x / (1 + |x|)
  kHardSwish = 29, // x·max(0, min(1, alpha·x + beta)) (ONNX: alpha 1/6, beta 0.5)
  kCelu = 30,      // alpha: x > 0 ? x : alpha·(e^(x/alpha) − 1)
  kSilu = 31,      // x·sigmoid(x), SiLU or swish (compiler/passes/fuse_silu.h)
};
inline constexpr int64_t kUnaryKindCount = 32;

// The kinds whose gradient the UnaryGrad codelet computes in one pass, dX = dY·f'(X; alpha, beta):
// derivatives that are piecewise (a select on X) or need several functions of X, which Unary and
// Binary ops would take three to eight passes and as many temporaries to write. The compiler
// writes the other kinds' derivatives with Unary and Binary ops (compiler/ops/elementwise_ops.cpp).
constexpr bool has_unary_grad_kernel(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::kGelu:
  case UnaryKind::kGeluTanh:
  case UnaryKind::kElu:
  case UnaryKind::kSelu:
  case UnaryKind::kLeakyRelu:
  case UnaryKind::kHardSigmoid:
  case UnaryKind::kClip:
  case UnaryKind::kHardSwish:
  case UnaryKind::kCelu:
    return true;
  default:
    return false;
  }
}

// Binary: y = a ∘ b, broadcast. Comparisons and logic give 0/1.
enum class BinaryKind : int64_t {
  kAdd = 0,
  kSub = 1,
  kMul = 2,
  kDiv = 3,
  kPow = 4,
  kMax = 5,
  kMin = 6,
  kEqual = 7,
  kLess = 8,
  kGreater = 9,
  kLessOrEqual = 10,
  kGreaterOrEqual = 11,
  kAnd = 12,
  kOr = 13,
  kXor = 14,
  // The remainder of a truncating division, with the dividend's sign (C's fmod; ONNX Mod fmod=1).
  kFmod = 15,
  // The remainder of a flooring division, with the divisor's sign (Python's %; ONNX Mod fmod=0).
  kMod = 16,
};
inline constexpr int64_t kBinaryKindCount = 17;

// Reduce over some axes. The arg kinds give the index (as a float) of the first (or last)
// extreme along a single reduced axis.
enum class ReduceKind : int64_t {
  kSum = 0,
  kMean = 1,
  kMax = 2,
  kMin = 3,
  kProd = 4,
  kArgMax = 5,
  kArgMin = 6,
  kArgMaxLast = 7,
  kArgMinLast = 8,
  // max(0, the sum), NaN to 0 as the Relu kernel: the last step of a convolution with a fused Relu
  // split over its input channels.
  kSumRelu = 9,
};
inline constexpr int64_t kReduceKindCount = 10;

// AxisSoftmax.
enum class SoftmaxKind : int64_t { kSoftmax = 0, kLogSoftmax = 1 };
inline constexpr int64_t kSoftmaxKindCount = 2;

// NllLoss and its gradient: how the per-position losses combine. kMean divides the sum by the
// total class weight of the positions not ignored (ONNX NegativeLogLikelihoodLoss).
enum class LossReduction : int64_t { kNone = 0, kSum = 1, kMean = 2 };
inline constexpr int64_t kLossReductionCount = 3;

// Ranks the strided codelets accept.
inline constexpr int64_t kMaxTensorRank = 8;

} // namespace ipu::format
