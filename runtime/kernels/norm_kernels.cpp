// Inference BatchNormalization with its statistics as operands (and its gradients), and the
// NCHW <-> NHWC layout change of Keras-style channels-last models. Tensors are viewed as
// [N, C, S] (S: the spatial positions) or, channels last, [N, S, C].
#include <cmath>

#include "runtime/kernels/channel_runs.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

using format::params::BatchNorm;
using format::params::BatchNormGradInput;
using format::params::BatchNormGradScale;
using format::params::ChannelsLayout;

// The BatchNorm codelets (layout P, fparams F): `full` operands hold N·C·S elements, `per_channel`
// ones C; the work range `range` is over channels or flat elements.
template <typename P, typename F>
Status validate_ncs(const format::Vertex& v, const std::vector<OperandInfo>& ops,
                    std::initializer_list<size_t> full, std::initializer_list<size_t> per_channel,
                    WorkRange range, bool channel_range) {
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, F::kCount));
  const int64_t N = v.params(P::kN), C = v.params(P::kC), S = v.params(P::kS);
  for (size_t i : full)
    IPU_RETURN_IF_ERROR(expect_elements({N, C, S}, ops[i].elements, "tensor operand"));
  for (size_t i : per_channel)
    IPU_RETURN_IF_ERROR(expect_elements({C}, ops[i].elements, "per-channel operand"));
  // The output (last operand) must not alias any input.
  for (int i = 0; i + 1 < v.operands_size(); ++i) {
    if (v.operands(i) == v.operands(v.operands_size() - 1))
      return invalid_argument("output aliases an input");
  }
  if (channel_range) return expect_range(v.params(range.begin), v.params(range.end), C, "channel");
  return expect_range(v.params(range.begin), v.params(range.end), static_cast<int64_t>(ops[0].elements),
                      "element");
}

float inv_std(const float* var, int64_t c, float epsilon) {
  return 1.0f / std::sqrt(var[c] + epsilon);
}

// BatchNorm: Y = (X − mean[c]) / sqrt(var[c] + epsilon) · scale[c] + B[c] for flat elements
// [begin, end).
//   operands: X [N,C,S], scale [C], B [C], mean [C], var [C], Y [N,C,S]
//   params:   format::params::BatchNorm;  fparams: format::fparams::BatchNorm
void run_batch_norm(const PreparedVertex& v) {
  using P = BatchNorm;
  const int64_t C = v.params[P::kC], S = v.params[P::kS];
  const float epsilon = v.fparams[format::fparams::BatchNorm::kEpsilon];
  const float *x = v.f32(0), *scale = v.f32(1), *bias = v.f32(2), *mean = v.f32(3), *var = v.f32(4);
  float* y = v.f32(5);
  for_each_channel_run(v.params[P::kBegin], v.params[P::kEnd], C, S, [&](int64_t c, int64_t lo, int64_t hi) {
    const float istd = inv_std(var, c, epsilon), m = mean[c], s = scale[c], b = bias[c];
    for (int64_t i = lo; i < hi; ++i)
      y[i] = (x[i] - m) * istd * s + b;
  });
}

Status validate_batch_norm(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  return validate_ncs<BatchNorm, format::fparams::BatchNorm>(v, ops, {0, 5}, {1, 2, 3, 4},
                                                             begin_end<BatchNorm>(), false);
}

// BatchNormGradInput: dX = dY · scale[c] / sqrt(var[c] + epsilon) for flat elements [begin, end).
//   operands: dY [N,C,S], scale [C], var [C], dX [N,C,S]
//   params:   format::params::BatchNormGradInput;  fparams: format::fparams::BatchNormGradInput
void run_batch_norm_grad_input(const PreparedVertex& v) {
  using P = BatchNormGradInput;
  const int64_t C = v.params[P::kC], S = v.params[P::kS];
  const float epsilon = v.fparams[format::fparams::BatchNormGradInput::kEpsilon];
  const float *dy = v.f32(0), *scale = v.f32(1), *var = v.f32(2);
  float* dx = v.f32(3);
  for_each_channel_run(v.params[P::kBegin], v.params[P::kEnd], C, S, [&](int64_t c, int64_t lo, int64_t hi) {
    const float s = scale[c], istd = inv_std(var, c, epsilon);
    for (int64_t i = lo; i < hi; ++i)
      dx[i] = dy[i] * s * istd;
  });
}

Status validate_batch_norm_grad_input(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  return validate_ncs<BatchNormGradInput, format::fparams::BatchNormGradInput>(
      v, ops, {0, 3}, {1, 2}, begin_end<BatchNormGradInput>(), false);
}

// BatchNormGradScale: dscale[c] = Σ over n, s of dY · (X − mean[c]) / sqrt(var[c] + epsilon) for
// channels [c_begin, c_end).
//   operands: X [N,C,S], dY [N,C,S], mean [C], var [C], dscale [C]
//   params:   format::params::BatchNormGradScale;  fparams: format::fparams::BatchNormGradScale
void run_batch_norm_grad_scale(const PreparedVertex& v) {
  using P = BatchNormGradScale;
  const int64_t N = v.params[P::kN], C = v.params[P::kC], S = v.params[P::kS];
  const float *x = v.f32(0), *dy = v.f32(1), *mean = v.f32(2), *var = v.f32(3);
  for (int64_t c = v.params[P::kCBegin]; c < v.params[P::kCEnd]; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t row = (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s)
        sum += static_cast<double>(dy[row + s]) * (x[row + s] - mean[c]);
    }
    v.f32(4)[c] =
        static_cast<float>(sum) * inv_std(var, c, v.fparams[format::fparams::BatchNormGradScale::kEpsilon]);
  }
}

Status validate_batch_norm_grad_scale(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  return validate_ncs<BatchNormGradScale, format::fparams::BatchNormGradScale>(
      v, ops, {0, 1}, {2, 3, 4}, {BatchNormGradScale::kCBegin, BatchNormGradScale::kCEnd}, true);
}

// ChannelsLayout: Y = X moved between [N, C, S] and [N, S, C] (to_channels_last: from the first to
// the second), for flat output elements [begin, end).
//   operands: X, Y (N·C·S elements each, distinct)
//   params:   format::params::ChannelsLayout
void run_channels_layout(const PreparedVertex& v) {
  using P = ChannelsLayout;
  const int64_t C = v.params[P::kC], S = v.params[P::kS];
  const bool to_last = v.params[P::kToChannelsLast] != 0;
  const float* x = v.f32(0);
  float* y = v.f32(1);
  for (int64_t i = v.params[P::kBegin]; i < v.params[P::kEnd]; ++i) {
    const int64_t sample = i / (C * S), rest = i % (C * S);
    // Output index i is (n, s, c) channels last, else (n, c, s).
    const int64_t c = to_last ? rest % C : rest / S, s = to_last ? rest / C : rest % S;
    y[i] = x[sample * C * S + (to_last ? c * S + s : s * C + c)];
  }
}

Status validate_channels_layout(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  using P = ChannelsLayout;
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kS)}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kS)}, ops[1].elements, "Y"));
  if (v.operands(0) == v.operands(1)) return invalid_argument("output aliases the input");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& batch_norm_kernel() {
  static const KernelDef def{Codelet::kBatchNorm, run_batch_norm, validate_batch_norm,
                             begin_end<BatchNorm>()};
  return def;
}
const KernelDef& batch_norm_grad_input_kernel() {
  static const KernelDef def{Codelet::kBatchNormGradInput, run_batch_norm_grad_input,
                             validate_batch_norm_grad_input, begin_end<BatchNormGradInput>()};
  return def;
}
const KernelDef& batch_norm_grad_scale_kernel() {
  static const KernelDef def{Codelet::kBatchNormGradScale,
                             run_batch_norm_grad_scale,
                             validate_batch_norm_grad_scale,
                             {BatchNormGradScale::kCBegin, BatchNormGradScale::kCEnd}};
  return def;
}
const KernelDef& channels_layout_kernel() {
  static const KernelDef def{Codelet::kChannelsLayout, run_channels_layout, validate_channels_layout,
                             begin_end<ChannelsLayout>()};
  return def;
}

} // namespace ipu::kernels
