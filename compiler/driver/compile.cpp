#include "compiler/driver/compile.h"
#include "compiler/driver/evaluate_constants.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>
#include <utility>

#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/lower_graph.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/lowering/stage_partition.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/fuse_epilogues.h"
#include "compiler/passes/fuse_gelu.h"
#include "compiler/passes/fuse_layer_norm.h"
#include "compiler/passes/graph_loss.h"
#include "compiler/passes/mixed_precision.h"
#include "compiler/passes/output_logits.h"
#include "compiler/passes/recompute.h"
#include "compiler/passes/training.h"
#include "compiler/target/ipu_links.h"
#include "compiler/target/target.h"
#include "runtime/base/sha256.h"
#include "runtime/format/executable_file.h"
#include "runtime/format/hyper_parameters.h"
#include "runtime/format/verifier.h"

namespace ipu::compiler {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The shortest decimal that reads back as exactly this float (0.01, not 0x1.47ae14p-7): one text
// per value, so equal values give equal keys, and the one a person would write (cache explain).
std::string float_key(float value) {
  char buffer[32]; // a float's shortest form has at most 15 characters (-1.17549435e-38)
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

// As float_key, for a double.
std::string double_key(double value) {
  char buffer[32]; // a double's shortest form has at most 24 characters (-2.2250738585072014e-308)
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

Status unknown_optimizer(const std::string& name) {
  return bad_option("--optimizer must be sgd, adam, adamw, rmsprop, adagrad, adamax or lamb, got '" + name +
                    "'");
}

// Each bound input as NAME=DTYPE[SHAPE]:SHA256(bytes), names length-prefixed so no two binding
// sets give one text; "none" without any. The file a value came from is not part of it.
std::string constant_inputs_key(const std::map<std::string, frontend::ConstantInput>& inputs) {
  if (inputs.empty()) return "none";
  std::string out;
  for (const auto& [name, bound] : inputs) {
    std::string dims;
    for (int64_t d : bound.value.shape)
      dims += (dims.empty() ? "" : ",") + std::to_string(d);
    out += (out.empty() ? "" : ";") + std::to_string(name.size()) + ":" + name + "=" + bound.value.dtype +
           "[" + dims + "]:" + sha256_hex(bound.value.data);
  }
  return out;
}

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
  if (o.precision != "fp32" && o.precision != "fp16" && o.precision != "mixed")
    return bad_option("--precision must be fp32, fp16 or mixed, got '" + o.precision + "'");
  if (o.precision == "mixed" && o.mode == Mode::kInfer) {
    return bad_option(
        "--precision mixed keeps fp32 master weights for training's updates, which --mode infer "
        "has none of; predict and evaluate in fp16 with --precision fp16");
  }
  if (o.mode == Mode::kInfer && o.gradient_accumulation > 1) {
    return bad_option("--gradient-accumulation applies to training only (--mode infer)");
  }
  if (o.metrics) {
    const auto metrics = passes::parse_metric_list(*o.metrics);
    if (!metrics.ok()) return bad_option("--metrics: " + metrics.status().message());
  }
  if (o.loss && !passes::loss_kind(*o.loss)) {
    return bad_option("--loss must be " + std::string(passes::loss_names()) + ", got '" + *o.loss + "'");
  }
  if (o.optimizer && !passes::optimizer_kind(*o.optimizer)) return unknown_optimizer(*o.optimizer);
  if (o.learning_rate && !(*o.learning_rate > 0)) return bad_option("--learning-rate must be positive");
  if (o.momentum && !(*o.momentum >= 0 && *o.momentum < 1)) return bad_option("--momentum must be in [0, 1)");
  for (const auto& [flag, value] :
       {std::pair{"--beta1", o.beta_1}, std::pair{"--beta2", o.beta_2}, std::pair{"--rho", o.rho}}) {
    if (value && !(*value >= 0 && *value < 1)) return bad_option(std::string(flag) + " must be in [0, 1)");
  }
  if (o.dampening && !(*o.dampening >= 0 && *o.dampening <= 1))
    return bad_option("--dampening must be in [0, 1]");
  if (o.initial_accumulator_value &&
      !(*o.initial_accumulator_value >= 0 && std::isfinite(*o.initial_accumulator_value)))
    return bad_option("--initial-accumulator-value must be non-negative");
  if (o.epsilon && !(*o.epsilon > 0 && std::isfinite(*o.epsilon)))
    return bad_option("--epsilon must be positive");
  if (o.weight_decay && !(*o.weight_decay >= 0 && std::isfinite(*o.weight_decay)))
    return bad_option("--weight-decay must be non-negative");
  if (o.global_clipnorm && !(*o.global_clipnorm >= 0 && std::isfinite(*o.global_clipnorm)))
    return bad_option("--global-clipnorm must be non-negative (0: no clipping)");
  if (o.learning_rate_schedule) {
    StatusOr<format::LearningRateSchedule> schedule =
        format::parse_learning_rate_schedule(*o.learning_rate_schedule);
    if (!schedule.ok()) return bad_option("--lr-schedule: " + schedule.status().message());
  }
  if (o.loss_scaling && !passes::loss_scaling_mode(*o.loss_scaling))
    return bad_option("--loss-scaling must be none, static or dynamic, got '" + *o.loss_scaling + "'");
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

// The graph output a training compile of `loaded` takes as its loss: --loss-output, else the one
// output an ONNX loss node computes; empty when the loss (--loss, the spec's) is added on the
// model's output.
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

// A frontend's forward graph with the training configuration that goes with it.
struct Model {
  frontend::ForwardGraph forward;
  passes::LossConfig loss;
  std::vector<passes::MetricConfig> metrics;
  passes::OptimizerConfig optimizer;
  // Training on a loss the graph computes: its output, the name of what it scores (an ONNX loss
  // node's input 0, "" if another op computes it) and the metrics asked for (nullopt: defaults).
  std::string loss_output;
  std::string loss_scores;
  std::optional<std::vector<passes::MetricConfig>> metrics_asked;
};

// The model's optimizer with the options' changes; refuses a flag the resulting optimizer has no
// use for (--momentum with Adam, --beta1 with SGD) rather than ignoring it, and Nesterov momentum
// without momentum or with dampening (as torch.optim.SGD does).
StatusOr<passes::OptimizerConfig> with_overrides(passes::OptimizerConfig optimizer,
                                                 const CompileOptions& options) {
  using K = passes::OptimizerKind;
  if (options.optimizer) {
    const std::optional<K> kind = passes::optimizer_kind(*options.optimizer);
    if (!kind) return unknown_optimizer(*options.optimizer);
    if (*kind != optimizer.kind) optimizer = passes::default_optimizer(*kind);
  }
  struct FlagUse {
    const char* flag;
    bool given;
    std::vector<K> kinds;
  };
  const std::vector<K> adam_family = {K::kAdam, K::kAdamW, K::kAdaMax, K::kLamb};
  const std::vector<FlagUse> uses = {
      {"--momentum", options.momentum.has_value(), {K::kSgd, K::kRmsProp}},
      {"--dampening", options.dampening.has_value(), {K::kSgd}},
      {"--nesterov", options.nesterov.has_value(), {K::kSgd}},
      {"--beta1", options.beta_1.has_value(), adam_family},
      {"--beta2", options.beta_2.has_value(), adam_family},
      {"--epsilon",
       options.epsilon.has_value(),
       {K::kAdam, K::kAdamW, K::kAdaMax, K::kLamb, K::kRmsProp, K::kAdagrad}},
      {"--rho", options.rho.has_value(), {K::kRmsProp}},
      {"--centered", options.centered.has_value(), {K::kRmsProp}},
      {"--initial-accumulator-value", options.initial_accumulator_value.has_value(), {K::kAdagrad}},
  };
  for (const FlagUse& use : uses) {
    if (!use.given || std::find(use.kinds.begin(), use.kinds.end(), optimizer.kind) != use.kinds.end())
      continue;
    std::string applies;
    for (size_t i = 0; i < use.kinds.size(); ++i) {
      applies += (i == 0 ? "" : i + 1 == use.kinds.size() ? " and " : ", ");
      applies += passes::optimizer_name(use.kinds[i]);
    }
    return bad_option(std::string(use.flag) + " applies to " + applies + ", not " +
                      passes::optimizer_name(optimizer.kind));
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
  if (options.momentum) optimizer.momentum = *options.momentum;
  if (options.dampening) optimizer.dampening = *options.dampening;
  if (options.nesterov) optimizer.nesterov = *options.nesterov;
  if (options.beta_1) optimizer.beta_1 = *options.beta_1;
  if (options.beta_2) optimizer.beta_2 = *options.beta_2;
  if (options.epsilon) optimizer.epsilon = *options.epsilon;
  if (options.weight_decay) optimizer.weight_decay = *options.weight_decay;
  if (options.rho) optimizer.rho = *options.rho;
  if (options.centered) optimizer.centered = *options.centered;
  if (options.initial_accumulator_value)
    optimizer.initial_accumulator_value = *options.initial_accumulator_value;
  if (options.global_clipnorm) optimizer.global_clipnorm = *options.global_clipnorm;
  // fp16 gradients underflow unscaled: training in fp16 or mixed scales the loss dynamically from
  // 2^15 unless --loss-scaling says otherwise, as Keras's mixed_float16 policy wraps fit's optimizer
  // in a (dynamic) LossScaleOptimizer (docs/training.md, "Precision").
  if (options.precision != "fp32" && options.mode == Mode::kTrain && !options.loss_scaling &&
      optimizer.loss_scaling.mode == passes::LossScalingMode::kNone) {
    optimizer.loss_scaling.mode = passes::LossScalingMode::kDynamic;
  }
  if (options.loss_scaling) {
    const std::optional<passes::LossScalingMode> mode = passes::loss_scaling_mode(*options.loss_scaling);
    if (!mode)
      return bad_option("--loss-scaling must be none, static or dynamic, got '" + *options.loss_scaling +
                        "'");
    optimizer.loss_scaling.mode = *mode;
  }
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

// `Loaded` is LoadedModel (consumed: the compile) or const LoadedModel& (copied: the automatic
// pipeline split's measuring compile).
template <typename Loaded>
StatusOr<Model> load_model(Loaded&& loaded, const CompileOptions& options, uint64_t bytes_per_tile) {
  Model model;
  if (options.mode == Mode::kTrain) {
    IPU_ASSIGN_OR_RETURN(model.loss_output, graph_loss_output(loaded, options));
    for (const auto& loss : loaded.loss_outputs()) {
      if (loss.output == model.loss_output) model.loss_scores = loss.scores;
    }
  }
  if (loaded.is_onnx()) {
    if (options.mode == Mode::kTrain && !options.loss && model.loss_output.empty()) {
      return bad_option(options.model_path + ": the ONNX model computes no loss; give --loss (" +
                        passes::loss_names() +
                        ") to train it, --loss-output NAME to train on a scalar output, or --mode infer");
    }
  } else if (!options.constant_inputs.empty()) {
    return bad_option(options.model_path + ": --constant-input applies to ONNX models only");
  }
  const frontend::ModelTraining training = loaded.training();
  frontend::OnnxImportOptions import{
      options.batch_size,      options.stage_assignment, options.mode == Mode::kTrain,
      options.constant_inputs, bytes_per_tile,           evaluate_on_device};
  IPU_ASSIGN_OR_RETURN(model.forward, std::forward<Loaded>(loaded).forward_graph(import));
  model.loss = training.loss;
  // --loss replaces the model's loss, keeping its from_logits (the output is the same) and delta.
  if (options.loss) {
    const std::optional<passes::LossKind> kind = passes::loss_kind(*options.loss);
    if (!kind)
      return bad_option("--loss must be " + std::string(passes::loss_names()) + ", got '" + *options.loss +
                        "'");
    model.loss.kind = *kind;
  }
  // --metrics, else the spec's, else the loss's default (which follows --loss).
  if (options.metrics) {
    IPU_ASSIGN_OR_RETURN(model.metrics, passes::parse_metric_list(*options.metrics));
    model.metrics_asked = model.metrics;
  } else {
    model.metrics = training.metrics.value_or(passes::default_metrics(model.loss.kind));
  }
  // Inference builds no update: its training flags are ignored, as its cache key ignores them.
  if (options.mode == Mode::kTrain) {
    IPU_ASSIGN_OR_RETURN(model.optimizer, with_overrides(training.optimizer, options));
  }
  return model;
}

// What a Keras loss reads of the model's output. An ONNX model's loss is from logits (ONNX has no
// from_logits), so when its output is already their Softmax or Sigmoid the loss reads the logits,
// as Keras's cross-entropies read a Softmax or Sigmoid output's, rather than squash them twice; a
// spec that says from_logits of such an output is warned, as Keras warns (passes/output_logits.h).
int scores_for_loss(const frontend::ForwardGraph& forward, const passes::LossConfig& loss,
                    std::string& note) {
  const int output = forward.scores();
  if (!loss.from_logits) return output;
  const std::optional<passes::SquashedOutput> squashed =
      passes::squashed_output(forward.graph, output, loss.kind);
  if (!squashed) return output;
  const std::string& output_name = forward.outputs.at(0).name;
  const std::string squash =
      squashed->op + (forward.source_onnx.empty() ? " op '" : " node '") + squashed->op_name + "'";
  const std::string loss_name = passes::loss_name(loss.kind);
  if (forward.source_onnx.empty()) {
    note = "the loss " + loss_name + " takes the output '" + output_name +
           "' as logits (from_logits true), but " + squash + " computes it: the loss applies a second " +
           squashed->op + "; give the loss \"from_logits\": false, or end the model in its logits";
    return output;
  }
  note = "the output '" + output_name + "' is computed by " + squash + ": " + loss_name +
         " reads that node's input, its logits, as Keras's cross-entropies read a " + squashed->op +
         " output's (no second " + squashed->op + "); predictions stay the " + squashed->op + "'s";
  return squashed->logits;
}

// A model after the training passes and fusion, and its lowering.
struct LoweredModel {
  frontend::ForwardGraph forward;
  lowering::LoweringResult lowered;
  std::vector<std::string> hyper_parameters; // training: the slots the optimizer's update reads
  std::string learning_rate_schedule;
  bool loss_counts_padding = false; // format::Executable's
  std::string loss_note;            // how the loss reads a squashed output, for the notes
  double passes_seconds = 0;
  double lowering_seconds = 0;
};

// A model that computes its loss: binds it (passes::bind_graph_loss) and leaves the model's
// interface as training sees it: its inputs but the labels, and the prediction as its one output.
StatusOr<passes::LossValues> bind_model_loss(Model& model, const CompileOptions& options) {
  frontend::ForwardGraph& forward = model.forward;
  passes::GraphLossModel graph_loss;
  graph_loss.loss_name = model.loss_output;
  graph_loss.metrics = model.metrics_asked;
  std::vector<std::string> output_names;
  for (const frontend::ModelIo& out : forward.outputs) {
    output_names.push_back(out.name);
    if (out.name == model.loss_output) {
      graph_loss.loss = out.value;
    } else {
      graph_loss.other_outputs.push_back(out.value);
    }
  }
  if (graph_loss.loss < 0) {
    return invalid_argument(
        options.model_path + ": --loss-output '" + model.loss_output +
        "': the graph has no output of that name (its outputs: " + quoted_names(output_names) + ")");
  }
  for (const frontend::ModelIo& in : forward.inputs)
    graph_loss.inputs.push_back(in.value);
  graph_loss.prediction_name = model.loss_scores;
  for (const frontend::ModelIo& out : forward.outputs) {
    if (out.name != model.loss_output) graph_loss.prediction_name = out.name;
  }
  StatusOr<passes::GraphLoss> bound = passes::bind_graph_loss(forward.graph, graph_loss);
  if (!bound.ok()) return bound.status().with_context(options.model_path);
  std::erase_if(forward.inputs, [&](const frontend::ModelIo& in) { return in.value == bound->labels; });
  frontend::ModelIo prediction;
  prediction.value = bound->prediction;
  prediction.name =
      model.loss_scores.empty() ? forward.graph.value(bound->prediction).name : model.loss_scores;
  for (const frontend::ModelIo& out : forward.outputs) {
    if (out.value == bound->prediction) prediction = out;
  }
  forward.outputs = {prediction};
  return bound->values;
}

lowering::Precision lowering_precision(const std::string& precision) {
  if (precision == "fp16") return lowering::Precision::kFp16;
  if (precision == "mixed") return lowering::Precision::kMixed;
  return lowering::Precision::kFp32;
}

StatusOr<LoweredModel> lower_model(Model model, const CompileOptions& options, target::TargetSpec target,
                                   bool measure_unit_memory = false) {
  LoweredModel out;
  auto start = std::chrono::steady_clock::now();
  frontend::ForwardGraph& forward = model.forward;
  // Stage s runs on IPU s of its replica; replicas take disjoint IPUs.
  const uint32_t stages = static_cast<uint32_t>(forward.num_stages);
  const uint32_t ipus_needed = stages * options.replicas;
  if (ipus_needed > options.num_ipus) {
    return bad_option(options.model_path + ": " + std::to_string(stages) + " stage(s) x " +
                      std::to_string(options.replicas) + " replica(s) need " + std::to_string(ipus_needed) +
                      " IPUs, the target has " + std::to_string(options.num_ipus) + " (--num-ipus)");
  }
  IPU_ASSIGN_OR_RETURN(lowering::Schedule schedule, lowering::parse_schedule(options.schedule));
  if (stages > 1 && schedule != lowering::Schedule::kSequential && options.mode == Mode::kTrain &&
      options.gradient_accumulation < stages) {
    return bad_option(options.model_path + ": the " + options.schedule +
                      " schedule needs --gradient-accumulation >= " + std::to_string(stages) +
                      " (the number of stages) to fill the pipeline, got " +
                      std::to_string(options.gradient_accumulation));
  }
  target.num_ipus = stages; // the lowering plans one replica
  std::optional<passes::LossValues> graph_loss;
  if (options.mode == Mode::kTrain && !model.loss_output.empty()) {
    IPU_ASSIGN_OR_RETURN(graph_loss, bind_model_loss(model, options));
  }
  if (options.precision == "mixed") IPU_RETURN_IF_ERROR(passes::add_half_weight_copies(forward.graph));
  lowering::GraphInterface io;
  for (const auto& in : forward.inputs)
    io.inputs.push_back({in.value, in.name, in.dtype, in.batched});
  for (const auto& out : forward.outputs)
    io.outputs.push_back({out.value, out.name, out.dtype, out.batched});
  if (options.mode == Mode::kTrain && (io.inputs.size() != 1 || io.outputs.size() != 1)) {
    return unsupported(options.model_path +
                       ": training needs a model with one input (the features) and one output (the "
                       "scores the loss reads); this one has " +
                       std::to_string(io.inputs.size()) + " input(s) and " +
                       std::to_string(io.outputs.size()) + " output(s) (--mode infer runs it)");
  }
  if (options.mode == Mode::kTrain && !forward.inputs[0].batched) {
    // The import takes a fixed first dimension as the batch when it equals --batch-size.
    const frontend::ModelIo& input = forward.inputs[0];
    const ir::TensorType& type = forward.graph.value(input.value).type;
    const std::string use_it = type.shape.empty()
                                   ? std::string()
                                   : "give --batch-size " + std::to_string(type.shape[0]) +
                                         " to train with its fixed first dimension as the batch, or ";
    return unsupported(options.model_path +
                       ": training needs the input's first dimension to be the batch, but input '" +
                       input.name + "' has the fixed shape " + type.to_string() + " and --batch-size is " +
                       std::to_string(options.batch_size) + "; " + use_it +
                       "export the model with a dynamic batch axis (torch.onnx.export(..., dynamic_axes={'" +
                       input.name + "': {0: 'batch'}}))");
  }
  if (options.mode == Mode::kTrain) {
    passes::LossValues loss;
    if (graph_loss) {
      loss = *graph_loss;
    } else {
      const int scores = scores_for_loss(forward, model.loss, out.loss_note);
      IPU_ASSIGN_OR_RETURN(loss, passes::add_loss(forward.graph, scores, model.loss, model.metrics));
    }
    IPU_ASSIGN_OR_RETURN(io.accumulators, passes::add_gradients_and_updates(
                                              forward.graph, loss.loss, model.optimizer,
                                              {options.gradient_accumulation, options.replicas, stages}));
    if (options.precision != "fp32") passes::keep_output_softmax_float32(forward.graph, loss.loss);
    // SparseCrossEntropy and DenseLoss skip padding rows; a loss the graph computes cannot.
    const ir::OpKind loss_kind = forward.graph.op(forward.graph.value(loss.loss).producer).kind;
    out.loss_counts_padding =
        loss_kind != ir::OpKind::kSparseCrossEntropy && loss_kind != ir::OpKind::kDenseLoss;
    const auto& ops = forward.graph.ops();
    if (graph_loss && std::none_of(ops.begin(), ops.end(),
                                   [](const ir::Op& op) { return op.phase == ir::Phase::kUpdate; })) {
      return invalid_argument(options.model_path + ": the loss '" + model.loss_output +
                              "' has no gradient path to any weight: nothing would train");
    }
    io.loss = loss;
    out.hyper_parameters = passes::hyper_parameters_read(model.optimizer);
    out.learning_rate_schedule = model.optimizer.learning_rate_schedule;
  }
  // After autodiff, so gradients are taken of the unfused graph.
  std::vector<int> interface_values;
  for (const lowering::IoBinding& b : io.inputs)
    interface_values.push_back(b.value);
  for (const lowering::IoBinding& b : io.outputs)
    interface_values.push_back(b.value);
  passes::fuse_epilogues(forward.graph, interface_values);
  passes::fuse_gelu(forward.graph, interface_values);
  passes::fuse_layer_norm(forward.graph, interface_values);
  // After fusion, so a recomputed op is a fused one; a pipeline recomputes whole stages itself.
  if (options.recompute && !options.recompute_checkpoints.empty() && stages > 1) {
    return bad_option(options.model_path +
                      ": --recompute-checkpoints applies to recomputation on one IPU; a pipeline "
                      "recomputes each stage's forward from its stashed inputs");
  }
  if (options.recompute && stages == 1 && options.mode == Mode::kTrain) {
    const StatusOr<passes::RecomputeSummary> recomputed =
        passes::recompute_forward(forward.graph, {options.recompute_checkpoints});
    if (!recomputed.ok()) return recomputed.status().with_context(options.model_path);
  }
  out.passes_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  lowering::LoweringOptions lowering_options{options.batch_size,
                                             options.steps_per_execution,
                                             options.gradient_accumulation,
                                             options.replicas,
                                             stages,
                                             schedule,
                                             options.recompute,
                                             measure_unit_memory,
                                             lowering_precision(options.precision)};
  auto lowered = lowering::lower_graph(forward.graph, io, target, lowering_options, ir::op_lowerings());
  if (!lowered.ok()) return lowered.status().with_context(options.model_path);
  out.lowered = std::move(*lowered);
  out.lowering_seconds = seconds_since(start);
  out.forward = std::move(model.forward);
  return out;
}

// Stages the measuring compile of the automatic split may use: consecutive layers share one when
// a model has more (lowering a stage per IPU costs a plan of its tiles each).
constexpr size_t kMaxMeasuredStages = 256;

// The automatic split's chain, measured: the problem lowering::partition_stages solves, and
// the layers or nodes each of its units groups.
struct MeasuredChain {
  lowering::StagePartitionProblem problem;
  std::vector<std::string> units;  // the model's layers or nodes
  std::vector<size_t> group_begin; // per unit of the chain, its first layer or node
};

// --pipeline-stages N: lowers the model with every layer (or group of layers) a stage of its own
// on an IPU of its own, which gives each its cycles per micro-batch (forward and backward when
// training, from the same estimates the compile reports), what it holds on each tile and for how
// long (lowering::UnitMemory), and each cut the bytes crossing it (the values copied between
// stages, and in training the gradients copied back, each over one IPU-Link as the program's
// copies are estimated). The stash and receive-buffer depths come from the compile's own
// schedule.
StatusOr<MeasuredChain> measure_chain(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                      const target::TargetSpec& target) {
  if (!options.stage_assignment.empty()) {
    return bad_option("--pipeline-stages chooses the stages: give it or --stage-assignment, not both");
  }
  MeasuredChain chain;
  chain.units = loaded.stage_units();
  const std::vector<std::string>& units = chain.units;
  const size_t groups = std::min(units.size(), kMaxMeasuredStages);
  CompileOptions measure = options;
  measure.pipeline_stages = 0;
  measure.stage_assignment.clear();
  for (size_t i = 0; i < units.size(); ++i)
    measure.stage_assignment.push_back(static_cast<int>(i * groups / units.size()));
  measure.gradient_accumulation = 1;
  measure.steps_per_execution = 1;
  measure.replicas = 1;
  measure.num_ipus = static_cast<uint32_t>(std::max<size_t>(1, groups));
  measure.schedule = "sequential"; // one micro-batch, no stashes beyond it
  measure.recompute = false;
  measure.recompute_checkpoints.clear();
  IPU_ASSIGN_OR_RETURN(Model model, load_model(loaded, measure, target.bytes_per_tile));
  const bool graph_loss = !model.loss_output.empty();
  StatusOr<LoweredModel> lowered = lower_model(std::move(model), measure, target, true);
  if (!lowered.ok() && graph_loss && lowered.status().code() == StatusCode::kUnsupported) {
    // A loss the graph computes must sit on the last stage: measuring each node as its own stage
    // spreads it over several.
    return unsupported(
        lowered.status().message() +
        " (--pipeline-stages measures every node as a stage of its own, which a loss the graph "
        "computes in several nodes cannot be; give --stage-assignment instead)");
  }
  IPU_ASSIGN_OR_RETURN(LoweredModel measured, std::move(lowered));

  const format::ScheduleEstimate& estimate = measured.lowered.executable.estimates().schedule();
  lowering::StagePartitionProblem& problem = chain.problem;
  problem.stages = static_cast<int>(options.pipeline_stages);
  problem.bytes_per_tile = target.bytes_per_tile;
  problem.code_bytes_per_codelet = target.cycles.codelet_code_bytes;
  problem.unit_kind = loaded.is_onnx() ? "node" : "layer";
  const bool train = options.mode == Mode::kTrain;
  if (train && problem.stages > 1) {
    IPU_ASSIGN_OR_RETURN(lowering::Schedule schedule, lowering::parse_schedule(options.schedule));
    const lowering::PipelinePlan plan =
        lowering::plan_pipeline(problem.stages, static_cast<int>(options.gradient_accumulation), schedule);
    problem.stash_depth = plan.stash_depth;
    problem.forward_depth = plan.forward_depth;
    problem.backward_depth = plan.backward_depth;
    problem.phased = schedule == lowering::Schedule::kGrouped;
  } else if (problem.stages > 1) {
    // A pipelined inference receives each boundary's values into one buffer (pipeline_inference.h).
    problem.forward_depth.assign(static_cast<size_t>(problem.stages - 1), 1);
  }
  problem.accumulates = train && (options.gradient_accumulation > 1 || options.replicas > 1);
  problem.recompute = train && options.recompute && problem.stages > 1;
  // Each unit's forward pass, from its work in the measuring compile's slots (its backward pass is
  // the rest of its busy cycles); all of it when inferring.
  std::vector<double> forward_cycles(static_cast<size_t>(estimate.busy_cycles_size()), 0);
  for (const format::ScheduleSlot& slot : estimate.slots()) {
    for (const format::SlotWork& work : slot.work()) {
      if (work.forward() && work.stage() < forward_cycles.size())
        forward_cycles[work.stage()] += work.cycles();
    }
  }
  std::vector<lowering::UnitMemory>& memory = measured.lowered.unit_memory;
  for (size_t i = 0; i < units.size(); ++i) {
    if (i == 0 || measure.stage_assignment[i] != measure.stage_assignment[i - 1]) {
      const size_t g = chain.group_begin.size();
      chain.group_begin.push_back(i);
      const double cycles = g < forward_cycles.size() ? estimate.busy_cycles(static_cast<int>(g)) : 0;
      problem.units.push_back({units[i], cycles,
                               train && g < forward_cycles.size() ? forward_cycles[g] : cycles,
                               g < memory.size() ? std::move(memory[g]) : lowering::UnitMemory()});
    }
  }
  // Bytes over each cut, each way: a value crosses every cut between its stage and the farthest
  // that reads it, forward (activations) or backward (the gradients that autodiff sends back).
  const size_t cuts = problem.units.empty() ? 0 : problem.units.size() - 1;
  std::vector<double> forward_bytes(cuts, 0), backward_bytes(cuts, 0);
  problem.forward_cut_tile_bytes.assign(cuts, 0);
  problem.backward_cut_tile_bytes.assign(cuts, 0);
  const ir::Graph& graph = measured.forward.graph;
  const lowering::Precision precision = lowering_precision(options.precision);
  std::map<std::pair<int, bool>, std::pair<int, int>> crossing; // (value, forward) -> stage span
  for (const ir::Op& op : graph.ops()) {
    // Clipping's squared norms cross once per update, 4 bytes each: not a micro-batch's traffic.
    if (op.kind != ir::OpKind::kStageCopy || op.phase == ir::Phase::kClip) continue;
    const int value = op.inputs.at(0);
    const int from = graph.value(value).stage;
    auto [it, inserted] = crossing.try_emplace({value, op.phase == ir::Phase::kForward}, from, from);
    it->second = {std::min(it->second.first, op.stage), std::max(it->second.second, op.stage)};
  }
  for (const auto& [key, span] : crossing) {
    const ir::Value& value = graph.value(key.first);
    const int64_t elements = value.type.elements();
    // As the copy moves it: 2 bytes an element for an fp16 activation or gradient.
    const uint64_t element_bytes = format::dtype_size(lowering::stored_dtype(graph, value, precision));
    const double bytes = static_cast<double>(element_bytes) * static_cast<double>(elements);
    for (int cut = span.first; cut < span.second; ++cut) {
      const auto c = static_cast<size_t>(cut);
      (key.second ? forward_bytes : backward_bytes).at(c) += bytes;
      (key.second ? problem.forward_cut_tile_bytes : problem.backward_cut_tile_bytes).at(c) +=
          lowering::linear_tile_share(elements, target.tiles_per_ipu, element_bytes);
    }
  }
  for (size_t c = 0; c < cuts; ++c) {
    problem.forward_cut_cycles.push_back(target::neighbour_link_cycles(target, forward_bytes[c]));
    problem.backward_cut_cycles.push_back(target::neighbour_link_cycles(target, backward_bytes[c]));
  }
  return chain;
}

// A split of the chain as the compile takes it: the stage of each layer or node.
struct ChosenStages {
  lowering::StagePartition partition;
  std::vector<int> assignment;          // stage of each layer or node
  std::vector<std::string> first_units; // of each stage
};

StatusOr<ChosenStages> choose_stages(const MeasuredChain& chain, const std::string& model_path) {
  StatusOr<lowering::StagePartition> partition = lowering::partition_stages(chain.problem);
  if (!partition.ok()) return partition.status().with_context(model_path);
  ChosenStages chosen;
  chosen.assignment.assign(chain.units.size(), 0);
  for (size_t s = 0; s < partition->first_unit.size(); ++s) {
    const size_t begin = chain.group_begin[static_cast<size_t>(partition->first_unit[s])];
    chosen.first_units.push_back(chain.units[begin]);
    for (size_t i = begin; i < chain.units.size(); ++i)
      chosen.assignment[i] = static_cast<int>(s);
  }
  chosen.partition = std::move(*partition);
  return chosen;
}

// Splits the automatic split may try before it gives up: each is a whole compile.
constexpr int kMaxSplitAttempts = 4;

// After the memory plan of `chosen` overflowed: refuses its overflowing stages in `chain` (so the
// next choice holds none of them whole) and says why, for the notes.
std::string refuse_overflowing_stages(MeasuredChain& chain, const ChosenStages& chosen,
                                      const lowering::MemoryPlan& plan, const target::TargetSpec& target) {
  const std::vector<int>& first = chosen.partition.first_unit;
  std::string firsts, why;
  for (size_t s = 0; s < first.size(); ++s) {
    firsts += (s == 0 ? "'" : ", '") + chosen.first_units[s] + "'";
    const uint32_t base = static_cast<uint32_t>(s) * target.tiles_per_ipu;
    uint32_t fullest = base;
    for (uint32_t t = base; t < base + target.tiles_per_ipu; ++t) {
      if (plan.peak_per_tile[t] > plan.peak_per_tile[fullest]) fullest = t;
    }
    const uint64_t peak = plan.peak_per_tile[fullest];
    if (peak <= target.bytes_per_tile) continue;
    const int end = s + 1 < first.size() ? first[s + 1] : static_cast<int>(chain.problem.units.size());
    chain.problem.refused.emplace_back(first[s], end);
    why += std::string(why.empty() ? "" : "; ") + "stage " + std::to_string(s) + " needs " +
           lowering::with_commas(peak) + " bytes on tile " + std::to_string(fullest - base) + " (bound " +
           lowering::with_commas(chosen.partition.stage_tile_bytes[s]) + ")";
  }
  return "the split starting at " + firsts + " does not fit its memory plan: " + why + " of " +
         lowering::with_commas(target.bytes_per_tile) + "; trying the next best split without " +
         (why.find(';') == std::string::npos ? "that stage" : "those stages");
}

// --stage-starts: the stage of each layer or node of the model, a new stage beginning at each
// name given (stage_units order, as --stage-assignment counts them).
StatusOr<std::vector<int>> stage_assignment_from_starts(const frontend::LoadedModel& model,
                                                        const std::vector<std::string>& starts) {
  const std::vector<std::string> units = model.stage_units();
  const std::string unit = model.is_onnx() ? "node" : "layer";
  std::vector<int> assignment;
  assignment.reserve(units.size());
  size_t next = 0; // the start looked for
  for (size_t i = 0; i < units.size(); ++i) {
    if (next < starts.size() && units[i] == starts[next]) {
      if (i == 0) {
        return bad_option("--stage-starts: '" + starts[next] + "' is the model's first " + unit +
                          ", where stage 0 begins; name where stages 1, 2, ... begin");
      }
      ++next;
    }
    assignment.push_back(static_cast<int>(next));
  }
  if (next == starts.size()) return assignment;
  const std::string& missing = starts[next];
  if (std::find(units.begin(), units.end(), missing) == units.end())
    return bad_option("--stage-starts: the model has no " + unit + " '" + missing + "'");
  return bad_option("--stage-starts: '" + missing + "' does not come after '" + starts.at(next - 1) +
                    "' in the model's order: give each " + unit + " once, in that order");
}

} // namespace

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
    const bool fills_pipeline = options.mode == Mode::kTrain && options.schedule != "sequential";
    const auto stages = options.pipeline_stages > 0
                            ? options.pipeline_stages
                            : static_cast<uint32_t>(model.stage_count(options.stage_assignment));
    options.gradient_accumulation = fills_pipeline ? stages : 1;
  }
  if (options.steps_per_execution == 0) options.steps_per_execution = options.gradient_accumulation;
  return options;
}

std::vector<std::pair<std::string, std::string>> codegen_options(const frontend::LoadedModel& model,
                                                                 const CompileOptions& options) {
  const CompileOptions o = with_model_defaults(model, options);
  std::vector<std::pair<std::string, std::string>> out = {
      {"arch", o.arch},
      {"tiles_per_ipu", o.tiles_per_ipu ? std::to_string(*o.tiles_per_ipu) : "preset"},
      {"bytes_per_tile", o.bytes_per_tile ? std::to_string(*o.bytes_per_tile) : "preset"},
      {"batch_size", std::to_string(o.batch_size)},
      {"steps_per_execution", std::to_string(o.steps_per_execution)},
      {"gradient_accumulation", std::to_string(o.gradient_accumulation)},
      {"replicas", std::to_string(o.replicas)},
      {"num_ipus", std::to_string(o.num_ipus)},
      {"mode", o.mode == Mode::kTrain ? "train" : "infer"},
  };
  // The values the compile will use, so an option equal to the model's own value is the same
  // key as leaving it out. Inference builds no training ops: these options change nothing there.
  if (o.mode == Mode::kTrain) {
    const frontend::ModelTraining training = model.training();
    // Options the compile will refuse leave the model's optimizer in the key: no entry is stored.
    const StatusOr<passes::OptimizerConfig> overridden = with_overrides(training.optimizer, o);
    const passes::OptimizerConfig optimizer = overridden.ok() ? *overridden : training.optimizer;
    // The loss's arguments (from_logits, delta) come from the model text, which the key covers;
    // an ONNX model's loss is always from logits. Aliases ("mse") key as the name they stand for.
    // A loss the graph computes is keyed by its output (the model text covers the rest).
    const StatusOr<std::string> graph_loss = graph_loss_output(model, o);
    const std::optional<passes::LossKind> flag_loss = o.loss ? passes::loss_kind(*o.loss) : std::nullopt;
    out.emplace_back("loss", graph_loss.ok() && !graph_loss->empty() ? "graph:" + *graph_loss
                             : flag_loss                             ? passes::loss_name(*flag_loss)
                             : o.loss                                ? *o.loss
                             : training.loss_name.empty()            ? "none"
                                                                     : training.loss_name);
    // Metrics from the spec are in its text; --metrics is keyed as parse_metric_list reads it,
    // and only when given, so the keys of executables without it stay what they were.
    if (o.metrics) {
      const auto metrics = passes::parse_metric_list(*o.metrics);
      out.emplace_back("metrics", metrics.ok() ? passes::metric_list_text(*metrics) : *o.metrics);
    }
    out.emplace_back("optimizer", passes::optimizer_name(optimizer.kind));
    // The values are run-time values (run_time_defaults); what they change of the program is
    // which hyper-parameters the update reads (momentum 0 or not, plain SGD or not), and these.
    std::string read;
    for (const std::string& name : passes::hyper_parameters_read(optimizer))
      read += (read.empty() ? "" : ",") + name;
    out.emplace_back("hyper_parameters_read", read);
    using K = passes::OptimizerKind;
    const bool plain_sgd = optimizer.kind == K::kSgd && optimizer.dampening == 0.0f && !optimizer.nesterov &&
                           optimizer.weight_decay == 0.0f;
    if (optimizer.kind == K::kSgd && !plain_sgd) out.emplace_back("nesterov", optimizer.nesterov ? "1" : "0");
    if (optimizer.kind == K::kRmsProp) out.emplace_back("centered", optimizer.centered ? "1" : "0");
    if (optimizer.kind == K::kAdagrad) {
      out.emplace_back("initial_accumulator_value", float_key(optimizer.initial_accumulator_value));
    }
    // Keyed only when clipping, so the keys of runs without it are what they were before it.
    if (optimizer.global_clipnorm > 0.0f)
      out.emplace_back("global_clipnorm", float_key(optimizer.global_clipnorm));
    // Keyed only when scaling, as clipping; the static scale is a run-time value (the
    // hyper-parameters read name it).
    if (optimizer.loss_scaling.mode != passes::LossScalingMode::kNone)
      out.emplace_back("loss_scaling", passes::loss_scaling_mode_name(optimizer.loss_scaling.mode));
    // Dynamic scaling compiles its initial scale and growth steps into the scale's state and update.
    if (optimizer.loss_scaling.mode == passes::LossScalingMode::kDynamic) {
      out.emplace_back("loss_scale", float_key(optimizer.loss_scaling.initial_scale));
      out.emplace_back("loss_scale_growth_steps", std::to_string(optimizer.loss_scaling.growth_steps));
    }
  } else {
    for (const char* name : {"loss", "optimizer", "hyper_parameters_read"})
      out.emplace_back(name, "unused");
  }
  std::string stages;
  for (int s : o.stage_assignment)
    stages += (stages.empty() ? "" : ",") + std::to_string(s);
  out.emplace_back("stage_assignment", stages.empty() ? "spec" : stages);
  // Stage starts left unresolved (names the model lacks, or given with --stage-assignment), which
  // compile_model refuses: keyed so that they never reach another entry. Resolved ones are the
  // stage_assignment they spell.
  if (!o.stage_starts.empty()) {
    std::string starts;
    for (const std::string& name : o.stage_starts)
      starts += std::to_string(name.size()) + ":" + name;
    out.emplace_back("stage_starts", starts);
  }
  if (o.pipeline_stages > 0) out.emplace_back("pipeline_stages", std::to_string(o.pipeline_stages));
  const bool pipelined =
      o.pipeline_stages > 0 ? o.pipeline_stages > 1 : model.stage_count(o.stage_assignment) > 1;
  out.emplace_back("schedule", pipelined ? o.schedule : "none");
  const bool recompute = o.mode == Mode::kTrain && o.recompute;
  out.emplace_back("recompute", recompute ? "1" : "0");
  if (recompute && !pipelined && !o.recompute_checkpoints.empty()) {
    std::string names;
    for (const std::string& name : o.recompute_checkpoints)
      names += (names.empty() ? "" : ",") + name;
    out.emplace_back("recompute_checkpoints", names);
  }
  out.emplace_back("constant_inputs", constant_inputs_key(o.constant_inputs));
  // Keyed when not fp32, so the keys of executables from before it existed stay what they were.
  if (o.precision != "fp32") out.emplace_back("precision", o.precision);
  // Keyed when not poplibs' default, as the precision; its shortest decimal, so 0.30 is 0.3.
  if (o.available_memory_proportion != target::kDefaultAvailableMemoryProportion)
    out.emplace_back("available_memory_proportion", double_key(o.available_memory_proportion));
  return out;
}

std::optional<RunTimeDefaults> run_time_defaults(const frontend::LoadedModel& model,
                                                 const CompileOptions& options) {
  const CompileOptions o = with_model_defaults(model, options);
  if (o.mode != Mode::kTrain) return std::nullopt;
  const StatusOr<passes::OptimizerConfig> optimizer = with_overrides(model.training().optimizer, o);
  if (!optimizer.ok()) return std::nullopt;
  return RunTimeDefaults{passes::hyper_parameter_values(*optimizer), optimizer->learning_rate_schedule};
}

StatusOr<CompileResult> compile_model(const std::string& model_text, const CompileOptions& options,
                                      CompileReport* report) {
  return compile_model(frontend::LoadedModel::parse(model_text, options.model_path), options, report);
}

StatusOr<CompileResult> compile_model(frontend::LoadedModel loaded, const CompileOptions& given,
                                      CompileReport* report) {
  ir::install_op_table(
      ir::op_definitions()); // every graph the frontends and passes build runs the ops' rules
  if (!given.stage_starts.empty()) {
    if (given.pipeline_stages > 0)
      return bad_option("--pipeline-stages chooses the stages: give it or --stage-starts, not both");
    if (given.stage_assignment.empty()) {
      IPU_RETURN_IF_ERROR(
          stage_assignment_from_starts(loaded, given.stage_starts).status().with_context(given.model_path));
    }
  }
  CompileOptions options = with_model_defaults(loaded, given);
  IPU_RETURN_IF_ERROR(validate_options(options));
  IPU_ASSIGN_OR_RETURN(target::TargetSpec target, target::target_preset(options.arch));
  IPU_RETURN_IF_ERROR(target::override_target(target, options.tiles_per_ipu, options.bytes_per_tile));
  target.available_memory_proportion = options.available_memory_proportion;
  if (options.num_ipus == 0 || options.num_ipus > 1024) return bad_option("--num-ipus must be in [1, 1024]");

  CompileResult result;
  auto start = std::chrono::steady_clock::now();
  std::optional<MeasuredChain> chain;
  if (options.pipeline_stages > 0) {
    IPU_ASSIGN_OR_RETURN(chain, measure_chain(loaded, options, target));
  }
  double choosing_seconds = seconds_since(start);
  // With an automatic split the memory plan judges the choice: a split that overflows gives way
  // to the next best without its overflowing stages. Each try loads the model anew.
  std::vector<std::string> first_units;
  LoweredModel lowered;
  auto lower_loaded = [&](StatusOr<Model> model) -> Status {
    if (!model.ok()) return model.status();
    result.timings.frontend_seconds += seconds_since(start);
    IPU_ASSIGN_OR_RETURN(lowered, lower_model(std::move(*model), options, target));
    result.timings.passes_seconds += lowered.passes_seconds;
    result.timings.lowering_seconds += lowered.lowering_seconds;
    return Status();
  };
  if (!chain) {
    start = std::chrono::steady_clock::now();
    IPU_RETURN_IF_ERROR(lower_loaded(load_model(std::move(loaded), options, target.bytes_per_tile)));
  }
  for (int attempt = 1; chain; ++attempt) {
    start = std::chrono::steady_clock::now();
    StatusOr<ChosenStages> chosen = choose_stages(*chain, options.model_path);
    if (!chosen.ok()) {
      if (result.notes.empty()) return chosen.status();
      return Status(chosen.status().code(), chosen.status().message() + " (" + result.notes.back() + ")");
    }
    options.stage_assignment = chosen->assignment;
    first_units = chosen->first_units;
    choosing_seconds += seconds_since(start);
    start = std::chrono::steady_clock::now();
    IPU_RETURN_IF_ERROR(lower_loaded(load_model(std::as_const(loaded), options, target.bytes_per_tile)));
    if (lowered.lowered.memory.overflowing.empty() || attempt == kMaxSplitAttempts) break;
    result.notes.push_back(refuse_overflowing_stages(*chain, *chosen, lowered.lowered.memory, target));
  }
  // The automatic split's measuring compile is lowering work too.
  result.timings.lowering_seconds += choosing_seconds;
  const frontend::ForwardGraph& forward = lowered.forward;
  result.ir_text = forward.graph.to_string();
  const auto stages = static_cast<uint32_t>(forward.num_stages);

  result.executable = std::move(lowered.lowered.executable);
  result.memory = std::move(lowered.lowered.memory);
  format::Executable& exe = result.executable;
  exe.set_format_version(format::kFormatVersion);
  exe.set_model_name(forward.name);
  exe.set_source_onnx(forward.source_onnx);
  exe.set_folded_onnx_nodes(static_cast<uint32_t>(forward.folded_nodes));
  if (!forward.folding_note.empty()) result.notes.push_back(forward.folding_note);
  exe.set_mode(options.mode == Mode::kTrain ? "train" : "infer");
  for (const std::string& name : lowered.hyper_parameters)
    exe.add_hyper_parameters(name);
  exe.set_learning_rate_schedule(lowered.learning_rate_schedule);
  exe.set_loss_counts_padding(lowered.loss_counts_padding);
  // Class indices count the scores' classes; float labels are num_classes per sample, as the labels
  // stream carries them (a loss the graph computes may read them in any shape).
  const auto& scores_shape = forward.graph.value(forward.scores()).type.shape;
  exe.set_num_classes(scores_shape.size() == 2 ? static_cast<uint32_t>(scores_shape[1]) : 0);
  for (int labels : forward.graph.values_with_role(ir::Role::kLabel)) {
    const ir::TensorType& type = forward.graph.value(labels).type;
    if (type.dtype == ir::DType::kFloat32)
      exe.set_num_classes(static_cast<uint32_t>(type.elements() / type.shape[0]));
  }
  format::PipelineInfo* pipeline = exe.mutable_pipeline();
  pipeline->set_num_stages(stages);
  pipeline->set_gradient_accumulation(options.gradient_accumulation);
  pipeline->set_replicas(options.replicas);
  pipeline->set_schedule(stages > 1 ? options.schedule : "none");
  for (uint32_t s = 0; s < stages; ++s)
    pipeline->add_stage_ipu(s);
  for (const std::string& unit : first_units)
    pipeline->add_stage_first_unit(unit);
  // The memory plan covers one replica's IPUs, one per stage, as lower_model planned it.
  target.num_ipus = stages;
  if (report) {
    if (report->with_executable) report->executable = exe;
    report->memory = lowering::report_memory(exe, result.memory, target);
  }
  if (!result.memory.overflowing.empty()) {
    std::string message = lowering::describe_overflow(result.memory, target, 3);
    if (!result.notes.empty()) {
      message += "\n(the automatic split tried " + std::to_string(result.notes.size() + 1) +
                 " splits, this one last; before it, " + result.notes.front() + ")";
    }
    return resource_exhausted(message).with_context(options.model_path);
  }
  if (!lowered.loss_note.empty()) result.notes.push_back(std::move(lowered.loss_note));
  for (std::string& note : result.notes)
    note = options.model_path + ": " + note;
  return result;
}

} // namespace ipu::compiler
