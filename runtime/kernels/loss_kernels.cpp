// ONNX losses: NllLoss (NegativeLogLikelihoodLoss; SoftmaxCrossEntropyLoss is a log-softmax
// followed by it) and its gradient with respect to the input.
//
// The input is viewed as [N, C, D] (D = the product of the trailing dims d1..dk, 1 without
// them) and the targets as [N·D]. Targets are floats holding integers (int64 tensors reach the
// device as floats, like Gather's indices); weights are per class. A position whose target equals
// the ignore index contributes nothing and weighs nothing; any other target outside [0, C) is a
// fault (an error in ONNX Runtime too), never an out-of-bounds read.
#include <algorithm>
#include <string>

#include "runtime/format/tensor_kinds.h"
#include "runtime/format/verifier.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::LossReduction;

// The params both codelets start with (format::params::Loss), decoded.
using L = format::params::Loss;
using format::params::NllLoss;
using format::params::NllLossGrad;

struct LossParams {
  int64_t N, C, D;
  LossReduction reduction;
  bool has_ignore;
  int64_t ignore_index;
  bool has_weights;
};

LossParams loss_params(const PreparedVertex& v) {
  return {v.params[L::kN],
          v.params[L::kC],
          v.params[L::kD],
          static_cast<LossReduction>(v.params[L::kReduction]),
          v.params[L::kHasIgnore] != 0,
          v.params[L::kIgnoreIndex],
          v.params[L::kHasWeights] != 0};
}

enum class TargetState { kValid, kIgnored, kOutOfRange };

// Classifies the target `t` and, if valid, stores its class in `cls`.
TargetState classify(float t, const LossParams& p, int64_t& cls) {
  // Beyond ±2^62 no int64 ignore index or class can match; the bound keeps the cast defined.
  constexpr float kLimit = 4.6e18f;
  if (!(t > -kLimit && t < kLimit)) return TargetState::kOutOfRange;
  cls = static_cast<int64_t>(t);
  if (p.has_ignore && cls == p.ignore_index) return TargetState::kIgnored;
  return cls >= 0 && cls < p.C ? TargetState::kValid : TargetState::kOutOfRange;
}

KernelFault target_fault(const float* targets, int64_t i, const LossParams& p) {
  return out_of_range("target", "targets", i, static_cast<double>(targets[i]), 0, p.C,
                      p.has_ignore ? std::optional<int64_t>(p.ignore_index) : std::nullopt);
}

// NllLoss: per position p = (n, d) with class t = T[p] and weight w = W[t] (1 without weights),
// loss_p = −X[n, t, d]·w (0 if ignored). kNone writes loss_p for p in [begin, end); kSum writes
// Σ loss_p and kMean Σ loss_p / Σ w over the positions not ignored (begin, end cover all).
//   operands: X [N,C,D], T [N·D], Y [N·D] (kNone) or [1], W [C] if has_weights  (all f32)
//   params:   format::params::NllLoss
void run_nll_loss(const PreparedVertex& v, KernelContext& context) {
  const LossParams p = loss_params(v);
  const float* x = v.f32(0);
  const float* targets = v.f32(1);
  float* y = v.f32(2);
  const float* w = p.has_weights ? v.f32(3) : nullptr;
  double total = 0.0, weight_total = 0.0;
  for (int64_t i = v.params[NllLoss::kBegin]; i < v.params[NllLoss::kEnd]; ++i) {
    const int64_t n = i / p.D, d = i % p.D;
    int64_t cls = 0;
    double loss = 0.0;
    switch (classify(targets[i], p, cls)) {
    case TargetState::kIgnored:
      break;
    case TargetState::kOutOfRange:
      context.fault = target_fault(targets, i, p);
      return;
    case TargetState::kValid: {
      const double weight = w ? static_cast<double>(w[cls]) : 1.0;
      loss = -static_cast<double>(x[(n * p.C + cls) * p.D + d]) * weight;
      weight_total += weight;
      break;
    }
    }
    if (p.reduction == LossReduction::kNone) {
      y[i] = static_cast<float>(loss);
    } else {
      total += loss;
    }
  }
  if (p.reduction == LossReduction::kSum) *y = static_cast<float>(total);
  // All positions ignored gives 0/0 = NaN, as in ONNX's reference.
  if (p.reduction == LossReduction::kMean) *y = static_cast<float>(total / weight_total);
}

// The checks both codelets (layout P) share: the count, the loss params, the operand count (W, if
// present, is last, at `weights_at`), dtypes, and the sizes of T (at `targets_at`) and W.
template <typename P>
Status validate_loss_params(const format::Vertex& v, const std::vector<OperandInfo>& ops, size_t targets_at,
                            size_t weights_at) {
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  const int64_t reduction = v.params(L::kReduction), has_ignore = v.params(L::kHasIgnore);
  if (reduction < 0 || reduction >= format::kLossReductionCount) return invalid_argument("unknown reduction");
  if ((has_ignore != 0 && has_ignore != 1) ||
      (v.params(L::kHasWeights) != 0 && v.params(L::kHasWeights) != 1)) {
    return invalid_argument("has_ignore and has_weights must be 0 or 1");
  }
  const bool has_weights = v.params(L::kHasWeights) != 0;
  const size_t count = weights_at + (has_weights ? 1 : 0);
  if (ops.size() != count) {
    return invalid_argument("expects " + std::to_string(count) + " operands, got " +
                            std::to_string(ops.size()));
  }
  for (const OperandInfo& op : ops) {
    if (!format::is_float(op.dtype)) return invalid_argument("every operand must be a float");
  }
  IPU_RETURN_IF_ERROR(expect_elements({v.params(L::kN), v.params(L::kD)}, ops[targets_at].elements, "T"));
  if (has_weights) {
    IPU_RETURN_IF_ERROR(expect_elements({v.params(L::kC)}, ops[weights_at].elements, "W"));
  }
  return Status();
}

// The loss (or its gradient) of kNone has one element per position, else one.
uint64_t loss_elements(const format::Vertex& v) {
  return v.params(L::kReduction) == static_cast<int64_t>(LossReduction::kNone)
             ? static_cast<uint64_t>(v.params(L::kN) * v.params(L::kD))
             : 1;
}

Status validate_nll_loss(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = NllLoss;
  IPU_RETURN_IF_ERROR(validate_loss_params<P>(v, ops, 1, 3));
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kD)}, ops[0].elements, "X"));
  if (ops[2].elements != loss_elements(v)) return invalid_argument("Y has the wrong number of elements");
  const int64_t positions = v.params(P::kN) * v.params(P::kD);
  const int64_t begin = v.params(P::kBegin), end = v.params(P::kEnd);
  IPU_RETURN_IF_ERROR(expect_range(begin, end, positions, "position"));
  // A reduction sums every position in one vertex; partial sums would overwrite each other.
  if (v.params(P::kReduction) != static_cast<int64_t>(LossReduction::kNone) &&
      (begin != 0 || end != positions)) {
    return invalid_argument("a reduced loss must cover every position");
  }
  for (int i : {0, 1, 3}) {
    if (i < v.operands_size() && v.operands(2) == v.operands(i))
      return invalid_argument("output aliases an input");
  }
  return Status();
}

// NllLossGrad: dX[n, c, d] = −W[t]·g_p·[c = t] / s for rows n in [begin, end), where g_p =
// dY[p] (kNone) or dY[0], and s = Σ w over the positions not ignored for kMean, else 1. Ignored
// positions get 0.
//   operands: T [N·D], dY [N·D] (kNone) or [1], dX [N,C,D], W [C] if has_weights  (all f32)
//   params:   format::params::NllLossGrad
void run_nll_loss_grad(const PreparedVertex& v, KernelContext& context) {
  const LossParams p = loss_params(v);
  const float* targets = v.f32(0);
  const float* dy = v.f32(1);
  float* dx = v.f32(2);
  const float* w = p.has_weights ? v.f32(3) : nullptr;
  double scale = 1.0;
  if (p.reduction == LossReduction::kMean) {
    double weight_total = 0.0;
    for (int64_t i = 0; i < p.N * p.D; ++i) {
      int64_t cls = 0;
      const TargetState state = classify(targets[i], p, cls);
      if (state == TargetState::kOutOfRange) {
        context.fault = target_fault(targets, i, p);
        return;
      }
      if (state == TargetState::kValid) weight_total += w ? static_cast<double>(w[cls]) : 1.0;
    }
    scale = 1.0 / weight_total;
  }
  const int64_t row = p.C * p.D;
  const int64_t row_begin = v.params[NllLossGrad::kRowBegin], row_end = v.params[NllLossGrad::kRowEnd];
  std::fill(dx + row_begin * row, dx + row_end * row, 0.0f);
  for (int64_t n = row_begin; n < row_end; ++n) {
    for (int64_t d = 0; d < p.D; ++d) {
      const int64_t i = n * p.D + d;
      int64_t cls = 0;
      const TargetState state = classify(targets[i], p, cls);
      if (state == TargetState::kOutOfRange) {
        context.fault = target_fault(targets, i, p);
        return;
      }
      if (state == TargetState::kValid) {
        const double g = static_cast<double>(p.reduction == LossReduction::kNone ? dy[i] : dy[0]);
        const double weight = w ? static_cast<double>(w[cls]) : 1.0;
        dx[n * row + cls * p.D + d] = static_cast<float>(-weight * g * scale);
      }
    }
  }
}

Status validate_nll_loss_grad(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = NllLossGrad;
  IPU_RETURN_IF_ERROR(validate_loss_params<P>(v, ops, 0, 3));
  if (ops[1].elements != loss_elements(v)) return invalid_argument("dY has the wrong number of elements");
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kD)}, ops[2].elements, "dX"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kRowBegin), v.params(P::kRowEnd), v.params(P::kN), "row"));
  for (int i : {0, 1, 3}) {
    if (i < v.operands_size() && v.operands(2) == v.operands(i))
      return invalid_argument("output aliases an input");
  }
  return Status();
}

} // namespace

const KernelDef& nll_loss_kernel() {
  static const KernelDef def{Codelet::kNllLoss, KernelEntry::fallible(run_nll_loss), validate_nll_loss,
                             begin_end<NllLoss>()};
  return def;
}
const KernelDef& nll_loss_grad_kernel() {
  static const KernelDef def{Codelet::kNllLossGrad,
                             KernelEntry::fallible(run_nll_loss_grad),
                             validate_nll_loss_grad,
                             {NllLossGrad::kRowBegin, NllLossGrad::kRowEnd}};
  return def;
}

} // namespace ipu::kernels
