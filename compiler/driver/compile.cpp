#include "compiler/driver/compile.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "compiler/lowering/lower_graph.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/lowering/stage_partition.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/fuse_epilogues.h"
#include "compiler/passes/fuse_gelu.h"
#include "compiler/passes/fuse_layer_norm.h"
#include "compiler/passes/training.h"
#include "compiler/target/target.h"
#include "runtime/base/sha256.h"
#include "runtime/format/executable_file.h"

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

Status unknown_optimizer(const std::string& name) {
  return bad_option("--optimizer must be sgd, adam, adamw, rmsprop, adagrad or adamax, got '" + name + "'");
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
  if (o.gradient_accumulation == 0 || o.replicas == 0) {
    return bad_option("--gradient-accumulation and --replicas must be at least 1");
  }
  if (o.steps_per_execution % o.gradient_accumulation != 0) {
    return bad_option("--steps-per-execution " + std::to_string(o.steps_per_execution) +
                      " is not a multiple of --gradient-accumulation " +
                      std::to_string(o.gradient_accumulation) + ": an execution must end on a weight update");
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
  return Status();
}

// A frontend's forward graph with the training configuration that goes with it.
struct Model {
  frontend::ForwardGraph forward;
  passes::LossConfig loss;
  std::vector<passes::MetricConfig> metrics;
  passes::OptimizerConfig optimizer;
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
  const std::vector<K> adam_family = {K::kAdam, K::kAdamW, K::kAdaMax};
  const std::vector<FlagUse> uses = {
      {"--momentum", options.momentum.has_value(), {K::kSgd, K::kRmsProp}},
      {"--dampening", options.dampening.has_value(), {K::kSgd}},
      {"--nesterov", options.nesterov.has_value(), {K::kSgd}},
      {"--beta1", options.beta_1.has_value(), adam_family},
      {"--beta2", options.beta_2.has_value(), adam_family},
      {"--epsilon", options.epsilon.has_value(), {K::kAdam, K::kAdamW, K::kAdaMax, K::kRmsProp, K::kAdagrad}},
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
  if (options.learning_rate) optimizer.learning_rate = *options.learning_rate;
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
  if (loaded.is_onnx()) {
    if (options.mode == Mode::kTrain && !options.loss) {
      return bad_option(options.model_path + ": an ONNX model has no loss; give --loss (" +
                        passes::loss_names() + ") to train it, or --mode infer");
    }
  } else if (!options.constant_inputs.empty()) {
    return bad_option(options.model_path + ": --constant-input applies to ONNX models only");
  }
  Model model;
  const frontend::ModelTraining training = loaded.training();
  frontend::OnnxImportOptions import{options.batch_size, options.stage_assignment,
                                     options.mode == Mode::kTrain, options.constant_inputs, bytes_per_tile};
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
  } else {
    model.metrics = training.metrics.value_or(passes::default_metrics(model.loss.kind));
  }
  // Inference builds no update: its training flags are ignored, as its cache key ignores them.
  if (options.mode == Mode::kTrain) {
    IPU_ASSIGN_OR_RETURN(model.optimizer, with_overrides(training.optimizer, options));
  }
  return model;
}

// A model after the training passes and fusion, and its lowering.
struct LoweredModel {
  frontend::ForwardGraph forward;
  lowering::LoweringResult lowered;
  double passes_seconds = 0;
  double lowering_seconds = 0;
};

StatusOr<LoweredModel> lower_model(Model model, const CompileOptions& options, target::TargetSpec target) {
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
  lowering::GraphInterface io;
  for (const auto& in : forward.inputs)
    io.inputs.push_back({in.value, in.name, in.dtype, in.batched});
  for (const auto& out : forward.outputs)
    io.outputs.push_back({out.value, out.name, out.dtype, out.batched});
  if (options.mode == Mode::kTrain &&
      (io.inputs.size() != 1 || io.outputs.size() != 1 || !forward.inputs[0].batched)) {
    return unsupported(options.model_path +
                       ": training needs a model with one batched input and one output; this one has " +
                       std::to_string(io.inputs.size()) + " input(s) and " +
                       std::to_string(io.outputs.size()) + " output(s) (--mode infer runs it)");
  }
  if (options.mode == Mode::kTrain) {
    IPU_ASSIGN_OR_RETURN(passes::LossValues loss,
                         passes::add_loss(forward.graph, forward.scores(), model.loss, model.metrics));
    IPU_ASSIGN_OR_RETURN(io.accumulators, passes::add_gradients_and_updates(
                                              forward.graph, loss.loss, model.optimizer,
                                              {options.gradient_accumulation, options.replicas, stages}));
    io.loss = loss;
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
  out.passes_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  lowering::LoweringOptions lowering_options{options.batch_size,
                                             options.steps_per_execution,
                                             options.gradient_accumulation,
                                             options.replicas,
                                             stages,
                                             schedule,
                                             options.recompute};
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

struct ChosenStages {
  std::vector<int> assignment;          // stage of each layer or node
  std::vector<std::string> first_units; // of each stage
};

// --pipeline-stages N: lowers the model with every layer (or group of layers) a stage of its own
// on an IPU of its own, which gives each its cycles per micro-batch (forward and backward when
// training, from the same estimates the compile reports) and its fullest tile, and each cut the
// bytes crossing it (the values copied between stages, and in training the gradients copied
// back, each over one IPU-Link as the program's copies are estimated); then
// lowering::partition_stages picks the cuts.
StatusOr<ChosenStages> choose_stages(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                     const target::TargetSpec& target) {
  if (!options.stage_assignment.empty()) {
    return bad_option("--pipeline-stages chooses the stages: give it or --stage-assignment, not both");
  }
  const std::vector<std::string> units = loaded.stage_units();
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
  IPU_ASSIGN_OR_RETURN(Model model, load_model(loaded, measure, target.bytes_per_tile));
  IPU_ASSIGN_OR_RETURN(LoweredModel measured, lower_model(std::move(model), measure, target));

  const format::ScheduleEstimate& estimate = measured.lowered.executable.estimates().schedule();
  lowering::StagePartitionProblem problem;
  problem.stages = static_cast<int>(options.pipeline_stages);
  problem.bytes_per_tile = target.bytes_per_tile;
  problem.unit_kind = loaded.is_onnx() ? "node" : "layer";
  std::vector<size_t> group_begin;
  for (size_t i = 0; i < units.size(); ++i) {
    if (i == 0 || measure.stage_assignment[i] != measure.stage_assignment[i - 1]) {
      const auto g = static_cast<int>(group_begin.size());
      group_begin.push_back(i);
      problem.units.push_back({units[i], g < estimate.busy_cycles_size() ? estimate.busy_cycles(g) : 0,
                               g < estimate.peak_tile_bytes_size() ? estimate.peak_tile_bytes(g) : 0});
    }
  }
  // Bytes over each cut, each way: a value crosses every cut between its stage and the farthest
  // that reads it, forward (activations) or backward (the gradients that autodiff sends back).
  const size_t cuts = problem.units.empty() ? 0 : problem.units.size() - 1;
  std::vector<double> forward_bytes(cuts, 0), backward_bytes(cuts, 0);
  const ir::Graph& graph = measured.forward.graph;
  std::map<std::pair<int, bool>, std::pair<int, int>> crossing; // (value, forward) -> stage span
  for (const ir::Op& op : graph.ops()) {
    if (op.kind != ir::OpKind::kStageCopy) continue;
    const int value = op.inputs.at(0);
    const int from = graph.value(value).stage;
    auto [it, inserted] = crossing.try_emplace({value, op.phase == ir::Phase::kForward}, from, from);
    it->second = {std::min(it->second.first, op.stage), std::max(it->second.second, op.stage)};
  }
  for (const auto& [key, span] : crossing) {
    const double bytes = 4.0 * static_cast<double>(graph.value(key.first).type.elements()); // f32 and i32
    for (int cut = span.first; cut < span.second; ++cut)
      (key.second ? forward_bytes : backward_bytes).at(static_cast<size_t>(cut)) += bytes;
  }
  for (size_t c = 0; c < cuts; ++c) {
    problem.forward_cut_cycles.push_back(forward_bytes[c] / target.cycles.ipu_link_bytes_per_cycle);
    problem.backward_cut_cycles.push_back(backward_bytes[c] / target.cycles.ipu_link_bytes_per_cycle);
  }

  StatusOr<lowering::StagePartition> partition = lowering::partition_stages(problem);
  if (!partition.ok()) return partition.status().with_context(options.model_path);
  ChosenStages chosen;
  chosen.assignment.assign(units.size(), 0);
  for (size_t s = 0; s < partition->first_unit.size(); ++s) {
    const size_t begin = group_begin[static_cast<size_t>(partition->first_unit[s])];
    chosen.first_units.push_back(units[begin]);
    for (size_t i = begin; i < units.size(); ++i)
      chosen.assignment[i] = static_cast<int>(s);
  }
  return chosen;
}

} // namespace

CompileOptions with_model_defaults(const frontend::LoadedModel& model, CompileOptions options) {
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
    const std::optional<passes::LossKind> flag_loss = o.loss ? passes::loss_kind(*o.loss) : std::nullopt;
    out.emplace_back("loss", flag_loss                    ? passes::loss_name(*flag_loss)
                             : o.loss                     ? *o.loss
                             : training.loss_name.empty() ? "none"
                                                          : training.loss_name);
    // Metrics from the spec are in its text; --metrics is keyed as parse_metric_list reads it,
    // and only when given, so the keys of executables without it stay what they were.
    if (o.metrics) {
      const auto metrics = passes::parse_metric_list(*o.metrics);
      out.emplace_back("metrics", metrics.ok() ? passes::metric_list_text(*metrics) : *o.metrics);
    }
    out.emplace_back("optimizer", passes::optimizer_name(optimizer.kind));
    out.emplace_back("learning_rate", float_key(optimizer.learning_rate));
    out.emplace_back("momentum", float_key(optimizer.momentum));
    // Each optimizer keys the arguments it uses, so the keys of plain SGD (no dampening, Nesterov or
    // weight decay) and of Adam are what they were before the other optimizers.
    using K = passes::OptimizerKind;
    const bool plain_sgd = optimizer.kind == K::kSgd && optimizer.dampening == 0.0f && !optimizer.nesterov &&
                           optimizer.weight_decay == 0.0f;
    if (optimizer.kind == K::kSgd && !plain_sgd) {
      out.emplace_back("dampening", float_key(optimizer.dampening));
      out.emplace_back("nesterov", optimizer.nesterov ? "1" : "0");
    }
    if (optimizer.kind == K::kAdam || optimizer.kind == K::kAdamW || optimizer.kind == K::kAdaMax) {
      out.emplace_back("beta_1", float_key(optimizer.beta_1));
      out.emplace_back("beta_2", float_key(optimizer.beta_2));
    }
    if (optimizer.kind == K::kRmsProp) {
      out.emplace_back("rho", float_key(optimizer.rho));
      out.emplace_back("centered", optimizer.centered ? "1" : "0");
    }
    if (optimizer.kind == K::kAdagrad) {
      out.emplace_back("initial_accumulator_value", float_key(optimizer.initial_accumulator_value));
    }
    if (optimizer.kind != K::kSgd) out.emplace_back("epsilon", float_key(optimizer.epsilon));
    if (!plain_sgd) out.emplace_back("weight_decay", float_key(optimizer.weight_decay));
  } else {
    for (const char* name : {"loss", "optimizer", "learning_rate", "momentum"})
      out.emplace_back(name, "unused");
  }
  std::string stages;
  for (int s : o.stage_assignment)
    stages += (stages.empty() ? "" : ",") + std::to_string(s);
  out.emplace_back("stage_assignment", stages.empty() ? "spec" : stages);
  if (o.pipeline_stages > 0) out.emplace_back("pipeline_stages", std::to_string(o.pipeline_stages));
  const bool pipelined =
      o.pipeline_stages > 0 ? o.pipeline_stages > 1 : model.stage_count(o.stage_assignment) > 1;
  out.emplace_back("schedule", pipelined ? o.schedule : "none");
  out.emplace_back("recompute", pipelined && o.mode == Mode::kTrain && o.recompute ? "1" : "0");
  out.emplace_back("constant_inputs", constant_inputs_key(o.constant_inputs));
  return out;
}

StatusOr<CompileResult> compile_model(const std::string& model_text, const CompileOptions& options,
                                      CompileReport* report) {
  return compile_model(frontend::LoadedModel::parse(model_text, options.model_path), options, report);
}

StatusOr<CompileResult> compile_model(frontend::LoadedModel loaded, const CompileOptions& given,
                                      CompileReport* report) {
  ir::install_op_table(
      ir::op_definitions()); // every graph the frontends and passes build runs the ops' rules
  CompileOptions options = with_model_defaults(loaded, given);
  IPU_RETURN_IF_ERROR(validate_options(options));
  IPU_ASSIGN_OR_RETURN(target::TargetSpec target, target::target_preset(options.arch));
  IPU_RETURN_IF_ERROR(target::override_target(target, options.tiles_per_ipu, options.bytes_per_tile));
  if (options.num_ipus == 0 || options.num_ipus > 1024) return bad_option("--num-ipus must be in [1, 1024]");

  CompileResult result;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> first_units;
  if (options.pipeline_stages > 0) {
    IPU_ASSIGN_OR_RETURN(ChosenStages chosen, choose_stages(loaded, options, target));
    options.stage_assignment = std::move(chosen.assignment);
    first_units = std::move(chosen.first_units);
  }
  const double choosing_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  IPU_ASSIGN_OR_RETURN(Model model, load_model(std::move(loaded), options, target.bytes_per_tile));
  result.timings.frontend_seconds = seconds_since(start);
  IPU_ASSIGN_OR_RETURN(LoweredModel lowered, lower_model(std::move(model), options, target));
  result.timings.passes_seconds = lowered.passes_seconds;
  // The automatic split's measuring compile is lowering work too.
  result.timings.lowering_seconds = lowered.lowering_seconds + choosing_seconds;
  const frontend::ForwardGraph& forward = lowered.forward;
  result.ir_text = forward.graph.to_string();
  const auto stages = static_cast<uint32_t>(forward.num_stages);

  result.executable = std::move(lowered.lowered.executable);
  result.memory = std::move(lowered.lowered.memory);
  format::Executable& exe = result.executable;
  exe.set_format_version(format::kFormatVersion);
  exe.set_model_name(forward.name);
  exe.set_source_onnx(forward.source_onnx);
  exe.set_mode(options.mode == Mode::kTrain ? "train" : "infer");
  const auto& scores_shape = forward.graph.value(forward.scores()).type.shape;
  exe.set_num_classes(scores_shape.size() == 2 ? static_cast<uint32_t>(scores_shape[1]) : 0);
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
    report->executable = exe;
    report->memory = lowering::report_memory(exe, result.memory, target);
  }
  if (!result.memory.overflowing.empty()) {
    return resource_exhausted(lowering::describe_overflow(result.memory, target, 3))
        .with_context(options.model_path);
  }
  return result;
}

} // namespace ipu::compiler
