// The optimizers' update codelets: SgdMomentum, Sgd, Adam, RMSProp, Adagrad, AdaMax (each vertex
// owns a contiguous range of its weight and state) and the StepCount of those with bias
// correction. LAMB's two passes are in lamb_kernels.cpp.
#include <algorithm>
#include <cmath>

#include "runtime/format/host_contract.h"
#include "runtime/kernels/update_operands.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// The optimizers' updates read their hyper-parameters by slot from their last operand
// (update_operands.h).
using H = format::HyperParameter;

// SgdMomentum, Keras form on the gradient g = gradient_scale·G: V = momentum·V − lr·g; W += V.
// Without momentum state: W −= lr·g. With clear_gradient, G (an accumulator) is zeroed after use.
//   operands: W, G[, V], H (hyper-parameters: learning_rate, momentum)
//   params:   format::params::SgdMomentum;  fparams: format::fparams::SgdMomentum
void run_sgd_momentum(const PreparedVertex& v) {
  using P = format::params::SgdMomentum;
  using F = format::fparams::SgdMomentum;
  float* w = v.f32(0);
  float* g = v.f32(1);
  const float* hyper = hyper_parameters(v);
  const float lr = hyper[H::kLearningRate], momentum = hyper[H::kMomentum],
              scale = v.fparams[F::kGradientScale];
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  if (v.num_operands == 3) {
    for (int64_t i = begin; i < end; ++i)
      w[i] -= lr * (scale * g[i]);
  } else {
    float* velocity = v.f32(2);
    for (int64_t i = begin; i < end; ++i) {
      velocity[i] = momentum * velocity[i] - lr * (scale * g[i]);
      w[i] += velocity[i];
    }
  }
  if (v.params[P::kClearGradient] != 0) std::fill(g + begin, g + end, 0.0f);
}

Status validate_sgd_momentum(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::SgdMomentum;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::SgdMomentum::kCount));
  if (ops.size() != 3 && ops.size() != 4) {
    return invalid_argument("expects 3 or 4 operands (W, G[, V], hyper-parameters), got " +
                            std::to_string(ops.size()));
  }
  return validate_update(v, ops, ops.size() - 1, false, v.params(P::kBegin), v.params(P::kEnd));
}

// Adam and AdamW as torch.optim.Adam / AdamW compute them (docs/training.md), on the gradient
// g = gradient_scale·G, at step t = S[0] + 1 (S counts the updates done; StepCount advances it
// after every vertex of the update has read it):
//   Adam:  g += weight_decay·W          AdamW: W −= lr·weight_decay·W
//   M = β1·M + (1 − β1)·g;  V = β2·V + (1 − β2)·g²
//   W −= (lr / (1 − β1^t)) · M / (sqrt(V) / sqrt(1 − β2^t) + ε)
// With clear_gradient, G (an accumulator) is zeroed after use.
//   operands: W, G, M, V (same size, distinct), S [1], H (hyper-parameters: learning_rate, beta_1,
//             beta_2, epsilon, weight_decay)
//   params:   format::params::Adam;  fparams: format::fparams::Adam
void run_adam(const PreparedVertex& v) {
  using P = format::params::Adam;
  using F = format::fparams::Adam;
  float* w = v.f32(0);
  float* g = v.f32(1);
  float* m = v.f32(2);
  float* second = v.f32(3);
  const float* hyper = hyper_parameters(v);
  const float lr = hyper[H::kLearningRate], beta1 = hyper[H::kBeta1], beta2 = hyper[H::kBeta2],
              epsilon = hyper[H::kEpsilon], decay = hyper[H::kWeightDecay],
              scale = v.fparams[F::kGradientScale];
  const bool decoupled = v.params[P::kDecoupledWeightDecay] != 0;
  // The bias corrections in double: β^t for large t is where float32 would lose digits.
  const double t = static_cast<double>(v.f32(4)[0]) + 1.0;
  const auto step_size = static_cast<float>(lr / (1.0 - std::pow(static_cast<double>(beta1), t)));
  const auto root_correction = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(beta2), t)));
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  for (int64_t i = begin; i < end; ++i) {
    float grad = scale * g[i];
    if (decoupled) {
      w[i] -= lr * decay * w[i];
    } else {
      grad += decay * w[i];
    }
    m[i] = beta1 * m[i] + (1.0f - beta1) * grad;
    second[i] = beta2 * second[i] + (1.0f - beta2) * grad * grad;
    w[i] -= step_size * m[i] / (std::sqrt(second[i]) / root_correction + epsilon);
  }
  if (v.params[P::kClearGradient] != 0) std::fill(g + begin, g + end, 0.0f);
}

Status validate_adam(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Adam;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::Adam::kCount));
  return validate_update(v, ops, 4, true, v.params(P::kBegin), v.params(P::kEnd));
}

// StepCount: S[0] += increment (the step count of an optimizer with bias correction).
//   operands: S [1] f32 (exact up to 2^24 steps);  params: format::params::StepCount
void run_step_count(const PreparedVertex& v) {
  v.f32(0)[0] += static_cast<float>(v.params[format::params::StepCount::kIncrement]);
}

Status validate_step_count(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, format::params::StepCount::kCount, 0));
  if (ops[0].elements != 1) return invalid_argument("the step count must have one element");
  return Status();
}

// SGD as torch.optim.SGD computes it (docs/training.md), with its buffer b kept in Keras's form
// V = −lr·b (the 'NAME/momentum' state of plain SGD), on g = gradient_scale·G + weight_decay·W:
//   momentum 0:  W −= lr·g
//   else:        V = m·V − lr·(1 − dampening)·g, or V = −lr·g at the first step (S[0] = 0)
//                W += m·V − lr·g with nesterov, else W += V
// With clear_gradient, G (an accumulator) is zeroed after use.
//   operands: W, G, V (momentum ≠ 0), S [1] (momentum and dampening ≠ 0; StepCount advances it),
//             H (hyper-parameters: learning_rate, momentum, dampening, weight_decay)
//   params:   format::params::Sgd;  fparams: format::fparams::Sgd
void run_sgd(const PreparedVertex& v) {
  using P = format::params::Sgd;
  using F = format::fparams::Sgd;
  float* w = v.f32(0);
  float* g = v.f32(1);
  const float* hyper = hyper_parameters(v);
  const float lr = hyper[H::kLearningRate], momentum = hyper[H::kMomentum], dampening = hyper[H::kDampening],
              decay = hyper[H::kWeightDecay], scale = v.fparams[F::kGradientScale];
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  if (v.num_operands == 3) {
    for (int64_t i = begin; i < end; ++i)
      w[i] -= lr * (scale * g[i] + decay * w[i]);
  } else {
    float* velocity = v.f32(2);
    const bool first = v.num_operands == 5 && v.f32(3)[0] == 0.0f;
    const float damped_lr = first ? lr : lr * (1.0f - dampening);
    const bool nesterov = v.params[P::kNesterov] != 0;
    for (int64_t i = begin; i < end; ++i) {
      const float grad = scale * g[i] + decay * w[i];
      velocity[i] = momentum * velocity[i] - damped_lr * grad;
      w[i] += nesterov ? momentum * velocity[i] - lr * grad : velocity[i];
    }
  }
  if (v.params[P::kClearGradient] != 0) std::fill(g + begin, g + end, 0.0f);
}

Status validate_sgd(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Sgd;
  using F = format::fparams::Sgd;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, F::kCount));
  // W, G, H; with momentum state V; with dampening too the step count.
  if (ops.size() < 3 || ops.size() > 5) {
    return invalid_argument("expects 3 to 5 operands (W, G[, V[, S]], hyper-parameters), got " +
                            std::to_string(ops.size()));
  }
  const bool step = ops.size() == 5;
  return validate_update(v, ops, step ? 3 : ops.size() - 1, step, v.params(P::kBegin), v.params(P::kEnd));
}

// RMSProp as torch.optim.RMSprop computes it (docs/training.md; Keras's rho is torch's alpha),
// on g = gradient_scale·G + weight_decay·W:
//   A = ρ·A + (1 − ρ)·g²;  centered: Ḡ = ρ·Ḡ + (1 − ρ)·g, d = sqrt(A − Ḡ²) + ε, else d = sqrt(A) + ε
//   momentum ≠ 0: B = m·B + g/d, W −= lr·B;  else W −= lr·g/d
// With clear_gradient, G (an accumulator) is zeroed after use.
//   operands: W, G, A, B (momentum ≠ 0), Ḡ (centered), H (hyper-parameters: learning_rate, rho,
//             momentum, epsilon, weight_decay)
//   params:   format::params::RmsProp;  fparams: format::fparams::RmsProp
// One RMSProp loop per combination of the optional buffers, so that each loop is branch-free and
// GCC vectorises it, as it does Adam's.
struct RmsPropOperands {
  float* w;
  float* g;
  float* square_avg;
  float* buffer;   // momentum ≠ 0
  float* grad_avg; // centered
};

template <bool kCentered, bool kMomentum>
void rms_prop_range(const RmsPropOperands& o, const float* hyper, float scale, int64_t begin, int64_t end) {
  const float lr = hyper[H::kLearningRate], rho = hyper[H::kRho], momentum = hyper[H::kMomentum],
              epsilon = hyper[H::kEpsilon], decay = hyper[H::kWeightDecay];
  for (int64_t i = begin; i < end; ++i) {
    const float grad = scale * o.g[i] + decay * o.w[i];
    o.square_avg[i] = rho * o.square_avg[i] + (1.0f - rho) * grad * grad;
    float variance = o.square_avg[i];
    if constexpr (kCentered) {
      o.grad_avg[i] = rho * o.grad_avg[i] + (1.0f - rho) * grad;
      variance -= o.grad_avg[i] * o.grad_avg[i];
    }
    const float step = grad / (std::sqrt(variance) + epsilon);
    if constexpr (kMomentum) {
      o.buffer[i] = momentum * o.buffer[i] + step;
      o.w[i] -= lr * o.buffer[i];
    } else {
      o.w[i] -= lr * step;
    }
  }
}

void run_rms_prop(const PreparedVertex& v) {
  using P = format::params::RmsProp;
  using F = format::fparams::RmsProp;
  // The state the program has: W, G, A, then B with momentum, then Ḡ when centered, then H.
  const bool centered = v.params[P::kCentered] != 0;
  const bool momentum = v.num_operands == (centered ? 6u : 5u);
  const RmsPropOperands o{v.f32(0), v.f32(1), v.f32(2), momentum ? v.f32(3) : nullptr,
                          centered ? v.f32(v.num_operands - 2) : nullptr};
  const float* hyper = hyper_parameters(v);
  const float scale = v.fparams[F::kGradientScale];
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  if (centered) {
    momentum ? rms_prop_range<true, true>(o, hyper, scale, begin, end)
             : rms_prop_range<true, false>(o, hyper, scale, begin, end);
  } else {
    momentum ? rms_prop_range<false, true>(o, hyper, scale, begin, end)
             : rms_prop_range<false, false>(o, hyper, scale, begin, end);
  }
  if (v.params[P::kClearGradient] != 0) std::fill(o.g + begin, o.g + end, 0.0f);
}

Status validate_rms_prop(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::RmsProp;
  using F = format::fparams::RmsProp;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, F::kCount));
  // W, G, A, H, and B (momentum) and Ḡ (centered): the momentum buffer is there when the operands
  // count one more than the centered flag needs.
  const size_t least = 4 + (v.params(P::kCentered) != 0 ? 1 : 0);
  if (ops.size() != least && ops.size() != least + 1) {
    return invalid_argument("expects " + std::to_string(least) + " or " + std::to_string(least + 1) +
                            " operands, got " + std::to_string(ops.size()));
  }
  return validate_update(v, ops, ops.size() - 1, false, v.params(P::kBegin), v.params(P::kEnd));
}

// Adagrad as torch.optim.Adagrad computes it (lr_decay 0; docs/training.md), on
// g = gradient_scale·G + weight_decay·W:   A += g²;  W −= lr·g / (sqrt(A) + ε)
// With clear_gradient, G (an accumulator) is zeroed after use.
//   operands: W, G, A, H (hyper-parameters: learning_rate, epsilon, weight_decay)
//   params:   format::params::Adagrad;  fparams: format::fparams::Adagrad
void run_adagrad(const PreparedVertex& v) {
  using P = format::params::Adagrad;
  using F = format::fparams::Adagrad;
  float* w = v.f32(0);
  float* g = v.f32(1);
  float* sum = v.f32(2);
  const float* hyper = hyper_parameters(v);
  const float lr = hyper[H::kLearningRate], epsilon = hyper[H::kEpsilon], decay = hyper[H::kWeightDecay],
              scale = v.fparams[F::kGradientScale];
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  for (int64_t i = begin; i < end; ++i) {
    const float grad = scale * g[i] + decay * w[i];
    sum[i] += grad * grad;
    w[i] -= lr * grad / (std::sqrt(sum[i]) + epsilon);
  }
  if (v.params[P::kClearGradient] != 0) std::fill(g + begin, g + end, 0.0f);
}

Status validate_adagrad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::Adagrad;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::Adagrad::kCount));
  return validate_update(v, ops, 3, false, v.params(P::kBegin), v.params(P::kEnd));
}

// AdaMax as torch.optim.Adamax computes it (docs/training.md), at step t = S[0] + 1, on
// g = gradient_scale·G + weight_decay·W:
//   M = β1·M + (1 − β1)·g;  U = max(β2·U, |g| + ε);  W −= (lr / (1 − β1^t))·M / U
// With clear_gradient, G (an accumulator) is zeroed after use.
//   operands: W, G, M, U, S [1], H (hyper-parameters: learning_rate, beta_1, beta_2, epsilon,
//             weight_decay)
//   params:   format::params::AdaMax;  fparams: format::fparams::AdaMax
void run_ada_max(const PreparedVertex& v) {
  using P = format::params::AdaMax;
  using F = format::fparams::AdaMax;
  float* w = v.f32(0);
  float* g = v.f32(1);
  float* m = v.f32(2);
  float* u = v.f32(3);
  const float* hyper = hyper_parameters(v);
  const float lr = hyper[H::kLearningRate], beta1 = hyper[H::kBeta1], beta2 = hyper[H::kBeta2],
              epsilon = hyper[H::kEpsilon], decay = hyper[H::kWeightDecay],
              scale = v.fparams[F::kGradientScale];
  // The bias correction in double, as Adam's.
  const double t = static_cast<double>(v.f32(4)[0]) + 1.0;
  const auto step_size = static_cast<float>(lr / (1.0 - std::pow(static_cast<double>(beta1), t)));
  const int64_t begin = v.params[P::kBegin], end = v.params[P::kEnd];
  for (int64_t i = begin; i < end; ++i) {
    const float grad = scale * g[i] + decay * w[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * grad;
    u[i] = std::max(beta2 * u[i], std::abs(grad) + epsilon);
    w[i] -= step_size * m[i] / u[i];
  }
  if (v.params[P::kClearGradient] != 0) std::fill(g + begin, g + end, 0.0f);
}

Status validate_ada_max(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::AdaMax;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::AdaMax::kCount));
  return validate_update(v, ops, 4, true, v.params(P::kBegin), v.params(P::kEnd));
}

} // namespace

const KernelDef& sgd_momentum_kernel() {
  static const KernelDef def{Codelet::kSgdMomentum, run_sgd_momentum, validate_sgd_momentum,
                             begin_end<format::params::SgdMomentum>()};
  return def;
}
const KernelDef& adam_kernel() {
  static const KernelDef def{Codelet::kAdam, run_adam, validate_adam, begin_end<format::params::Adam>()};
  return def;
}
const KernelDef& step_count_kernel() {
  static const KernelDef def{Codelet::kStepCount, run_step_count, validate_step_count};
  return def;
}
const KernelDef& sgd_kernel() {
  static const KernelDef def{Codelet::kSgd, run_sgd, validate_sgd, begin_end<format::params::Sgd>()};
  return def;
}
const KernelDef& rms_prop_kernel() {
  static const KernelDef def{Codelet::kRmsProp, run_rms_prop, validate_rms_prop,
                             begin_end<format::params::RmsProp>()};
  return def;
}
const KernelDef& adagrad_kernel() {
  static const KernelDef def{Codelet::kAdagrad, run_adagrad, validate_adagrad,
                             begin_end<format::params::Adagrad>()};
  return def;
}
const KernelDef& ada_max_kernel() {
  static const KernelDef def{Codelet::kAdaMax, run_ada_max, validate_ada_max,
                             begin_end<format::params::AdaMax>()};
  return def;
}

} // namespace ipu::kernels
