#include "compiler/driver/compile_internal.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "compiler/passes/optimizer_arguments.h"
#include "runtime/format/hyper_parameters.h"

namespace ipu::compiler {
namespace {

// An optimizer argument's flag as the options hold it: a number or a switch, when given.
struct GivenArgument {
  const passes::OptimizerArgument& argument;
  std::optional<float> number;
  std::optional<bool> toggle;
  bool given() const { return number || toggle; }
};

// In passes::optimizer_arguments' order, so a refusal names the first flag the flags list.
std::vector<GivenArgument> given_arguments(const CompileOptions& o) {
  const format::GivenOptimizerArguments& flags = o.optimizer_arguments;
  std::vector<GivenArgument> given;
  for (const passes::OptimizerArgument& argument : passes::optimizer_arguments()) {
    GivenArgument one{argument, {}, {}};
    if (const auto number = flags.numbers.find(argument.key); number != flags.numbers.end())
      one.number = number->second;
    if (const auto toggle = flags.switches.find(argument.key); toggle != flags.switches.end())
      one.toggle = toggle->second;
    given.push_back(one);
  }
  return given;
}

} // namespace

Status validate_options(const CompileOptions& o) {
  if (o.batch_size == 0 || o.batch_size > (1u << 20))
    return bad_option("--batch-size must be in [1, 1048576]");
  if (o.steps_per_execution == 0 || o.steps_per_execution > (1u << 24)) {
    return bad_option("--steps-per-execution must be in [1, 16777216]");
  }
  if (o.pipeline_stages > 1024) return bad_option("--pipeline-stages must be in [1, 1024]");
  if (!o.stage_starts.empty() && !o.stage_assignment.empty())
    return bad_option("--stage-starts and --stage-assignment both give the stages: give one");
  if (o.gradient_accumulation == 0 || o.replicas == 0) {
    return bad_option("--gradient-accumulation and --replicas must be at least 1");
  }
  if (o.steps_per_execution % o.gradient_accumulation != 0) {
    return bad_option("--steps-per-execution " + std::to_string(o.steps_per_execution) +
                      " is not a multiple of --gradient-accumulation " +
                      std::to_string(o.gradient_accumulation) + ": an execution must end on a weight update");
  }
  if (o.precision == lowering::Precision::kMixed && o.mode == Mode::kInfer) {
    return bad_option(
        "--precision mixed keeps fp32 master weights for training's updates, which --mode infer "
        "has none of; predict and evaluate in fp16 with --precision fp16");
  }
  if (o.mode == Mode::kInfer && o.gradient_accumulation > 1) {
    return bad_option("--gradient-accumulation applies to training only (--mode infer)");
  }
  std::vector<std::string> pass_names;
  for (const GraphPassInfo& info : graph_passes())
    pass_names.emplace_back(info.name);
  for (const std::string& pass : o.dump_ir_after) {
    if (pass != "all" && std::find(pass_names.begin(), pass_names.end(), pass) == pass_names.end()) {
      return bad_option("--dump-ir-after: no graph pass is named '" + pass +
                        "'; the passes, in order: " + quoted_names(pass_names) + " (or all)");
    }
  }
  if (o.metrics) {
    const auto metrics = passes::parse_metric_list(*o.metrics);
    if (!metrics.ok()) return bad_option("--metrics: " + metrics.status().message());
  }
  if (o.learning_rate && !(*o.learning_rate > 0)) return bad_option("--learning-rate must be positive");
  for (const GivenArgument& given : given_arguments(o)) {
    if (given.number && !given.argument.range.contains(*given.number))
      return bad_option(std::string(given.argument.flag) + " must be " + given.argument.range.text);
  }
  if (o.global_clipnorm && !(*o.global_clipnorm >= 0 && std::isfinite(*o.global_clipnorm)))
    return bad_option("--global-clipnorm must be non-negative (0: no clipping)");
  if (o.learning_rate_schedule) {
    StatusOr<format::LearningRateSchedule> schedule =
        format::parse_learning_rate_schedule(*o.learning_rate_schedule);
    if (!schedule.ok()) return bad_option("--lr-schedule: " + schedule.status().message());
  }
  if (o.loss_scale && !(*o.loss_scale > 0 && std::isfinite(*o.loss_scale)))
    return bad_option("--loss-scale must be a positive number that float32 holds");
  if (!(o.available_memory_proportion > 0 && o.available_memory_proportion <= 1)) {
    return bad_option("--available-memory-proportion must be in (0, 1], got " +
                      double_key(o.available_memory_proportion));
  }
  if (!o.recompute_checkpoints.empty() && !o.recompute)
    return bad_option("--recompute-checkpoints names the checkpoints of --recompute: give --recompute");
  if (o.loss_scale_growth_steps &&
      !(*o.loss_scale_growth_steps >= 1 && *o.loss_scale_growth_steps <= format::kMaxLossScaleGrowthSteps))
    return bad_option("--loss-scale-growth-steps must be in [1, 2^24], got " +
                      std::to_string(*o.loss_scale_growth_steps));
  return Status();
}

std::string quoted_names(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

StatusOr<std::string> graph_loss_output(const frontend::LoadedModel& loaded, const CompileOptions& options) {
  if (options.loss_output) {
    if (!loaded.is_onnx())
      return bad_option(options.model_path + ": --loss-output applies to ONNX models only");
    if (options.loss) return bad_option("--loss and --loss-output both name the loss to train on: give one");
    return *options.loss_output;
  }
  const std::vector<frontend::LoadedModel::LossOutput> losses = loaded.loss_outputs();
  if (losses.empty()) return std::string();
  std::vector<std::string> names;
  names.reserve(losses.size());
  for (const auto& loss : losses)
    names.push_back(loss.output);
  if (options.loss) {
    return bad_option(options.model_path + ": the graph computes its loss (" + quoted_names(names) +
                      ") and trains on it: drop --loss, or name another output with --loss-output");
  }
  if (losses.size() > 1) {
    return bad_option(options.model_path + ": the graph computes several losses (" + quoted_names(names) +
                      "): name the one to train on with --loss-output");
  }
  return losses[0].output;
}

StatusOr<passes::OptimizerConfig> with_overrides(passes::OptimizerConfig optimizer,
                                                 const CompileOptions& options) {
  if (options.optimizer && *options.optimizer != optimizer.kind)
    optimizer = passes::default_optimizer(*options.optimizer);
  const std::vector<GivenArgument> given_flags = given_arguments(options);
  for (const GivenArgument& given : given_flags) {
    if (!given.given() || given.argument.takes(optimizer.kind)) continue;
    return bad_option(std::string(given.argument.flag) + " applies to " + given.argument.kinds_text() +
                      ", not " + passes::optimizer_name(optimizer.kind));
  }
  if (options.learning_rate) {
    optimizer.learning_rate = *options.learning_rate;
    optimizer.learning_rate_schedule.clear(); // a rate given alone is constant
  }
  if (options.learning_rate_schedule) {
    StatusOr<format::LearningRateSchedule> schedule =
        format::parse_learning_rate_schedule(*options.learning_rate_schedule);
    if (!schedule.ok()) return bad_option("--lr-schedule: " + schedule.status().message());
    if (schedule->initial_learning_rate)
      optimizer.learning_rate = static_cast<float>(*schedule->initial_learning_rate);
    optimizer.learning_rate_schedule = format::learning_rate_schedule_text(*schedule);
  }
  for (const GivenArgument& given : given_flags) {
    if (given.number) optimizer.*given.argument.number = *given.number;
    if (given.toggle) optimizer.*given.argument.toggle = *given.toggle;
  }
  if (options.global_clipnorm) optimizer.global_clipnorm = *options.global_clipnorm;
  // fp16 gradients underflow unscaled: training in fp16 or mixed scales the loss dynamically from
  // 2^15 unless --loss-scaling says otherwise, as Keras's mixed_float16 policy wraps fit's optimizer
  // in a (dynamic) LossScaleOptimizer (docs/training.md, "Precision").
  if (options.precision != lowering::Precision::kFp32 && options.mode == Mode::kTrain &&
      !options.loss_scaling && optimizer.loss_scaling.mode == passes::LossScalingMode::kNone) {
    optimizer.loss_scaling.mode = passes::LossScalingMode::kDynamic;
  }
  if (options.loss_scaling) optimizer.loss_scaling.mode = *options.loss_scaling;
  if (options.loss_scale_growth_steps) {
    if (optimizer.loss_scaling.mode != passes::LossScalingMode::kDynamic)
      return bad_option(
          "--loss-scale-growth-steps needs dynamic loss scaling: give --loss-scaling dynamic (or a "
          "spec whose LossScaleOptimizer is dynamic)");
    optimizer.loss_scaling.growth_steps = *options.loss_scale_growth_steps;
  }
  if (options.loss_scale) {
    if (optimizer.loss_scaling.mode == passes::LossScalingMode::kNone)
      return bad_option(
          "--loss-scale needs loss scaling: give --loss-scaling static or dynamic (or a spec whose "
          "optimizer is a LossScaleOptimizer)");
    optimizer.loss_scaling.initial_scale = *options.loss_scale;
  }
  if (optimizer.nesterov && (optimizer.momentum == 0.0f || optimizer.dampening != 0.0f)) {
    return bad_option("--nesterov needs a momentum and no dampening (as torch.optim.SGD), got momentum " +
                      float_key(optimizer.momentum) + ", dampening " + float_key(optimizer.dampening));
  }
  return optimizer;
}

CompileOptions with_model_defaults(const frontend::LoadedModel& model, CompileOptions options) {
  if (!options.stage_starts.empty() && options.stage_assignment.empty()) {
    // An error leaves the names in place for compile_model to report.
    StatusOr<std::vector<int>> assignment = stage_assignment_from_starts(model, options.stage_starts);
    if (assignment.ok()) {
      options.stage_assignment = std::move(*assignment);
      options.stage_starts.clear();
    }
  }
  if (options.gradient_accumulation == 0) {
    const bool fills_pipeline =
        options.mode == Mode::kTrain && options.schedule != lowering::Schedule::kSequential;
    const auto stages = options.pipeline_stages > 0
                            ? options.pipeline_stages
                            : static_cast<uint32_t>(model.stage_count(options.stage_assignment));
    options.gradient_accumulation = fills_pipeline ? stages : 1;
  }
  if (options.steps_per_execution == 0) options.steps_per_execution = options.gradient_accumulation;
  return options;
}

} // namespace ipu::compiler
