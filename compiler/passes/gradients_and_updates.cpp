// add_gradients_and_updates (training.h): reverse-mode autodiff of the loss, then each weight's
// update by the optimizer, with loss scaling, clipping and accumulation between them.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "compiler/ir/op_registry.h"
#include "compiler/passes/clip_gradients.h"
#include "compiler/passes/lamb_update.h"
#include "compiler/passes/loss_scaling.h"
#include "compiler/passes/training.h"

namespace ipu::passes {
namespace {

// What a weight's update is named, shaped and placed after: copied, as adding values may move the
// graph's, but not its initial values (a BERT weight's are megabytes).
struct WeightInfo {
  std::string name;
  ir::TensorType type;
  int stage = 0;
};

WeightInfo weight_info(const ir::Graph& graph, int w) {
  const ir::Value& v = graph.value(w);
  return {v.name, v.type, v.stage};
}

// SparseCrossEntropy and DenseLoss start the chain rule themselves; any other loss (one the
// model's graph computes) is given d loss / d loss = 1. Returns that seed, or -1.
int add_gradient_seed(ir::Graph& graph, int loss) {
  const ir::OpKind loss_kind = graph.op(graph.value(loss).producer).kind;
  if (loss_kind == ir::OpKind::kSparseCrossEntropy || loss_kind == ir::OpKind::kDenseLoss) return -1;
  const ir::Value& loss_value = graph.value(loss);
  const ir::TensorType type = loss_value.type;
  const int stage = loss_value.stage;
  const int seed = graph.add_value(loss_value.name + "/gradient_seed", type, ir::Role::kConstant);
  graph.value(seed).initial.assign(static_cast<size_t>(type.elements()), 1.0f);
  graph.value(seed).stage = stage;
  return seed;
}

// A value needs a gradient when it depends on a weight; data inputs and labels do not.
std::vector<bool> values_needing_gradients(const ir::Graph& graph) {
  std::vector<bool> needs(graph.values().size(), false);
  for (int w : graph.values_with_role(ir::Role::kWeight))
    needs[static_cast<size_t>(w)] = true;
  for (const ir::Op& op : graph.ops()) {
    bool any = false;
    for (int in : op.inputs)
      any = any || needs[static_cast<size_t>(in)];
    for (int out : op.outputs)
      needs[static_cast<size_t>(out)] = any;
  }
  return needs;
}

// The values each pipeline stage's updates and loss scaling read, added on first use.
class StageTensors {
public:
  StageTensors(ir::Graph& graph, const OptimizerConfig& config) : m_graph(graph), m_config(config) {}

  // One hyper-parameter tensor per pipeline stage, beside the updates that read it; stage 0's
  // always exists, since the host streams into it and the program copies it to the others.
  int hyper_parameters(int stage) {
    auto found = m_hyper_of_stage.find(stage);
    if (found != m_hyper_of_stage.end()) return found->second;
    std::string name(format::kHyperParametersTensor);
    if (stage != 0) name += "@" + std::to_string(stage);
    const int value = m_graph.add_value(name, {ir::DType::kFloat32, {int64_t{format::kHyperParameterCount}}},
                                        ir::Role::kHyperParameters);
    const auto defaults = hyper_parameter_values(m_config);
    m_graph.value(value).initial.assign(defaults.begin(), defaults.end());
    m_graph.value(value).stage = stage;
    m_hyper_of_stage[stage] = value;
    return value;
  }
  bool has_hyper_parameters() const { return !m_hyper_of_stage.empty(); }

  // What loss scaling reads the scale from on each stage: the streamed hyper-parameters (static)
  // or the stage's dynamic state.
  int scale_source(int stage) {
    if (!dynamic_loss_scaling()) return hyper_parameters(stage);
    auto found = m_state_of_stage.find(stage);
    if (found == m_state_of_stage.end())
      found = m_state_of_stage
                  .emplace(stage, add_loss_scale_state(m_graph, stage, m_config.loss_scaling.initial_scale))
                  .first;
    return found->second;
  }
  bool dynamic_loss_scaling() const { return m_config.loss_scaling.mode == LossScalingMode::kDynamic; }
  const std::map<int, int>& loss_scale_states() const { return m_state_of_stage; }

private:
  ir::Graph& m_graph;
  const OptimizerConfig& m_config;
  std::map<int, int> m_hyper_of_stage;
  std::map<int, int> m_state_of_stage;
};

// Optimizer state and accumulators are named after their weight ("w/momentum"), unless a
// model value already has that name (an ONNX initializer "b/momentum" beside a weight "b"):
// weights and state travel to the host and into checkpoints by name, so no two may share one.
class StateNames {
public:
  explicit StateNames(const ir::Graph& graph) {
    for (const ir::Value& v : graph.values())
      m_names.insert(v.name);
  }

  std::string name(const std::string& weight, const char* suffix) {
    std::string name = weight + suffix;
    for (int n = 2; m_names.count(name) > 0; ++n)
      name = weight + suffix + "#" + std::to_string(n);
    m_names.insert(name);
    return name;
  }

private:
  std::set<std::string> m_names;
};

// Gradient rules append ops, so walk the forward and loss ops by index, newest first. With loss
// scaling, the loss's gradient is scaled.
Status add_gradient_ops(ir::GradContext& context, ir::Graph& graph, int loss_op,
                        const OptimizerConfig& config, StageTensors& stage_tensors) {
  for (int id = loss_op; id >= 0; --id) {
    const ir::Op op = graph.op(id); // a copy: add_op may reallocate the op list
    if (op.phase != ir::Phase::kForward && op.phase != ir::Phase::kLoss) continue;
    const ir::OpDef& def = ir::op_def(op.kind);
    if (def.gradient == nullptr) continue;
    IPU_RETURN_IF_ERROR(def.gradient(context, op));
    if (id == loss_op && config.loss_scaling.mode != LossScalingMode::kNone) {
      stage_tensors.hyper_parameters(0); // the one the host streams into, first
      IPU_RETURN_IF_ERROR(scale_loss_gradient(context, op, stage_tensors.scale_source(op.stage)));
    }
  }
  return Status();
}

// Loss scaling divides the gradients the updates read by the scale (and, dynamic, adds the
// scale's update); clipping by global norm then clips them.
Status unscale_and_clip(ir::Graph& graph, const OptimizerConfig& config, float gradient_scale,
                        const std::vector<int>& accumulators, StageTensors& stage_tensors,
                        std::vector<std::pair<int, int>>& updates) {
  if (config.loss_scaling.mode != LossScalingMode::kNone) {
    std::vector<int> gradients;
    gradients.reserve(updates.size());
    for (const auto& [w, gradient] : updates)
      gradients.push_back(gradient);
    IPU_ASSIGN_OR_RETURN(std::vector<int> unscaled, unscale_gradients(graph, gradients, [&](int stage) {
                           return stage_tensors.scale_source(stage);
                         }));
    for (size_t i = 0; i < updates.size(); ++i)
      updates[i].second = unscaled[i];
    if (stage_tensors.dynamic_loss_scaling()) {
      IPU_RETURN_IF_ERROR(add_dynamic_loss_scale_update(graph, unscaled, accumulators,
                                                        stage_tensors.loss_scale_states(),
                                                        config.loss_scaling.growth_steps));
    }
  }
  if (config.global_clipnorm > 0.0f) {
    std::vector<int> gradients;
    gradients.reserve(updates.size());
    for (const auto& [w, gradient] : updates)
      gradients.push_back(gradient);
    IPU_ASSIGN_OR_RETURN(std::vector<int> clipped,
                         clip_by_global_norm(graph, gradients, gradient_scale, config.global_clipnorm));
    for (size_t i = 0; i < updates.size(); ++i)
      updates[i].second = clipped[i];
  }
  return Status();
}

// The update of weight `w` from `gradient` by the configured optimizer, and its state.
Status add_weight_update(ir::Graph& graph, int w, int gradient, const OptimizerConfig& config,
                         float gradient_scale, bool clear_gradient, StateNames& names,
                         StageTensors& stage_tensors) {
  const WeightInfo weight = weight_info(graph, w);
  // Optimizer state starts at `initial` (zero unless given), shaped like its weight unless
  // given a shape.
  auto add_state = [&](const char* suffix, const ir::TensorType& type, float initial = 0.0f) {
    const int state = graph.add_value(names.name(weight.name, suffix), type, ir::Role::kOptimizerState);
    if (initial != 0.0f || std::signbit(initial))
      graph.value(state).initial.assign(static_cast<size_t>(type.elements()), initial);
    graph.value(state).stage = weight.stage;
    return state;
  };
  // One step count per weight, as torch keeps one per parameter: each lives beside its
  // weight's update (on its pipeline stage), and a checkpoint carries it with the moments.
  const ir::TensorType step_type{ir::DType::kFloat32, {1}};
  std::vector<int> inputs = {w, gradient};
  auto add_update = [&](ir::OpKind kind, const ir::OpAttrs& attrs) {
    inputs.push_back(stage_tensors.hyper_parameters(weight.stage));
    return graph.add_op(kind, weight.name + "/update", inputs, attrs, ir::Phase::kUpdate, weight.stage)
        .status();
  };
  if (!stage_tensors.has_hyper_parameters()) stage_tensors.hyper_parameters(0);
  switch (config.kind) {
  case OptimizerKind::kSgd: {
    ir::SgdUpdateAttrs attrs;
    attrs.has_momentum = config.momentum != 0.0f;
    attrs.has_dampening = attrs.has_momentum && config.dampening != 0.0f;
    attrs.has_weight_decay = config.weight_decay != 0.0f;
    attrs.nesterov = config.nesterov;
    attrs.gradient_scale = gradient_scale;
    attrs.clear_gradient = clear_gradient;
    if (attrs.has_momentum) {
      inputs.push_back(add_state("/momentum", weight.type));
      // torch's first step is undampened, so with dampening the update must know the step.
      if (attrs.has_dampening) inputs.push_back(add_state("/momentum_step", step_type));
    }
    IPU_RETURN_IF_ERROR(add_update(ir::OpKind::kSgdUpdate, attrs));
    break;
  }
  case OptimizerKind::kAdam:
  case OptimizerKind::kAdamW: {
    ir::AdamUpdateAttrs attrs;
    attrs.decoupled_weight_decay = config.kind == OptimizerKind::kAdamW;
    attrs.gradient_scale = gradient_scale;
    attrs.clear_gradient = clear_gradient;
    inputs.push_back(add_state("/adam_m", weight.type));
    inputs.push_back(add_state("/adam_v", weight.type));
    inputs.push_back(add_state("/adam_step", step_type));
    IPU_RETURN_IF_ERROR(add_update(ir::OpKind::kAdamUpdate, attrs));
    break;
  }
  case OptimizerKind::kRmsProp: {
    ir::RmsPropUpdateAttrs attrs;
    attrs.has_momentum = config.momentum != 0.0f;
    attrs.centered = config.centered;
    attrs.gradient_scale = gradient_scale;
    attrs.clear_gradient = clear_gradient;
    inputs.push_back(add_state("/rmsprop_v", weight.type));
    if (attrs.has_momentum) inputs.push_back(add_state("/rmsprop_momentum", weight.type));
    if (config.centered) inputs.push_back(add_state("/rmsprop_mean_grad", weight.type));
    IPU_RETURN_IF_ERROR(add_update(ir::OpKind::kRmsPropUpdate, attrs));
    break;
  }
  case OptimizerKind::kAdagrad:
  case OptimizerKind::kAdaMax: {
    ir::AdaptiveUpdateAttrs attrs;
    attrs.gradient_scale = gradient_scale;
    attrs.clear_gradient = clear_gradient;
    if (config.kind == OptimizerKind::kAdagrad) {
      inputs.push_back(add_state("/adagrad_sum", weight.type, config.initial_accumulator_value));
      IPU_RETURN_IF_ERROR(add_update(ir::OpKind::kAdagradUpdate, attrs));
    } else {
      inputs.push_back(add_state("/adamax_m", weight.type));
      inputs.push_back(add_state("/adamax_u", weight.type));
      inputs.push_back(add_state("/adamax_step", step_type));
      IPU_RETURN_IF_ERROR(add_update(ir::OpKind::kAdaMaxUpdate, attrs));
    }
    break;
  }
  case OptimizerKind::kLamb: {
    ir::LambAttrs attrs;
    attrs.gradient_scale = gradient_scale;
    attrs.clear_gradient = clear_gradient;
    const int m = add_state("/lamb_m", weight.type);
    const int v = add_state("/lamb_v", weight.type);
    const int step = add_state("/lamb_step", step_type);
    IPU_RETURN_IF_ERROR(
        add_lamb_update(graph, w, gradient, m, v, step, stage_tensors.hyper_parameters(weight.stage), attrs));
    break;
  }
  }
  return Status();
}

} // namespace

StatusOr<std::vector<int>> add_gradients_and_updates(ir::Graph& graph, int loss,
                                                     const OptimizerConfig& config,
                                                     const AccumulationConfig& accumulation) {
  const int loss_op = graph.value(loss).producer;
  const int seed = add_gradient_seed(graph, loss);
  StageTensors stage_tensors(graph, config);
  ir::GradContext context(graph);
  context.set_needs_gradient(values_needing_gradients(graph));
  if (seed >= 0) IPU_RETURN_IF_ERROR(context.add_gradient(loss, seed));
  IPU_RETURN_IF_ERROR(add_gradient_ops(context, graph, loss_op, config, stage_tensors));

  StateNames names(graph);
  // Replicas average their accumulators before the update; the update averages the micro-batches.
  const bool accumulate = accumulation.enabled();
  const float gradient_scale = accumulate ? 1.0f / static_cast<float>(accumulation.micro_batches) : 1.0f;
  const bool clear_gradient = accumulate;
  std::vector<int> accumulators;
  std::vector<std::pair<int, int>> updates; // (weight, the gradient its update reads)
  for (int w : graph.values_with_role(ir::Role::kWeight)) {
    int gradient = context.gradient_of(w);
    if (gradient < 0) continue; // a weight the loss does not depend on stays as it is
    // In fp16 and mixed precision, what the update reads stays fp32 (docs/training.md).
    graph.value(gradient).keeps_float32 = true;
    const WeightInfo weight = weight_info(graph, w);
    if (accumulate) {
      const int acc =
          graph.add_value(names.name(weight.name, "/accumulator"), weight.type, ir::Role::kAccumulator);
      graph.value(acc).stage = weight.stage;
      IPU_RETURN_IF_ERROR(graph
                              .add_op(ir::OpKind::kAccumulateGrad, weight.name + "/accumulate",
                                      {acc, gradient}, {}, ir::Phase::kBackward, weight.stage)
                              .status());
      accumulators.push_back(acc);
      gradient = acc;
    }
    updates.emplace_back(w, gradient);
  }
  IPU_RETURN_IF_ERROR(unscale_and_clip(graph, config, gradient_scale, accumulators, stage_tensors, updates));
  for (const auto& [w, gradient] : updates) {
    IPU_RETURN_IF_ERROR(
        add_weight_update(graph, w, gradient, config, gradient_scale, clear_gradient, names, stage_tensors));
  }
  return accumulators;
}

} // namespace ipu::passes
