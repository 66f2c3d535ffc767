// The per-channel codelets over [N, C, S] tensors that batch normalization lowers to: the sum over
// samples and positions of each channel (a bias's or shift's gradient) and the affine map of an
// inference BatchNormalization folded at compile time. Params: runtime/format/codelet_params.def.
#include "runtime/kernels/channel_runs.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// ChannelSum: y[c] = sum over n and s of X[n, c, s] for channels [c_begin, c_end) (the gradient
// of a per-channel bias or shift). With the optional tail it sums samples [n_begin, n_end) only,
// into y[part·C + c] of a [parts, C] operand, which a Reduce then adds up.
//   operands: X [N,C,S], y [C] (with the tail [parts, C])
//   params:   format::params::ChannelSum
void run_channel_sum(const PreparedVertex& v) {
  using P = format::params::ChannelSum;
  const int64_t N = v.params[P::kN], C = v.params[P::kC], S = v.params[P::kS];
  const bool has_share = v.num_params > P::kPart;
  const int64_t n_begin = has_share ? v.params[P::kNBegin] : 0, n_end = has_share ? v.params[P::kNEnd] : N;
  const float* x = v.f32(0);
  float* y = v.f32(1) + (has_share ? v.params[P::kPart] * C : 0);
  for (int64_t c = v.params[P::kCBegin]; c < v.params[P::kCEnd]; ++c) {
    double sum = 0;
    for (int64_t n = n_begin; n < n_end; ++n) {
      const float* row = x + (n * C + c) * S;
      for (int64_t i = 0; i < S; ++i)
        sum += row[i];
    }
    y[c] = static_cast<float>(sum);
  }
}

Status validate_channel_sum(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ChannelSum;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  // The share params are optional together: without them the params end at c_end.
  const bool has_share = v.params_size() == P::kCount;
  IPU_RETURN_IF_ERROR(expect_param_count(v, has_share ? P::kCount : P::kNBegin, 0));
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kS)}, ops[0].elements, "X"));
  const int64_t parts = has_share ? v.params(P::kParts) : 1;
  if (parts <= 0 || parts > (int64_t{1} << 16))
    return invalid_argument("parts " + std::to_string(parts) + " outside [1, 2^16]");
  IPU_RETURN_IF_ERROR(expect_elements({parts, v.params(P::kC)}, ops[1].elements, "y"));
  if (has_share) {
    IPU_RETURN_IF_ERROR(expect_range(v.params(P::kNBegin), v.params(P::kNEnd), v.params(P::kN), "sample"));
    if (v.params(P::kPart) < 0 || v.params(P::kPart) >= parts)
      return invalid_argument("part " + std::to_string(v.params(P::kPart)) + " outside [0, parts)");
  }
  if (v.operands(0) == v.operands(1)) return invalid_argument("operands must be distinct tensors");
  return expect_range(v.params(P::kCBegin), v.params(P::kCEnd), v.params(P::kC), "channel");
}

// ChannelAffine: Y[n, c, s] = X[n, c, s] · scale[c] + shift[c] for flat elements [begin, end)
// (an inference BatchNormalization folded at compile time).
//   operands: X [N,C,S], scale [C], shift [C], Y [N,C,S] (Y may be X)
//   params:   format::params::ChannelAffine
void run_channel_affine(const PreparedVertex& v) {
  using P = format::params::ChannelAffine;
  const int64_t C = v.params[P::kC], S = v.params[P::kS];
  const float* x = v.f32(0);
  const float* scale = v.f32(1);
  const float* shift = v.f32(2);
  float* y = v.f32(3);
  for_each_channel_run(v.params[P::kBegin], v.params[P::kEnd], C, S, [&](int64_t c, int64_t lo, int64_t hi) {
    const float s = scale[c], b = shift[c];
    for (int64_t i = lo; i < hi; ++i)
      y[i] = x[i] * s + b;
  });
}

Status validate_channel_affine(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::ChannelAffine;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kS)}, ops[0].elements, "X"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kC)}, ops[1].elements, "scale"));
  IPU_RETURN_IF_ERROR(expect_elements({v.params(P::kC)}, ops[2].elements, "shift"));
  IPU_RETURN_IF_ERROR(
      expect_elements({v.params(P::kN), v.params(P::kC), v.params(P::kS)}, ops[3].elements, "Y"));
  if (v.operands(3) == v.operands(1) || v.operands(3) == v.operands(2))
    return invalid_argument("output aliases a parameter");
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

} // namespace

const KernelDef& channel_sum_kernel() {
  static const KernelDef def{Codelet::kChannelSum,
                             run_channel_sum,
                             validate_channel_sum,
                             {format::params::ChannelSum::kCBegin, format::params::ChannelSum::kCEnd}};
  return def;
}
const KernelDef& channel_affine_kernel() {
  static const KernelDef def{Codelet::kChannelAffine, run_channel_affine, validate_channel_affine,
                             begin_end<format::params::ChannelAffine>()};
  return def;
}

} // namespace ipu::kernels
