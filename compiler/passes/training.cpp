#include "compiler/passes/training.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "compiler/passes/optimizer_arguments.h"
#include "runtime/format/optimizer_arguments.h"

namespace ipu::passes {

// OptimizerKind lists the optimizers in format::kOptimizerNames' order.
static_assert(static_cast<size_t>(OptimizerKind::kLamb) + 1 == format::kOptimizerNames.size());

std::optional<OptimizerKind> optimizer_kind(const std::string& name) {
  const auto& names = format::kOptimizerNames;
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return std::nullopt;
  return static_cast<OptimizerKind>(it - names.begin());
}

const char* optimizer_name(OptimizerKind kind) {
  return format::kOptimizerNames.at(static_cast<size_t>(kind)).data(); // names are literals
}

OptimizerConfig default_optimizer(OptimizerKind kind) {
  OptimizerConfig config;
  config.kind = kind;
  if (kind != OptimizerKind::kSgd) config.learning_rate = 0.001f;
  for (const OptimizerArgument& argument : optimizer_arguments()) {
    if (argument.number) {
      config.*argument.number = argument.spec->default_for(optimizer_name(kind));
    } else {
      config.*argument.toggle = argument.spec->default_value != 0;
    }
  }
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

} // namespace ipu::passes
