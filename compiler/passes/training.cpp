#include "compiler/passes/training.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "compiler/ir/op_registry.h"
#include "compiler/passes/clip_gradients.h"
#include "compiler/passes/lamb_update.h"
#include "compiler/passes/loss_scaling.h"

namespace ipu::passes {

std::optional<OptimizerKind> optimizer_kind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "adamw") return OptimizerKind::kAdamW;
  if (name == "rmsprop") return OptimizerKind::kRmsProp;
  if (name == "adagrad") return OptimizerKind::kAdagrad;
  if (name == "adamax") return OptimizerKind::kAdaMax;
  if (name == "lamb") return OptimizerKind::kLamb;
  return std::nullopt;
}

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::kSgd:
    return "sgd";
  case OptimizerKind::kAdam:
    return "adam";
  case OptimizerKind::kAdamW:
    return "adamw";
  case OptimizerKind::kRmsProp:
    return "rmsprop";
  case OptimizerKind::kAdagrad:
    return "adagrad";
  case OptimizerKind::kAdaMax:
    return "adamax";
  case OptimizerKind::kLamb:
    return "lamb";
  }
  return "?";
}

OptimizerConfig default_optimizer(OptimizerKind kind) {
  OptimizerConfig config;
  config.kind = kind;
  if (kind != OptimizerKind::kSgd) config.learning_rate = 0.001f;
  if (kind == OptimizerKind::kAdamW) config.weight_decay = 0.004f;
  if (kind == OptimizerKind::kLamb) config.epsilon = 1e-6f;
  return config;
}

std::optional<LossScalingMode> loss_scaling_mode(const std::string& name) {
  if (name == "none") return LossScalingMode::kNone;
  if (name == "static") return LossScalingMode::kStatic;
  if (name == "dynamic") return LossScalingMode::kDynamic;
  return std::nullopt;
}

const char* loss_scaling_mode_name(LossScalingMode mode) {
  switch (mode) {
  case LossScalingMode::kNone:
    return "none";
  case LossScalingMode::kStatic:
    return "static";
  case LossScalingMode::kDynamic:
    return "dynamic";
  }
  return "?";
}

std::vector<std::string> hyper_parameters_read(const OptimizerConfig& config) {
  using H = format::HyperParameter;
  std::vector<H::Index> read = {H::kLearningRate};
  switch (config.kind) {
  case OptimizerKind::kSgd: {
    const bool plain = config.dampening == 0.0f && !config.nesterov && config.weight_decay == 0.0f;
    if (config.momentum != 0.0f) read.push_back(H::kMomentum);
    if (config.momentum != 0.0f && config.dampening != 0.0f) read.push_back(H::kDampening);
    if (!plain) read.push_back(H::kWeightDecay);
    break;
  }
  case OptimizerKind::kAdam:
  case OptimizerKind::kAdamW:
  case OptimizerKind::kAdaMax:
  case OptimizerKind::kLamb:
    read.insert(read.end(), {H::kBeta1, H::kBeta2, H::kEpsilon, H::kWeightDecay});
    break;
  case OptimizerKind::kRmsProp:
    read.push_back(H::kRho);
    if (config.momentum != 0.0f) read.push_back(H::kMomentum);
    read.insert(read.end(), {H::kEpsilon, H::kWeightDecay});
    break;
  case OptimizerKind::kAdagrad:
    read.insert(read.end(), {H::kEpsilon, H::kWeightDecay});
    break;
  }
  if (config.loss_scaling.mode == LossScalingMode::kStatic) read.push_back(H::kLossScale);
  std::vector<std::string> names;
  names.reserve(read.size());
  for (H::Index slot : read)
    names.emplace_back(format::kHyperParameterNames[slot]);
  return names;
}

std::array<float, format::kHyperParameterCount> hyper_parameter_values(const OptimizerConfig& config) {
  using H = format::HyperParameter;
  std::array<float, format::kHyperParameterCount> all{};
  all[H::kLearningRate] = config.learning_rate;
  all[H::kMomentum] = config.momentum;
  all[H::kDampening] = config.dampening;
  all[H::kWeightDecay] = config.weight_decay;
  all[H::kBeta1] = config.beta_1;
  all[H::kBeta2] = config.beta_2;
  all[H::kEpsilon] = config.epsilon;
  all[H::kRho] = config.rho;
  all[H::kLossScale] = config.loss_scaling.initial_scale;
  std::array<float, format::kHyperParameterCount> values{};
  for (const std::string& name : hyper_parameters_read(config)) {
    for (uint32_t slot = 0; slot < format::kHyperParameterCount; ++slot) {
      if (format::kHyperParameterNames[slot] == name) values[slot] = all[slot];
    }
  }
  return values;
}

std::optional<LossKind> loss_kind(const std::string& name) {
  if (name == "sparse_categorical_crossentropy") return LossKind::kSparseCategoricalCrossEntropy;
  if (name == "categorical_crossentropy") return LossKind::kCategoricalCrossEntropy;
  if (name == "binary_crossentropy") return LossKind::kBinaryCrossEntropy;
  if (name == "mean_squared_error" || name == "mse") return LossKind::kMeanSquaredError;
  if (name == "mean_absolute_error" || name == "mae") return LossKind::kMeanAbsoluteError;
  if (name == "huber") return LossKind::kHuber;
  return std::nullopt;
}

const char* loss_name(LossKind kind) {
  switch (kind) {
  case LossKind::kSparseCategoricalCrossEntropy:
    return "sparse_categorical_crossentropy";
  case LossKind::kCategoricalCrossEntropy:
    return "categorical_crossentropy";
  case LossKind::kBinaryCrossEntropy:
    return "binary_crossentropy";
  case LossKind::kMeanSquaredError:
    return "mean_squared_error";
  case LossKind::kMeanAbsoluteError:
    return "mean_absolute_error";
  case LossKind::kHuber:
    return "huber";
  }
  return "?";
}

const char* loss_names() {
  return "sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, "
         "mean_squared_error (mse), mean_absolute_error (mae) or huber";
}

bool loss_has_from_logits(LossKind kind) {
  return kind == LossKind::kSparseCategoricalCrossEntropy || kind == LossKind::kCategoricalCrossEntropy ||
         kind == LossKind::kBinaryCrossEntropy;
}

namespace {

format::LossKind dense_loss_kind(LossKind kind) {
  switch (kind) {
  case LossKind::kBinaryCrossEntropy:
    return format::LossKind::kBinaryCrossEntropy;
  case LossKind::kMeanSquaredError:
    return format::LossKind::kMeanSquaredError;
  case LossKind::kMeanAbsoluteError:
    return format::LossKind::kMeanAbsoluteError;
  case LossKind::kHuber:
    return format::LossKind::kHuber;
  default:
    return format::LossKind::kCategoricalCrossEntropy;
  }
}

} // namespace

StatusOr<MetricConfig> parse_metric(const std::string& text) {
  MetricConfig metric;
  if (text == "accuracy" || text == "acc") return metric;
  if (text == "mse" || text == "mean_squared_error") return MetricConfig{MetricKind::kMeanSquaredError};
  if (text == "mae" || text == "mean_absolute_error") return MetricConfig{MetricKind::kMeanAbsoluteError};
  metric.kind = MetricKind::kSparseTopK;
  if (text == "sparse_top_k_categorical_accuracy" || text == "top_k") return metric;
  const std::string prefix = "top_k:";
  if (text.rfind(prefix, 0) == 0) {
    const std::string k = text.substr(prefix.size());
    if (!k.empty() && k.size() <= 6 && k.find_first_not_of("0123456789") == std::string::npos &&
        std::stoll(k) >= 1) {
      metric.k = std::stoll(k);
      return metric;
    }
    return invalid_argument("metric '" + text + "': k must be an integer from 1 to 999999");
  }
  return invalid_argument("unknown metric '" + text +
                          "' (accuracy, sparse_top_k_categorical_accuracy or top_k[:K], mse, mae)");
}

StatusOr<std::vector<MetricConfig>> parse_metric_list(const std::string& text) {
  std::vector<MetricConfig> metrics;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    IPU_ASSIGN_OR_RETURN(MetricConfig metric, parse_metric(text.substr(begin, end - begin)));
    for (const MetricConfig& earlier : metrics) {
      if (earlier.kind == metric.kind)
        return invalid_argument(std::string("metric '") + metric_name(metric.kind) + "' is given twice");
    }
    metrics.push_back(metric);
    begin = end + 1;
  }
  return metrics;
}

const char* metric_name(MetricKind kind) {
  switch (kind) {
  case MetricKind::kAccuracy:
    return "accuracy";
  case MetricKind::kSparseTopK:
    return "sparse_top_k_categorical_accuracy";
  case MetricKind::kMeanSquaredError:
    return "mse";
  case MetricKind::kMeanAbsoluteError:
    return "mae";
  }
  return "?";
}

std::string metric_list_text(const std::vector<MetricConfig>& metrics) {
  std::string text;
  for (const MetricConfig& m : metrics) {
    text += text.empty() ? "" : ",";
    text += m.kind == MetricKind::kSparseTopK ? "top_k:" + std::to_string(m.k) : metric_name(m.kind);
  }
  return text;
}

std::vector<MetricConfig> default_metrics(LossKind kind) {
  if (loss_has_from_logits(kind)) return {MetricConfig{MetricKind::kAccuracy}};
  return {};
}

StatusOr<LossValues> add_loss(ir::Graph& graph, int scores, const LossConfig& config,
                              const std::vector<MetricConfig>& metrics, int labels) {
  const ir::TensorType& type = graph.value(scores).type;
  const bool sparse = config.kind == LossKind::kSparseCategoricalCrossEntropy;
  if (type.shape.size() != 2) {
    return invalid_argument("the model output '" + graph.value(scores).name + "' must be " +
                            (sparse ? "[batch, classes]" : "[batch, outputs]") + " for " +
                            loss_name(config.kind) + ", got " + type.to_string());
  }
  for (const MetricConfig& metric : metrics) {
    const std::string refused = std::string("metric '") + metric_name(metric.kind) + "' ";
    if (metric.kind == MetricKind::kAccuracy && !loss_has_from_logits(config.kind)) {
      return invalid_argument(refused + "is the accuracy of a cross-entropy; the loss is " +
                              loss_name(config.kind));
    }
    if (metric.kind == MetricKind::kSparseTopK && !sparse) {
      return invalid_argument(refused +
                              "needs class indices (sparse_categorical_crossentropy); the loss is " +
                              loss_name(config.kind));
    }
    if ((metric.kind == MetricKind::kMeanSquaredError || metric.kind == MetricKind::kMeanAbsoluteError) &&
        sparse) {
      return invalid_argument(refused +
                              "needs float labels; sparse_categorical_crossentropy takes class indices");
    }
  }
  LossValues out;
  const int stage = graph.value(scores).stage;
  const ir::TensorType labels_type = sparse ? ir::TensorType{ir::DType::kInt32, {type.shape[0]}} : type;
  if (labels >= 0) {
    out.labels = labels;
    graph.value(labels).type = labels_type;
    graph.value(labels).role = ir::Role::kLabel;
  } else {
    out.labels = graph.add_value("labels", labels_type, ir::Role::kLabel);
  }
  graph.value(out.labels).stage = stage;
  auto add_scalar = [&](ir::OpKind kind, const std::string& name, const ir::OpAttrs& attrs) -> StatusOr<int> {
    IPU_ASSIGN_OR_RETURN(int op,
                         graph.add_op(kind, name, {scores, out.labels}, attrs, ir::Phase::kLoss, stage));
    return graph.op(op).outputs[0];
  };
  ir::DenseLossAttrs dense;
  dense.kind = dense_loss_kind(config.kind);
  dense.from_logits = loss_has_from_logits(config.kind) && config.from_logits;
  dense.delta = config.delta;
  if (sparse) {
    ir::CrossEntropyAttrs attrs;
    attrs.from_logits = config.from_logits;
    IPU_ASSIGN_OR_RETURN(out.loss, add_scalar(ir::OpKind::kSparseCrossEntropy, "loss", attrs));
  } else {
    IPU_ASSIGN_OR_RETURN(out.loss, add_scalar(ir::OpKind::kDenseLoss, "loss", dense));
  }
  for (const MetricConfig& metric : metrics) {
    int sum = -1;
    if (metric.kind == MetricKind::kAccuracy) {
      IPU_ASSIGN_OR_RETURN(sum, sparse ? add_scalar(ir::OpKind::kCountCorrect, "correct", ir::NoAttrs{})
                                       : add_scalar(ir::OpKind::kDenseCorrect, "correct", dense));
      out.correct = sum;
    } else {
      ir::MetricAttrs attrs;
      attrs.kind = metric.kind == MetricKind::kSparseTopK         ? format::MetricKind::kSparseTopK
                   : metric.kind == MetricKind::kMeanSquaredError ? format::MetricKind::kMeanSquaredError
                                                                  : format::MetricKind::kMeanAbsoluteError;
      attrs.k = metric.k;
      IPU_ASSIGN_OR_RETURN(
          sum, add_scalar(ir::OpKind::kMetricSum, std::string("metric/") + metric_name(metric.kind), attrs));
      out.metrics.push_back({metric_name(metric.kind), sum});
    }
    graph.value(sum).role = ir::Role::kMetric;
  }
  return out;
}

StatusOr<std::vector<int>> add_gradients_and_updates(ir::Graph& graph, int loss,
                                                     const OptimizerConfig& config,
                                                     const AccumulationConfig& accumulation) {
  // SparseCrossEntropy and DenseLoss start the chain rule themselves; any other loss (one the
  // model's graph computes) is given d loss / d loss = 1.
  const int loss_op = graph.value(loss).producer;
  const ir::OpKind loss_kind = graph.op(loss_op).kind;
  int seed = -1;
  if (loss_kind != ir::OpKind::kSparseCrossEntropy && loss_kind != ir::OpKind::kDenseLoss) {
    const ir::Value& loss_value = graph.value(loss);
    const ir::TensorType type = loss_value.type;
    const int stage = loss_value.stage;
    seed = graph.add_value(loss_value.name + "/gradient_seed", type, ir::Role::kConstant);
    graph.value(seed).initial.assign(static_cast<size_t>(type.elements()), 1.0f);
    graph.value(seed).stage = stage;
  }
  // A value needs a gradient when it depends on a weight; data inputs and labels do not.
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

  // One hyper-parameter tensor per pipeline stage, beside the updates that read it; stage 0's
  // always exists, since the host streams into it and the program copies it to the others.
  std::map<int, int> hyper_of_stage;
  auto hyper_parameters = [&](int stage) {
    auto found = hyper_of_stage.find(stage);
    if (found != hyper_of_stage.end()) return found->second;
    std::string name(format::kHyperParametersTensor);
    if (stage != 0) name += "@" + std::to_string(stage);
    const int value = graph.add_value(name, {ir::DType::kFloat32, {int64_t{format::kHyperParameterCount}}},
                                      ir::Role::kHyperParameters);
    const auto defaults = hyper_parameter_values(config);
    graph.value(value).initial.assign(defaults.begin(), defaults.end());
    graph.value(value).stage = stage;
    hyper_of_stage[stage] = value;
    return value;
  };
  // What loss scaling reads the scale from on each stage: the streamed hyper-parameters (static)
  // or the stage's dynamic state.
  const bool dynamic = config.loss_scaling.mode == LossScalingMode::kDynamic;
  std::map<int, int> state_of_stage;
  auto scale_source = [&](int stage) {
    if (!dynamic) return hyper_parameters(stage);
    auto found = state_of_stage.find(stage);
    if (found == state_of_stage.end())
      found =
          state_of_stage.emplace(stage, add_loss_scale_state(graph, stage, config.loss_scaling.initial_scale))
              .first;
    return found->second;
  };
  ir::GradContext context(graph);
  context.set_needs_gradient(needs);
  if (seed >= 0) IPU_RETURN_IF_ERROR(context.add_gradient(loss, seed));
  // Gradient rules append ops, so walk the forward and loss ops by index, newest first.
  for (int id = loss_op; id >= 0; --id) {
    const ir::Op op = graph.op(id); // a copy: add_op may reallocate the op list
    if (op.phase != ir::Phase::kForward && op.phase != ir::Phase::kLoss) continue;
    const ir::OpDef& def = ir::op_def(op.kind);
    if (def.gradient == nullptr) continue;
    IPU_RETURN_IF_ERROR(def.gradient(context, op));
    if (id == loss_op && config.loss_scaling.mode != LossScalingMode::kNone) {
      hyper_parameters(0); // the one the host streams into, first
      IPU_RETURN_IF_ERROR(scale_loss_gradient(context, op, scale_source(op.stage)));
    }
  }

  // Optimizer state and accumulators are named after their weight ("w/momentum"), unless a
  // model value already has that name (an ONNX initializer "b/momentum" beside a weight "b"):
  // weights and state travel to the host and into checkpoints by name, so no two may share one.
  std::set<std::string> names;
  for (const ir::Value& v : graph.values())
    names.insert(v.name);
  auto state_name = [&](const std::string& weight, const char* suffix) {
    std::string name = weight + suffix;
    for (int n = 2; names.count(name) > 0; ++n)
      name = weight + suffix + "#" + std::to_string(n);
    names.insert(name);
    return name;
  };
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
    const ir::Value weight = graph.value(w);
    if (accumulate) {
      const int acc =
          graph.add_value(state_name(weight.name, "/accumulator"), weight.type, ir::Role::kAccumulator);
      graph.value(acc).initial.assign(static_cast<size_t>(weight.type.elements()), 0.0f);
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
  if (config.loss_scaling.mode != LossScalingMode::kNone) {
    std::vector<int> gradients;
    gradients.reserve(updates.size());
    for (const auto& [w, gradient] : updates)
      gradients.push_back(gradient);
    IPU_ASSIGN_OR_RETURN(std::vector<int> unscaled, unscale_gradients(graph, gradients, scale_source));
    for (size_t i = 0; i < updates.size(); ++i)
      updates[i].second = unscaled[i];
    if (dynamic) {
      IPU_RETURN_IF_ERROR(add_dynamic_loss_scale_update(graph, unscaled, accumulators, state_of_stage,
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
  for (const auto& [w, gradient] : updates) {
    const ir::Value weight = graph.value(w);
    // Optimizer state starts at `initial` (zero unless given), shaped like its weight unless
    // given a shape.
    auto add_state = [&](const char* suffix, const ir::TensorType& type, float initial = 0.0f) {
      const int state = graph.add_value(state_name(weight.name, suffix), type, ir::Role::kOptimizerState);
      graph.value(state).initial.assign(static_cast<size_t>(type.elements()), initial);
      graph.value(state).stage = weight.stage;
      return state;
    };
    // One step count per weight, as torch keeps one per parameter: each lives beside its
    // weight's update (on its pipeline stage), and a checkpoint carries it with the moments.
    const ir::TensorType step_type{ir::DType::kFloat32, {1}};
    std::vector<int> inputs = {w, gradient};
    auto add_update = [&](ir::OpKind kind, const ir::OpAttrs& attrs) {
      inputs.push_back(hyper_parameters(weight.stage));
      return graph.add_op(kind, weight.name + "/update", inputs, attrs, ir::Phase::kUpdate, weight.stage)
          .status();
    };
    if (hyper_of_stage.empty()) hyper_parameters(0);
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
          add_lamb_update(graph, w, gradient, m, v, step, hyper_parameters(weight.stage), attrs));
      break;
    }
    }
  }
  return accumulators;
}

} // namespace ipu::passes
