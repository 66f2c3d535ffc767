// The attributes of IR ops, one struct per family. Each line of ops.def names the family its op
// carries; Graph::add_op aborts when an op is given another, and Op::attrs<Family>() aborts when
// asked for another, so a rule reads only fields that mean something for its op.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

#include "runtime/format/codelet.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::ir {

// Ops whose inputs say everything.
struct NoAttrs {};

// MatMul: C = op(A) · op(B), op transposing when asked.
struct MatMulAttrs {
  bool trans_a = false;
  bool trans_b = false;
  bool fused_relu = false; // applies Relu to the output (passes/fuse_epilogues.h)
};

// Reshape: the output shape (same element count).
struct ReshapeAttrs {
  std::vector<int64_t> shape;
};

// SparseCrossEntropy and its gradient.
struct CrossEntropyAttrs {
  bool from_logits = true;
};

// DenseLoss, DenseLossGrad and DenseCorrect: a Keras loss on float labels.
struct DenseLossAttrs {
  format::LossKind kind = format::LossKind::kCategoricalCrossEntropy;
  bool from_logits = false; // the cross-entropies
  float delta = 1.0f;       // Huber
};

// MetricSum: a metric besides accuracy, summed over the batch.
struct MetricAttrs {
  format::MetricKind kind = format::MetricKind::kSparseTopK;
  int64_t k = 5; // top-k
};

// ActivationGrad: which activation's derivative, given its output.
struct ActivationGradAttrs {
  format::ActivationKind activation = format::ActivationKind::kRelu;
};

// The optimizers' updates carry only what shapes their program: the hyper-parameters' values
// (learning rate, momentum, betas, ...) are an input, the tensor of runtime/format/host_contract.h's
// slots the host writes per update (docs/training.md, "Hyper-parameters at run time").
struct SgdUpdateAttrs {
  bool has_momentum = false;     // a velocity state (momentum ≠ 0 when compiled)
  bool has_dampening = false;    // with momentum: a step count, so the first step is undampened (torch)
  bool has_weight_decay = false; // with any of dampening, Nesterov or weight decay: the Sgd codelet
  bool nesterov = false;
  float gradient_scale = 1.0f; // the gradient is multiplied by this first
  bool clear_gradient = false; // the gradient is an accumulator, zeroed after use
};

// Unary: y = f(x; alpha, beta) (format::UnaryKind says which parameters a kind reads).
struct UnaryAttrs {
  format::UnaryKind kind = format::UnaryKind::kIdentity;
  float alpha = 0.0f;
  float beta = 0.0f;
};

struct BinaryAttrs {
  format::BinaryKind kind = format::BinaryKind::kAdd;
};

// StridedCopy: output index i reads input element offset + Σ i[k]·strides[k] if i lies in the box
// [lower, upper) (no box: every index), else `fill`.
struct StridedCopyAttrs {
  std::vector<int64_t> shape;   // output shape
  std::vector<int64_t> strides; // input stride per output axis
  int64_t offset = 0;           // input element of output index 0
  std::vector<int64_t> lower, upper;
  float fill = 0.0f;
};

// Concat and Gather: the axis (non-negative).
struct AxisAttrs {
  int64_t axis = 0;
};

// GatherGrad: Gather's axis and its data's shape, the shape of dX.
struct GatherGradAttrs {
  int64_t axis = 0;
  std::vector<int64_t> data_shape;
};

// Reduce over `axes` (ascending).
struct ReduceAttrs {
  format::ReduceKind kind = format::ReduceKind::kSum;
  std::vector<int64_t> axes;
  bool keep_dims = false;
};

// AxisSoftmax.
struct SoftmaxAttrs {
  format::SoftmaxKind kind = format::SoftmaxKind::kSoftmax;
};

// The window of a convolution or pooling op over the two spatial axes of an NCHW value (1-D
// models use H = 1). Pads are top, left, bottom, right. MaxPool and AveragePool carry just this.
struct WindowAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t group = 1;              // Conv: channel groups
  bool ceil_mode = false;         // pooling: output size rounds up
  bool count_include_pad = false; // AveragePool: padded positions count in the divisor
};

struct ConvAttrs {
  WindowAttrs window;
  bool fused_relu = false; // applies Relu to the output (passes/fuse_epilogues.h)
};

// ConvGradInput, MaxPoolGrad, AveragePoolGrad (the shape of dX) and ConvGradWeight (of dW): the
// forward op's window and the shape of the gradient made, which dY alone does not determine.
struct WindowGradAttrs {
  WindowAttrs window;
  std::vector<int64_t> shape;
};

// BatchNorm, its gradients and LayerNorm.
struct NormAttrs {
  float epsilon = 0.0f;
};

// BatchStatistics and RunningStatistics: ONNX's momentum (running = running·momentum + batch·(1 −
// momentum)), which the running statistics' update applies.
struct BatchStatisticsAttrs {
  float momentum = 0.9f;
};

// NllLoss: how the per-position losses combine, and the target value that contributes nothing.
struct NllLossAttrs {
  format::LossReduction reduction = format::LossReduction::kNone;
  std::optional<int64_t> ignore_index;
};

// Adam (decoupled_weight_decay false: the decay is added to the gradient) or AdamW (true).
struct AdamUpdateAttrs {
  bool decoupled_weight_decay = false;
  float gradient_scale = 1.0f; // the gradient is multiplied by this first
  bool clear_gradient = false; // the gradient is an accumulator, zeroed after use
};

// RMSProp (torch.optim.RMSprop; Keras's rho is torch's alpha).
struct RmsPropUpdateAttrs {
  bool has_momentum = false; // a momentum buffer (momentum ≠ 0 when compiled)
  bool centered = false;
  float gradient_scale = 1.0f; // the gradient is multiplied by this first
  bool clear_gradient = false; // the gradient is an accumulator, zeroed after use
};

// Adagrad (torch.optim.Adagrad without lr_decay) or AdaMax (torch.optim.Adamax; beta_1, beta_2).
struct AdaptiveUpdateAttrs {
  float gradient_scale = 1.0f; // the gradient is multiplied by this first
  bool clear_gradient = false; // the gradient is an accumulator, zeroed after use
};

// SquaredNorm: Σ (scale·x)² over all its inputs; `scale` is the update's gradient_scale (the mean
// over micro-batches), so the norm is the norm of the gradients the optimizer applies.
struct SquaredNormAttrs {
  float scale = 1.0f;
};

// ClipFactor: min(1, clip_norm / (sqrt(Σ squared norms) + 1e-6)) (Keras's global_clipnorm).
struct ClipFactorAttrs {
  float clip_norm = 0.0f;
};

// LossScaleFactor: the static loss scale the hyper-parameters hold (or, given the dynamic
// state instead, its scale), or its reciprocal.
struct LossScaleFactorAttrs {
  bool reciprocal = false;
};

// LossScaleUpdate: Keras's dynamic_growth_steps, finite updates before the scale doubles.
struct LossScaleUpdateAttrs {
  int64_t growth_steps = 2000;
};

// LambMoments (the moments and the update direction u) and LambApply (W −= lr·trust ratio·u):
// as the other updates, their hyper-parameters are an input (the tensor the host writes).
struct LambAttrs {
  float gradient_scale = 1.0f; // the gradient is multiplied by this first
  bool clear_gradient = false; // the gradient is an accumulator, zeroed after use
};

// NllLossGrad: its loss's attributes and the shape of dX, [N, C, D].
struct NllLossGradAttrs {
  NllLossAttrs loss;
  std::vector<int64_t> dx_shape;
};

using OpAttrs =
    std::variant<NoAttrs, MatMulAttrs, ReshapeAttrs, CrossEntropyAttrs, ActivationGradAttrs, SgdUpdateAttrs,
                 AdamUpdateAttrs, RmsPropUpdateAttrs, AdaptiveUpdateAttrs, UnaryAttrs, BinaryAttrs,
                 StridedCopyAttrs, AxisAttrs, GatherGradAttrs, ReduceAttrs, SoftmaxAttrs, WindowAttrs,
                 ConvAttrs, WindowGradAttrs, NormAttrs, NllLossAttrs, NllLossGradAttrs, SquaredNormAttrs,
                 ClipFactorAttrs, LambAttrs, DenseLossAttrs, MetricAttrs, LossScaleFactorAttrs,
                 LossScaleUpdateAttrs, BatchStatisticsAttrs>;

// The index of family T in OpAttrs (a compile error if T is not one).
template <class T, class V = OpAttrs> struct AttrsIndex;
template <class T, class... Ts> struct AttrsIndex<T, std::variant<Ts...>> {
  static_assert((std::is_same_v<T, Ts> || ...), "not an op attribute family");
  static constexpr size_t value = [] {
    size_t i = 0;
    (void)((std::is_same_v<T, Ts> ? true : (++i, false)) || ...);
    return i;
  }();
};
template <class T> inline constexpr size_t kAttrsIndex = AttrsIndex<T>::value;

} // namespace ipu::ir
