// The graph passes a compile runs, as one named list (MLIR's pass pipeline; `ipucc compile
// --dump-ir-after NAME` prints the IR after one, as MLIR's -mlir-print-ir-after does).
#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include "compiler/driver/compile_internal.h"
#include "compiler/passes/fuse_epilogues.h"
#include "compiler/passes/fuse_gelu.h"
#include "compiler/passes/fuse_layer_norm.h"
#include "compiler/passes/fuse_silu.h"
#include "compiler/passes/graph_loss.h"
#include "compiler/passes/mixed_precision.h"
#include "compiler/passes/output_logits.h"
#include "compiler/passes/recompute.h"

namespace ipu::compiler {
namespace {

// What the passes share: the model they change, and what they find out for the lowering and the
// executable.
struct PassState {
  Model& model;
  const CompileOptions& options;
  uint32_t stages;
  GraphPassesResult& result;
  std::optional<passes::LossValues> graph_loss; // bind-graph-loss's, when the graph computes its loss
  passes::LossValues loss;                      // training: the loss and metrics, from either pass
  bool training() const { return options.mode == Mode::kTrain; }
  ir::Graph& graph() { return model.forward.graph; }
};

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
Status bind_graph_loss(PassState& state) {
  const Model& model = state.model;
  const CompileOptions& options = state.options;
  frontend::ForwardGraph& forward = state.model.forward;
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
  state.graph_loss = bound->values;
  return Status();
}

// The model's inputs and outputs as the program streams them; training checks it has one of
// each and a batched input.
Status bind_interface(PassState& state) {
  const frontend::ForwardGraph& forward = state.model.forward;
  const CompileOptions& options = state.options;
  lowering::GraphInterface& io = state.result.io;
  for (const auto& in : forward.inputs)
    io.inputs.push_back({in.value, in.name, in.dtype, in.batched});
  for (const auto& out : forward.outputs)
    io.outputs.push_back({out.value, out.name, out.dtype, out.batched});
  if (!state.training()) return Status();
  if (io.inputs.size() != 1 || io.outputs.size() != 1) {
    return unsupported(options.model_path +
                       ": training needs a model with one input (the features) and one output (the "
                       "scores the loss reads); this one has " +
                       std::to_string(io.inputs.size()) + " input(s) and " +
                       std::to_string(io.outputs.size()) + " output(s) (--mode infer runs it)");
  }
  if (!forward.inputs[0].batched) {
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
  return Status();
}

Status add_loss(PassState& state) {
  const int scores = scores_for_loss(state.model.forward, state.model.loss, state.result.loss_note);
  IPU_ASSIGN_OR_RETURN(state.loss,
                       passes::add_loss(state.graph(), scores, state.model.loss, state.model.metrics));
  return Status();
}

Status add_gradients_and_updates(PassState& state) {
  if (state.graph_loss) state.loss = *state.graph_loss;
  const passes::OptimizerConfig& optimizer = state.model.optimizer;
  GraphPassesResult& result = state.result;
  const CompileOptions& options = state.options;
  IPU_ASSIGN_OR_RETURN(
      result.io.accumulators,
      passes::add_gradients_and_updates(state.graph(), state.loss.loss, optimizer,
                                        {options.gradient_accumulation, options.replicas, state.stages}));
  // SparseCrossEntropy and DenseLoss skip padding rows; a loss the graph computes cannot.
  const ir::Graph& graph = state.graph();
  const ir::OpKind loss_kind = graph.op(graph.value(state.loss.loss).producer).kind;
  result.loss_counts_padding =
      loss_kind != ir::OpKind::kSparseCrossEntropy && loss_kind != ir::OpKind::kDenseLoss;
  const auto& ops = graph.ops();
  if (state.graph_loss &&
      std::none_of(ops.begin(), ops.end(), [](const ir::Op& op) { return op.phase == ir::Phase::kUpdate; })) {
    return invalid_argument(options.model_path + ": the loss '" + state.model.loss_output +
                            "' has no gradient path to any weight: nothing would train");
  }
  result.io.loss = state.loss;
  result.hyper_parameters = passes::hyper_parameters_read(optimizer);
  result.learning_rate_schedule = optimizer.learning_rate_schedule;
  return Status();
}

// The fusions leave the values the program streams unfused.
std::vector<int> interface_values(const lowering::GraphInterface& io) {
  std::vector<int> values;
  for (const lowering::IoBinding& b : io.inputs)
    values.push_back(b.value);
  for (const lowering::IoBinding& b : io.outputs)
    values.push_back(b.value);
  return values;
}

// A fusion as a pass: `fuse` over the whole graph (how many it fused goes unused).
template <int (*fuse)(ir::Graph&, const std::vector<int>&)> Status run_fusion(PassState& state) {
  fuse(state.graph(), interface_values(state.result.io));
  return Status();
}

Status recompute_forward(PassState& state) {
  const StatusOr<passes::RecomputeSummary> recomputed =
      passes::recompute_forward(state.graph(), {state.options.recompute_checkpoints});
  if (!recomputed.ok()) return recomputed.status().with_context(state.options.model_path);
  return Status();
}

struct GraphPass {
  GraphPassInfo info;
  bool (*applies)(const PassState&);
  Status (*run)(PassState&);
};

bool always(const PassState&) {
  return true;
}
bool training(const PassState& state) {
  return state.training();
}

// In order. Autodiff takes gradients of the unfused graph, so the fusions come after it; the
// recomputation after them, so a recomputed op is a fused one (a pipeline recomputes whole stages
// in its schedule, not here).
constexpr std::array kGraphPasses = {
    GraphPass{
        {"bind-graph-loss", "when training on a loss the graph computes (an ONNX loss node, --loss-output)"},
        [](const PassState& s) { return s.training() && !s.model.loss_output.empty(); },
        bind_graph_loss},
    GraphPass{{"half-weight-copies", "with --precision mixed"},
              [](const PassState& s) { return s.options.precision == lowering::Precision::kMixed; },
              [](PassState& s) { return passes::add_half_weight_copies(s.graph()); }},
    GraphPass{{"bind-interface", "on every model"}, always, bind_interface},
    GraphPass{{"add-loss", "when training on a loss the graph does not compute"},
              [](const PassState& s) { return s.training() && !s.graph_loss; },
              add_loss},
    GraphPass{{"autodiff", "when training"}, training, add_gradients_and_updates},
    GraphPass{
        {"fp32-output-softmax", "when training in fp16 or mixed precision"},
        [](const PassState& s) { return s.training() && s.options.precision != lowering::Precision::kFp32; },
        [](PassState& s) {
          passes::keep_output_softmax_float32(s.graph(), s.loss.loss);
          return Status();
        }},
    GraphPass{{"fuse-epilogues", "on every model"}, always, run_fusion<passes::fuse_epilogues>},
    GraphPass{{"fuse-gelu", "on every model"}, always, run_fusion<passes::fuse_gelu>},
    GraphPass{{"fuse-silu", "on every model"}, always, run_fusion<passes::fuse_silu>},
    GraphPass{{"fuse-layer-norm", "on every model"}, always, run_fusion<passes::fuse_layer_norm>},
    GraphPass{{"recompute", "when training with --recompute on one pipeline stage"},
              [](const PassState& s) { return s.training() && s.options.recompute && s.stages == 1; },
              recompute_forward},
};

bool dump_after(const CompileOptions& options, std::string_view pass) {
  const std::vector<std::string>& names = options.dump_ir_after;
  return std::find(names.begin(), names.end(), "all") != names.end() ||
         std::find(names.begin(), names.end(), pass) != names.end();
}

} // namespace

std::vector<GraphPassInfo> graph_passes() {
  std::vector<GraphPassInfo> infos;
  infos.reserve(kGraphPasses.size());
  for (const GraphPass& pass : kGraphPasses)
    infos.push_back(pass.info);
  return infos;
}

StatusOr<GraphPassesResult> run_graph_passes(Model& model, const CompileOptions& options, uint32_t stages) {
  GraphPassesResult result;
  PassState state{model, options, stages, result, std::nullopt, {}};
  for (const GraphPass& pass : kGraphPasses) {
    GraphPassRun& run = result.runs.emplace_back();
    run.name = pass.info.name;
    run.ran = pass.applies(state);
    if (!run.ran) continue;
    const auto start = std::chrono::steady_clock::now();
    IPU_RETURN_IF_ERROR(pass.run(state));
    run.seconds = seconds_since(start);
    if (dump_after(options, pass.info.name)) run.ir_after = model.forward.graph.to_string();
  }
  return result;
}

} // namespace ipu::compiler
