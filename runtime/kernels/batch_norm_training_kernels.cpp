// Batch normalization with batch statistics (ONNX BatchNormalization, training_mode 1): the
// per-channel mean and variance of a batch in two steps (partial summaries of blocks, then
// their combination), the running statistics' update, and the gradients. Tensors are viewed as
// [N, C, S] (S: the spatial positions). Statistics are summed in double; a block's variance is
// taken about the block's own mean and blocks are combined with Chan, Golub and LeVeque's
// pairwise update, so no E[x²] − E[x]² cancels.
#include <cmath>

#include "runtime/kernels/channel_runs.h"
#include "runtime/kernels/validate_util.h"

namespace ipu::kernels {
namespace {

using format::FLOAT32;

// The largest number of parts a statistic is split into (a count of whole parts, as ChannelSum's).
constexpr int64_t kMaxParts = int64_t{1} << 16;

float inv_std(float var, float epsilon) {
  return 1.0f / std::sqrt(var + epsilon);
}

// The block of a partial vertex (BatchStatistics and BatchNormGradStats share the layout).
template <typename P> struct Block {
  int64_t N, C, S, n_begin, n_end, s_begin, s_end, part;
  explicit Block(const PreparedVertex& v)
      : N(v.params[P::kN]), C(v.params[P::kC]), S(v.params[P::kS]), n_begin(v.params[P::kNBegin]),
        n_end(v.params[P::kNEnd]), s_begin(v.params[P::kSBegin]), s_end(v.params[P::kSEnd]),
        part(v.params[P::kPart]) {}
  template <typename Fn> void for_each(int64_t c, Fn&& fn) const {
    for (int64_t n = n_begin; n < n_end; ++n) {
      const int64_t row = (n * C + c) * S;
      for (int64_t s = s_begin; s < s_end; ++s)
        fn(row + s);
    }
  }
};

// The checks both partial codelets share: X-shaped operands `full`, per-channel `per_channel`,
// [parts, rows_per_part, C] outputs `partials`, and every range inside its axis.
template <typename P>
Status validate_block(const format::Vertex& v, const std::vector<OperandInfo>& ops,
                      std::initializer_list<size_t> full, std::initializer_list<size_t> per_channel,
                      std::initializer_list<size_t> partials, int64_t rows_per_part) {
  const int64_t N = v.params(P::kN), C = v.params(P::kC), S = v.params(P::kS), parts = v.params(P::kParts);
  for (size_t i : full)
    IPU_RETURN_IF_ERROR(expect_elements({N, C, S}, ops[i].elements, "X"));
  for (size_t i : per_channel)
    IPU_RETURN_IF_ERROR(expect_elements({C}, ops[i].elements, "per-channel operand"));
  if (parts <= 0 || parts > kMaxParts)
    return invalid_argument("parts " + std::to_string(parts) + " outside [1, 2^16]");
  for (size_t i : partials)
    IPU_RETURN_IF_ERROR(expect_elements({parts, rows_per_part, C}, ops[i].elements, "partials"));
  if (v.params(P::kPart) < 0 || v.params(P::kPart) >= parts)
    return invalid_argument("part " + std::to_string(v.params(P::kPart)) + " outside [0, parts)");
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kCBegin), v.params(P::kCEnd), C, "channel"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kNBegin), v.params(P::kNEnd), N, "sample"));
  IPU_RETURN_IF_ERROR(expect_range(v.params(P::kSBegin), v.params(P::kSEnd), S, "spatial"));
  // The outputs are written, never read: they may alias nothing.
  for (size_t out : partials) {
    for (int i = 0; i < v.operands_size(); ++i) {
      if (static_cast<size_t>(i) != out && v.operands(i) == v.operands(static_cast<int>(out)))
        return invalid_argument("an output aliases another operand");
    }
  }
  return Status();
}

// BatchStatistics: for channels [c_begin, c_end), the count, mean and M2 (the sum of squared
// deviations from that mean) of X over samples [n_begin, n_end) and positions [s_begin, s_end),
// into partials[part, 0..2, c].
//   operands: X [N,C,S], partials [parts, 3, C]
//   params:   format::params::BatchStatistics
void run_batch_statistics(const PreparedVertex& v) {
  using P = format::params::BatchStatistics;
  const Block<P> b(v);
  const float* x = v.f32(0);
  float* out = v.f32(1) + b.part * 3 * b.C;
  const double count = static_cast<double>((b.n_end - b.n_begin) * (b.s_end - b.s_begin));
  for (int64_t c = v.params[P::kCBegin]; c < v.params[P::kCEnd]; ++c) {
    double sum = 0;
    b.for_each(c, [&](int64_t i) { sum += x[i]; });
    const double mean = count > 0 ? sum / count : 0.0;
    double m2 = 0;
    b.for_each(c, [&](int64_t i) {
      const double d = x[i] - mean;
      m2 += d * d;
    });
    out[c] = static_cast<float>(count);
    out[b.C + c] = static_cast<float>(mean);
    out[2 * b.C + c] = static_cast<float>(m2);
  }
}

Status validate_batch_statistics(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::BatchStatistics;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  return validate_block<P>(v, ops, {0}, {}, {1}, 3);
}

// BatchStatisticsCombine: mean[c] and the population variance var[c] of channels [c_begin,
// c_end) from the parts' summaries, in part order. With the running statistics and the
// statistics-mode flag as further operands, a flag of 0 (evaluate, predict) copies the running
// mean and variance instead.
//   operands: partials [parts, 3, C], mean [C], var [C] (, running_mean [C], running_var [C], flag [1])
//   params:   format::params::BatchStatisticsCombine
void run_batch_statistics_combine(const PreparedVertex& v) {
  using P = format::params::BatchStatisticsCombine;
  const int64_t C = v.params[P::kC], parts = v.params[P::kParts];
  const float* partials = v.f32(0);
  float *mean = v.f32(1), *var = v.f32(2);
  const bool running = v.num_operands == 6 && v.f32(5)[0] == 0.0f;
  for (int64_t c = v.params[P::kCBegin]; c < v.params[P::kCEnd]; ++c) {
    if (running) {
      mean[c] = v.f32(3)[c];
      var[c] = v.f32(4)[c];
      continue;
    }
    double n = 0, m = 0, m2 = 0;
    for (int64_t p = 0; p < parts; ++p) {
      const float* part = partials + p * 3 * C;
      const double nb = part[c];
      if (nb == 0) continue;
      const double delta = part[C + c] - m, total = n + nb;
      m += delta * nb / total;
      m2 += part[2 * C + c] + delta * delta * n * nb / total;
      n = total;
    }
    mean[c] = static_cast<float>(m);
    var[c] = static_cast<float>(n > 0 ? m2 / n : 0.0);
  }
}

Status validate_batch_statistics_combine(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::BatchStatisticsCombine;
  const bool running = ops.size() == 6;
  IPU_RETURN_IF_ERROR(running
                          ? expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32})
                          : expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, 0));
  const int64_t C = v.params(P::kC), parts = v.params(P::kParts);
  if (parts <= 0 || parts > kMaxParts)
    return invalid_argument("parts " + std::to_string(parts) + " outside [1, 2^16]");
  IPU_RETURN_IF_ERROR(expect_elements({parts, 3, C}, ops[0].elements, "partials"));
  for (size_t i = 1; i < ops.size(); ++i) {
    if (i == 5) {
      if (ops[i].elements != 1) return invalid_argument("the statistics-mode flag must be one element");
      continue;
    }
    IPU_RETURN_IF_ERROR(expect_elements({C}, ops[i].elements, "per-channel operand"));
  }
  for (int out : {1, 2}) {
    for (int i = 0; i < v.operands_size(); ++i) {
      if (i != out && v.operands(i) == v.operands(out))
        return invalid_argument("an output aliases another operand");
    }
  }
  return expect_range(v.params(P::kCBegin), v.params(P::kCEnd), C, "channel");
}

// BatchNormGradStats: for channels [c_begin, c_end) and the block, Σ dY·x̂ (x̂ = (X − mean[c]) /
// sqrt(var[c] + epsilon), the gradient of the scale) into dscale[part, c] and Σ dY (of the bias)
// into dbias[part, c].
//   operands: X [N,C,S], dY [N,C,S], mean [C], var [C], dscale [parts, C], dbias [parts, C]
//   params:   format::params::BatchNormGradStats;  fparams: format::fparams::BatchNormGradStats
void run_batch_norm_grad_stats(const PreparedVertex& v) {
  using P = format::params::BatchNormGradStats;
  const Block<P> b(v);
  const float epsilon = v.fparams[format::fparams::BatchNormGradStats::kEpsilon];
  const float *x = v.f32(0), *dy = v.f32(1), *mean = v.f32(2), *var = v.f32(3);
  float* dscale = v.f32(4) + b.part * b.C;
  float* dbias = v.f32(5) + b.part * b.C;
  for (int64_t c = v.params[P::kCBegin]; c < v.params[P::kCEnd]; ++c) {
    double weighted = 0, plain = 0;
    b.for_each(c, [&](int64_t i) {
      weighted += static_cast<double>(dy[i]) * (x[i] - mean[c]);
      plain += dy[i];
    });
    dscale[c] = static_cast<float>(weighted * inv_std(var[c], epsilon));
    dbias[c] = static_cast<float>(plain);
  }
}

Status validate_batch_norm_grad_stats(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::BatchNormGradStats;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::BatchNormGradStats::kCount));
  return validate_block<P>(v, ops, {0, 1}, {2, 3}, {4, 5}, 1);
}

// BatchNormTrainGradInput: the input gradient of a normalization by batch statistics for flat
// elements [begin, end): dX = scale[c]·istd·(dY − dbias[c]/M − x̂·dscale[c]/M), with istd =
// 1/sqrt(var[c] + epsilon), x̂ = (X − mean[c])·istd and M = N·S the elements per channel.
//   operands: X, dY [N,C,S], scale, mean, var, dscale, dbias [C], dX [N,C,S]
//   params:   format::params::BatchNormTrainGradInput;  fparams: ...BatchNormTrainGradInput
void run_batch_norm_train_grad_input(const PreparedVertex& v) {
  using P = format::params::BatchNormTrainGradInput;
  const int64_t N = v.params[P::kN], C = v.params[P::kC], S = v.params[P::kS];
  const float epsilon = v.fparams[format::fparams::BatchNormTrainGradInput::kEpsilon];
  const float *x = v.f32(0), *dy = v.f32(1), *scale = v.f32(2), *mean = v.f32(3), *var = v.f32(4),
              *dscale = v.f32(5), *dbias = v.f32(6);
  float* dx = v.f32(7);
  const double M = static_cast<double>(N * S);
  for_each_channel_run(v.params[P::kBegin], v.params[P::kEnd], C, S, [&](int64_t c, int64_t lo, int64_t hi) {
    // The per-element expression as it was, its per-channel parts taken once.
    const double istd = inv_std(var[c], epsilon), scaled = scale[c] * istd, bias_share = dbias[c] / M;
    const float m = mean[c], ds = dscale[c];
    for (int64_t i = lo; i < hi; ++i) {
      const double x_hat = (x[i] - m) * istd;
      dx[i] = static_cast<float>(scaled * (dy[i] - bias_share - x_hat * ds / M));
    }
  });
}

Status validate_batch_norm_train_grad_input(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::BatchNormTrainGradInput;
  IPU_RETURN_IF_ERROR(
      expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::BatchNormTrainGradInput::kCount));
  const int64_t N = v.params(P::kN), C = v.params(P::kC), S = v.params(P::kS);
  for (size_t i : {0, 1, 7})
    IPU_RETURN_IF_ERROR(expect_elements({N, C, S}, ops[i].elements, "tensor operand"));
  for (size_t i = 2; i < 7; ++i)
    IPU_RETURN_IF_ERROR(expect_elements({C}, ops[i].elements, "per-channel operand"));
  for (int i = 0; i < 7; ++i) {
    if (v.operands(i) == v.operands(7)) return invalid_argument("output aliases an input");
  }
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), static_cast<int64_t>(ops[0].elements),
                      "element");
}

// RunningStatistics: for channels [begin, end), in place, running_mean = running_mean·momentum +
// mean·(1 − momentum) and running_var = running_var·momentum + var·count/(count − 1)·(1 −
// momentum): ONNX's momentum, torch's unbiased variance (docs/onnx.md, "BatchNormalization").
//   operands: running_mean [C], running_var [C], mean [C], var [C] (the batch's, population)
//   params:   format::params::RunningStatistics;  fparams: format::fparams::RunningStatistics
void run_running_statistics(const PreparedVertex& v) {
  using P = format::params::RunningStatistics;
  const double momentum = v.fparams[format::fparams::RunningStatistics::kMomentum];
  const auto count = static_cast<double>(v.params[P::kElements]);
  float *running_mean = v.f32(0), *running_var = v.f32(1);
  const float *mean = v.f32(2), *var = v.f32(3);
  for (int64_t c = v.params[P::kBegin]; c < v.params[P::kEnd]; ++c) {
    running_mean[c] = static_cast<float>(running_mean[c] * momentum + mean[c] * (1.0 - momentum));
    running_var[c] =
        static_cast<float>(running_var[c] * momentum + var[c] * count / (count - 1.0) * (1.0 - momentum));
  }
}

Status validate_running_statistics(const format::Vertex& v, const std::vector<OperandInfo>& ops) {
  using P = format::params::RunningStatistics;
  IPU_RETURN_IF_ERROR(expect_operands(v, ops, {FLOAT32, FLOAT32, FLOAT32, FLOAT32}));
  IPU_RETURN_IF_ERROR(expect_param_count(v, P::kCount, format::fparams::RunningStatistics::kCount));
  const int64_t C = v.params(P::kC);
  for (size_t i = 0; i < 4; ++i)
    IPU_RETURN_IF_ERROR(expect_elements({C}, ops[i].elements, "per-channel operand"));
  if (v.params(P::kElements) < 2)
    return invalid_argument("elements " + std::to_string(v.params(P::kElements)) + " must be at least 2");
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) {
      if (v.operands(i) == v.operands(j)) return invalid_argument("operands must be distinct tensors");
    }
  }
  return expect_range(v.params(P::kBegin), v.params(P::kEnd), C, "channel");
}

} // namespace

const KernelDef& batch_statistics_kernel() {
  static const KernelDef def{Codelet::kBatchStatistics, run_batch_statistics, validate_batch_statistics, {}};
  return def;
}
const KernelDef& batch_statistics_combine_kernel() {
  using P = format::params::BatchStatisticsCombine;
  static const KernelDef def{Codelet::kBatchStatisticsCombine,
                             run_batch_statistics_combine,
                             validate_batch_statistics_combine,
                             {P::kCBegin, P::kCEnd}};
  return def;
}
const KernelDef& batch_norm_grad_stats_kernel() {
  static const KernelDef def{
      Codelet::kBatchNormGradStats, run_batch_norm_grad_stats, validate_batch_norm_grad_stats, {}};
  return def;
}
const KernelDef& batch_norm_train_grad_input_kernel() {
  static const KernelDef def{Codelet::kBatchNormTrainGradInput, run_batch_norm_train_grad_input,
                             validate_batch_norm_train_grad_input,
                             begin_end<format::params::BatchNormTrainGradInput>()};
  return def;
}
const KernelDef& running_statistics_kernel() {
  static const KernelDef def{Codelet::kRunningStatistics, run_running_statistics, validate_running_statistics,
                             begin_end<format::params::RunningStatistics>()};
  return def;
}

} // namespace ipu::kernels
