#include "compiler/driver/compile_internal.h"

#include <optional>
#include <utility>

#include "compiler/driver/evaluate_constants.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/ops/op_table.h"

namespace ipu::compiler {

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
  if (options.loss) model.loss.kind = *options.loss;
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

template StatusOr<Model> load_model(frontend::LoadedModel&& loaded, const CompileOptions& options,
                                    uint64_t bytes_per_tile);
template StatusOr<Model> load_model(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                    uint64_t bytes_per_tile);

StatusOr<LoweredModel> lower_model(Model model, const CompileOptions& options, target::TargetSpec target,
                                   bool measure_unit_memory) {
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
  const lowering::Schedule schedule = options.schedule;
  if (stages > 1 && schedule != lowering::Schedule::kSequential && options.mode == Mode::kTrain &&
      options.gradient_accumulation < stages) {
    return bad_option(options.model_path + ": the " + lowering::schedule_name(schedule) +
                      " schedule needs --gradient-accumulation >= " + std::to_string(stages) +
                      " (the number of stages) to fill the pipeline, got " +
                      std::to_string(options.gradient_accumulation));
  }
  if (options.recompute && !options.recompute_checkpoints.empty() && stages > 1) {
    return bad_option(options.model_path +
                      ": --recompute-checkpoints applies to recomputation on one IPU; a pipeline "
                      "recomputes each stage's forward from its stashed inputs");
  }
  target.num_ipus = stages; // the lowering plans one replica
  IPU_ASSIGN_OR_RETURN(GraphPassesResult passed, run_graph_passes(model, options, stages));
  out.passes = std::move(passed.runs);
  out.hyper_parameters = std::move(passed.hyper_parameters);
  out.learning_rate_schedule = std::move(passed.learning_rate_schedule);
  out.loss_counts_padding = passed.loss_counts_padding;
  out.loss_note = std::move(passed.loss_note);
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
                                             options.precision};
  auto lowered =
      lowering::lower_graph(forward.graph, passed.io, target, lowering_options, ops::op_lowerings());
  if (!lowered.ok()) return lowered.status().with_context(options.model_path);
  out.lowered = std::move(*lowered);
  out.lowering_seconds = seconds_since(start);
  out.forward = std::move(model.forward);
  return out;
}

} // namespace ipu::compiler
