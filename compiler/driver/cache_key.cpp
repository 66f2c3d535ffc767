#include "compiler/driver/compile_internal.h"

#include <charconv>
#include <map>
#include <utility>

#include "compiler/passes/training.h"
#include "runtime/base/sha256.h"

namespace ipu::compiler {
namespace {

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

} // namespace

std::string float_key(float value) {
  char buffer[32]; // a float's shortest form has at most 15 characters (-1.17549435e-38)
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

std::string double_key(double value) {
  char buffer[32]; // a double's shortest form has at most 24 characters (-2.2250738585072014e-308)
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
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
    out.emplace_back("loss", graph_loss.ok() && !graph_loss->empty() ? "graph:" + *graph_loss
                             : o.loss                                ? passes::loss_name(*o.loss)
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
  out.emplace_back("schedule", pipelined ? lowering::schedule_name(o.schedule) : "none");
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
  if (o.precision != lowering::Precision::kFp32)
    out.emplace_back("precision", lowering::precision_name(o.precision));
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

} // namespace ipu::compiler
