#include "compiler/ops/element_cycles.h"

namespace ipu::ops {

using format::ActivationKind;
using format::BinaryKind;
using format::UnaryKind;

double unary_cycles_per_element(const target::CycleModel& model, UnaryKind kind, double alpha) {
  const target::FunctionCycles& f = model.functions;
  const double vector_op = 1.0 / model.vector_flops_per_cycle;
  switch (kind) {
  case UnaryKind::kIdentity:
  case UnaryKind::kAbs:
  case UnaryKind::kNeg:
  case UnaryKind::kCeil:
  case UnaryKind::kFloor:
  case UnaryKind::kSign:
  case UnaryKind::kLeakyRelu:
  case UnaryKind::kClip:
  case UnaryKind::kNot:
  case UnaryKind::kTrunc:
  case UnaryKind::kNonZero:
  case UnaryKind::kAffine:
  case UnaryKind::kRelu:
  case UnaryKind::kSquare:
    return vector_op;
  case UnaryKind::kHardSigmoid: // a multiply-add, then a clamp
    return 2 * vector_op;
  case UnaryKind::kExp:
    return f.exp;
  case UnaryKind::kLog:
    return f.log;
  case UnaryKind::kSqrt:
    return f.sqrt;
  case UnaryKind::kReciprocal:
    return f.inverse;
  case UnaryKind::kErf:
    return f.erf;
  case UnaryKind::kGelu:
    return f.gelu_erf;
  case UnaryKind::kGeluTanh: // x³, its multiply-add, the scale inside tanh, 1 + t, 0.5·x·(…)
    return f.tanh + 5 * vector_op;
  case UnaryKind::kSoftplus: // log(1 + eˣ)
    return f.exp + f.log + vector_op;
  case UnaryKind::kElu: // alpha·(eˣ − 1) where x < 0: the subtract and the select
    return f.exp + 2 * vector_op;
  case UnaryKind::kSelu: // Elu's, then the gamma scale
    return f.exp + 3 * vector_op;
  case UnaryKind::kSigmoid:
    return f.sigmoid;
  case UnaryKind::kSilu: // popnn's SWISH vertex: the sigmoid and the multiply in one loop
    return f.swish;
  case UnaryKind::kTanh:
    return f.tanh;
  case UnaryKind::kSoftsign: // x / (1 + |x|)
    return 2 * vector_op + f.divide;
  case UnaryKind::kHardSwish: // HardSigmoid's, then the multiply by x
    return 3 * vector_op;
  case UnaryKind::kCelu: // x/alpha, then Elu's
    return f.exp + 3 * vector_op;
  case UnaryKind::kPowScalar:
    // popops' expression optimiser (ElementWiseInternal.cpp, optimiseBinary) rewrites these
    // constant exponents before mapping POWER.
    if (alpha == 0.5) return f.sqrt;
    if (alpha == -0.5) return f.rsqrt;
    if (alpha == -1) return f.inverse;
    if (alpha == 1 || alpha == 2) return vector_op;
    return f.power;
  }
  return vector_op;
}

double binary_cycles_per_element(const target::CycleModel& model, BinaryKind kind) {
  const target::FunctionCycles& f = model.functions;
  switch (kind) {
  case BinaryKind::kDiv:
    return f.divide;
  case BinaryKind::kPow:
    return f.power;
  case BinaryKind::kFmod:
    return f.remainder;
  case BinaryKind::kMod: // the remainder, then its sign compared with the divisor's and fixed
    return f.remainder + 2.0 / model.vector_flops_per_cycle;
  case BinaryKind::kEqual:
  case BinaryKind::kLess:
  case BinaryKind::kGreater:
  case BinaryKind::kLessOrEqual:
  case BinaryKind::kGreaterOrEqual:
    return f.compare;
  case BinaryKind::kAdd:
  case BinaryKind::kSub:
  case BinaryKind::kMul:
  case BinaryKind::kMax:
  case BinaryKind::kMin:
  case BinaryKind::kAnd:
  case BinaryKind::kOr:
  case BinaryKind::kXor:
    break;
  }
  return 1.0 / model.vector_flops_per_cycle;
}

double unary_grad_cycles_per_element(const target::CycleModel& model, UnaryKind kind) {
  const target::FunctionCycles& f = model.functions;
  const double vector_op = 1.0 / model.vector_flops_per_cycle;
  switch (kind) {
  case UnaryKind::kGelu: // x/√2, erf, 1 + · and ½·, −½x², exp, x·φ scaled, Φ + x·φ, ·dY
    return f.erf + f.exp + 8 * vector_op;
  case UnaryKind::kGeluTanh: // x², the cubic's multiply-add, its scale, tanh, 1 + t, 1 − t², the
                             // derivative of the cubic, their products and sum, ·dY
    return f.tanh + 10 * vector_op;
  case UnaryKind::kElu: // exp, α·eˣ, the compare and select, ·dY
    return f.exp + 3 * vector_op;
  case UnaryKind::kSelu: // Elu's, then the gamma scale
    return f.exp + 4 * vector_op;
  case UnaryKind::kHardSigmoid: // the multiply-add, two compares, the select of alpha, ·dY
    return 5 * vector_op;
  case UnaryKind::kHardSwish: // the multiply-add, two compares, 2·alpha·x + beta, two selects, ·dY
    return 7 * vector_op;
  case UnaryKind::kCelu: // x/alpha, exp, the compare and select, ·dY
    return f.exp + 3 * vector_op;
  case UnaryKind::kLeakyRelu: // the compare, the select of the slope, ·dY
  case UnaryKind::kClip:      // two compares, the select of dY
  default:
    return 3 * vector_op;
  }
}

double activation_cycles_per_element(const target::CycleModel& model, ActivationKind kind, bool gradient) {
  const double vector_op = 1.0 / model.vector_flops_per_cycle;
  switch (kind) {
  case ActivationKind::kRelu:
    return vector_op;
  case ActivationKind::kSigmoid:
    return gradient ? 3 * vector_op : model.functions.sigmoid;
  case ActivationKind::kTanh:
    return gradient ? 3 * vector_op : model.functions.tanh;
  }
  return vector_op;
}

double softmax_cycles_per_element(const target::CycleModel& model) {
  return model.functions.exp + 4.0 / model.vector_flops_per_cycle;
}

double batch_norm_cycles_per_element(const target::CycleModel& model, BatchNormPass pass, bool half,
                                     int64_t channels) {
  const double vector = 1.0 / model.vector_flops_per_cycle;
  const bool channel_ops = half && channels % 4 == 0;
  const double add = channel_ops ? model.half_channel_add_cycles_per_element : vector;
  const double mul = channel_ops ? model.half_channel_mul_cycles_per_element : vector;
  const double mul_in_place = channel_ops ? model.half_channel_mul_in_place_cycles_per_element : vector;
  const double whiten = add + mul_in_place;
  switch (pass) {
  case BatchNormPass::kNormalise:
    return whiten + mul + add;
  case BatchNormPass::kTrainGradientInput:
    return mul + whiten + mul + add + vector + mul_in_place;
  }
  return 0.0;
}

} // namespace ipu::ops
