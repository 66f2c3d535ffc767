#include "compiler/driver/compile_internal.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "compiler/driver/evaluate_constants.h"
#include "compiler/lowering/pipeline_schedule.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/fuse_epilogues.h"
#include "compiler/passes/fuse_gelu.h"
#include "compiler/passes/fuse_layer_norm.h"
#include "compiler/passes/graph_loss.h"
#include "compiler/passes/mixed_precision.h"
#include "compiler/passes/output_logits.h"
#include "compiler/passes/recompute.h"

namespace ipu::compiler {
namespace {

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

} // namespace

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

template StatusOr<Model> load_model(frontend::LoadedModel&& loaded, const CompileOptions& options,
                                    uint64_t bytes_per_tile);
template StatusOr<Model> load_model(const frontend::LoadedModel& loaded, const CompileOptions& options,
                                    uint64_t bytes_per_tile);

lowering::Precision lowering_precision(const std::string& precision) {
  if (precision == "fp16") return lowering::Precision::kFp16;
  if (precision == "mixed") return lowering::Precision::kMixed;
  return lowering::Precision::kFp32;
}

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

} // namespace ipu::compiler
