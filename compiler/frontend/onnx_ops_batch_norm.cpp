// ONNX converters of BatchNormalization: inference folded into a per-channel affine map (or a
// BatchNorm op reading its parameters at run time), and training mode with batch statistics and
// running statistics.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "compiler/frontend/onnx_ops.h"

namespace ipu::frontend {
namespace {

using ir::OpKind;

// The statistics-mode flag of the node's stage (lowering/statistics_mode.h), made on first use.
int statistics_mode_flag(OnnxImportContext& ctx) {
  ir::Graph& g = ctx.graph();
  for (int v : g.values_with_role(ir::Role::kStatisticsMode)) {
    if (g.value(v).stage == ctx.stage()) return v;
  }
  std::string name = "batch_norm/statistics_mode";
  if (ctx.stage() != 0) name += "@" + std::to_string(ctx.stage());
  const int flag = g.add_value(name, {ir::DType::kFloat32, {1}}, ir::Role::kStatisticsMode);
  g.value(flag).initial = {0.0f};
  g.value(flag).stage = ctx.stage();
  return flag;
}

// BatchNormalization with training_mode 1, or before version 14 with its training-mode outputs
// (docs/onnx.md): Y normalised by the batch's mean and population variance. With input_mean and
// input_var initializers (what torch exports) they are the running statistics, device state that
// train updates once per forward pass with ONNX's momentum and torch's unbiased variance, and
// that evaluate and predict normalise with; the outputs running_mean and running_var then name
// that state. Otherwise (graph inputs) the node is ONNX's function: Y by batch statistics in every
// program, and the outputs momentum·input + (1 − momentum)·batch statistic with the population
// variance, as ONNX's reference computes.
Status convert_batch_norm_training(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> xs = ctx.shape(x);
  if (xs.size() < 2) return invalid_argument("input " + shape_text(xs) + " has no channel axis");
  const float epsilon = ctx.float_attr("epsilon", 1e-5f);
  const float momentum = ctx.float_attr("momentum", 0.9f);
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    return invalid_argument("momentum " + std::to_string(momentum) + " is outside [0, 1]");
  if (!(epsilon >= 0.0f)) return invalid_argument("epsilon " + std::to_string(epsilon) + " is negative");
  const bool running_state =
      ctx.float_initializer_input(3) != nullptr && ctx.float_initializer_input(4) != nullptr;
  std::vector<int> inputs;
  for (int i = 1; i <= 4; ++i) {
    IPU_ASSIGN_OR_RETURN(int value, ctx.input(i));
    if (ctx.shape(value) != std::vector<int64_t>{xs[1]}) {
      return invalid_argument("input " + std::to_string(i) + " " + shape_text(ctx.shape(value)) +
                              " does not match " + std::to_string(xs[1]) + " channels");
    }
    inputs.push_back(value);
  }
  ir::BatchStatisticsAttrs stats_attrs;
  stats_attrs.momentum = momentum;
  std::vector<int> stats_inputs = {x};
  if (running_state) {
    for (int i : {2, 3}) {
      ir::Value& statistic = ctx.graph().value(inputs[static_cast<size_t>(i)]);
      statistic.role = ir::Role::kRunningStatistics;
      statistic.keeps_float32 = true;
      stats_inputs.push_back(statistic.id);
    }
    stats_inputs.push_back(statistics_mode_flag(ctx));
  }
  IPU_ASSIGN_OR_RETURN(int mean,
                       ctx.add_op(OpKind::kBatchStatistics, stats_inputs, stats_attrs, "/statistics"));
  const int var = ctx.graph().op(ctx.graph().value(mean).producer).outputs[1];
  for (int v : {mean, var})
    ctx.graph().value(v).keeps_float32 = true;
  ir::NormAttrs attrs;
  attrs.epsilon = epsilon;
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(OpKind::kBatchNorm, {x, inputs[0], inputs[1], mean, var}, attrs));
  ctx.set_output(0, y);
  // Versions 7 and 9 also output the batch's statistics, saved_mean and saved_var.
  for (int i : {3, 4}) {
    if (i < ctx.node().output_size() && !ctx.node().output(i).empty()) ctx.set_output(i, i == 3 ? mean : var);
  }
  if (running_state) {
    ctx.set_output(1, inputs[2]);
    ctx.set_output(2, inputs[3]);
    return Status();
  }
  // running = input·momentum + batch·(1 − momentum), with Unary's affine map and a Binary add.
  for (int i : {1, 2}) {
    if (i >= ctx.node().output_size() || ctx.node().output(i).empty()) continue;
    ir::UnaryAttrs kept;
    kept.kind = format::UnaryKind::kAffine;
    kept.alpha = momentum;
    ir::UnaryAttrs taken = kept;
    taken.alpha = 1.0f - momentum;
    IPU_ASSIGN_OR_RETURN(int a, ctx.add_op(OpKind::kUnary, {inputs[static_cast<size_t>(i + 1)]}, kept,
                                           "/running_" + std::to_string(i) + "_kept"));
    IPU_ASSIGN_OR_RETURN(int b, ctx.add_op(OpKind::kUnary, {i == 1 ? mean : var}, taken,
                                           "/running_" + std::to_string(i) + "_taken"));
    ir::BinaryAttrs add;
    add.kind = format::BinaryKind::kAdd;
    IPU_ASSIGN_OR_RETURN(int sum, ctx.add_op(OpKind::kBinary, {a, b}, add, "/running_" + std::to_string(i)));
    ctx.set_output(i, sum);
  }
  return Status();
}

// Inference BatchNormalization, Y = (X − mean) / sqrt(var + epsilon) · scale + B per channel.
// With scale, B, mean and var all initializers it is folded at compile time (in double) into
// Y = X · s + t; otherwise the BatchNorm op reads them at run time.
Status convert_batch_norm(OnnxImportContext& ctx) {
  if (ctx.int_attr("training_mode", 0) != 0) {
    if (ctx.int_attr("training_mode", 0) != 1)
      return invalid_argument("training_mode " + std::to_string(ctx.int_attr("training_mode", 0)) +
                              " is not 0 or 1");
    return convert_batch_norm_training(ctx);
  }
  // Versions 6 and 7: `spatial` 1 (the default) is version 9's per-channel statistics; version
  // 6's is_test 0 asks for training-mode statistics.
  if (ctx.int_attr("spatial", 1) != 1)
    return unsupported("BatchNormalization with spatial 0 (per-element statistics) is not supported");
  if (ctx.version() == 6 && ctx.int_attr("is_test", 0) == 0) {
    return unsupported("BatchNormalization-6 with is_test 0 (training-mode statistics) is not supported");
  }
  // Before version 14 the outputs say the mode: training mode writes the running statistics (and
  // the batch's, saved_mean and saved_var), as torch's training export at opset 13 does.
  for (int i = 1; i < ctx.node().output_size(); ++i) {
    if (ctx.node().output(i).empty()) continue;
    if (ctx.version() < 14 && ctx.version() != 6) return convert_batch_norm_training(ctx);
    return unsupported("the running mean and variance outputs of BatchNormalization are not supported");
  }
  if (ctx.training()) {
    return unsupported("BatchNormalization is implemented for inference only (compile with --mode infer)");
  }
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> xs = ctx.shape(x);
  if (xs.size() < 2) return invalid_argument("input " + shape_text(xs) + " has no channel axis");
  const int64_t channels = xs[1];
  const float epsilon = ctx.float_attr("epsilon", 1e-5f);
  const char* names[] = {"scale", "B", "mean", "var"};
  bool foldable = true;
  for (int i = 1; i <= 4; ++i)
    foldable = foldable && ctx.float_initializer_input(i) != nullptr;
  if (!foldable) {
    std::vector<int> inputs = {x};
    for (int i = 1; i <= 4; ++i) {
      IPU_ASSIGN_OR_RETURN(int value, ctx.input(i));
      inputs.push_back(value);
    }
    ir::NormAttrs attrs;
    attrs.epsilon = epsilon;
    IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(OpKind::kBatchNorm, inputs, attrs));
    ctx.set_output(0, y);
    return Status();
  }
  std::vector<std::vector<float>> params;
  for (int i = 1; i <= 4; ++i) {
    const data::NpyArray& array = *ctx.float_initializer_input(i);
    if (array.shape != std::vector<int64_t>{channels}) {
      return invalid_argument(std::string(names[i - 1]) + " " + shape_text(array.shape) + " does not match " +
                              std::to_string(channels) + " channels");
    }
    IPU_ASSIGN_OR_RETURN(std::vector<float> values, data::to_floats(array, names[i - 1]));
    params.push_back(std::move(values));
  }
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (size_t c = 0; c < scale.size(); ++c) {
    const double s =
        params[0][c] / std::sqrt(static_cast<double>(params[3][c]) + static_cast<double>(epsilon));
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(params[1][c] - params[2][c] * s);
  }
  const int s = ctx.add_constant_tensor("/folded_scale", {channels}, std::move(scale));
  const int t = ctx.add_constant_tensor("/folded_shift", {channels}, std::move(shift));
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(OpKind::kChannelAffine, {x, s, t}));
  ctx.set_output(0, y);
  return Status();
}

} // namespace

std::vector<OnnxOpDef> batch_norm_onnx_ops() {
  return {
      // momentum updates the running statistics in training mode (training_mode 1 from version 14;
      // before it, the running-statistics outputs).
      {"BatchNormalization",
       {6, 7, 9, 14, 15},
       {"epsilon", "momentum", "training_mode", "spatial", "is_test"},
       convert_batch_norm},
  };
}

} // namespace ipu::frontend
