// Turns a forward graph into a training graph: labels, loss and accuracy metric, reverse-mode
// autodiff, and the optimizer's update ops and state (the last two: gradients_and_updates.cpp).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "runtime/format/host_contract.h"

namespace ipu::passes {

// The losses, by Keras's names (docs/training.md). Sparse categorical cross-entropy takes class
// indices as labels; the others float labels shaped like the model's output.
enum class LossKind {
  kSparseCategoricalCrossEntropy,
  kCategoricalCrossEntropy,
  kBinaryCrossEntropy,
  kMeanSquaredError,
  kMeanAbsoluteError,
  kHuber,
};

// "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy",
// "mean_squared_error" (or "mse"), "mean_absolute_error" (or "mae") and "huber"; nullopt for any
// other.
std::optional<LossKind> loss_kind(const std::string& name);
const char* loss_name(LossKind kind);
// The names loss_kind accepts, for messages: "sparse_categorical_crossentropy, ..., huber".
const char* loss_names();
// Whether Keras's loss of this kind takes `from_logits` (the cross-entropies).
bool loss_has_from_logits(LossKind kind);

// The metrics reported beside the loss (docs/training.md).
enum class MetricKind { kAccuracy, kSparseTopK, kMeanSquaredError, kMeanAbsoluteError };

struct MetricConfig {
  MetricKind kind = MetricKind::kAccuracy;
  int64_t k = 5; // top-k (Keras's default)
};

// One metric by name: "accuracy" (or "acc"), "sparse_top_k_categorical_accuracy" or "top_k"
// (k = 5), "top_k:K", "mse" (or "mean_squared_error"), "mae" (or "mean_absolute_error").
// InvalidArgument names the metric otherwise.
StatusOr<MetricConfig> parse_metric(const std::string& text);
// A comma-separated list of parse_metric's names, as --metrics takes it; each at most once.
StatusOr<std::vector<MetricConfig>> parse_metric_list(const std::string& text);
// The name History and --json give the metric: "accuracy", "sparse_top_k_categorical_accuracy",
// "mse", "mae" (Keras's).
const char* metric_name(MetricKind kind);
// "accuracy,top_k:5,mse": a list as parse_metric_list reads it back (the cache key's form).
std::string metric_list_text(const std::vector<MetricConfig>& metrics);

struct LossConfig {
  LossKind kind = LossKind::kSparseCategoricalCrossEntropy;
  bool from_logits = true; // the cross-entropies
  float delta = 1.0f;      // Huber: quadratic within |error| <= delta, linear beyond
};

// In format::kOptimizerNames' order (runtime/format/optimizer_arguments.h).
enum class OptimizerKind { kSgd, kAdam, kAdamW, kRmsProp, kAdagrad, kAdaMax, kLamb };

// One of format::kOptimizerNames (Keras's names); nullopt for any other.
std::optional<OptimizerKind> optimizer_kind(const std::string& name);
const char* optimizer_name(OptimizerKind kind);

// Loss scaling (docs/training.md, "Loss scaling"), as Keras's LossScaleOptimizer wraps an
// optimizer: the loss gradient is multiplied by the scale, and every gradient divided by it
// before the update. Static: a run-time hyper-parameter (format::HyperParameter::kLossScale), never
// skipping an update. Dynamic: Keras's schedule on the device (an optimizer-state tensor per stage,
// format::kLossScaleStateTensor, starting at initial_scale): an update whose gradients are not all
// finite is skipped and halves the scale, growth_steps finite updates in a row double it.
enum class LossScalingMode { kNone, kStatic, kDynamic };

// "none", "static", "dynamic"; nullopt for any other.
std::optional<LossScalingMode> loss_scaling_mode(const std::string& name);
const char* loss_scaling_mode_name(LossScalingMode mode);

struct LossScaling {
  LossScalingMode mode = LossScalingMode::kNone;
  float initial_scale = 32768.0f; // Keras's initial_scale (2^15)
  int64_t growth_steps = 2000;    // Keras's dynamic_growth_steps (dynamic only)
};

// The optimizers' arguments under Keras's names (dampening is torch's), each used by the
// optimizers docs/training.md lists it for. default_optimizer gives each optimizer Keras's
// defaults from format::optimizer_argument_specs; the initial values here are SGD's, the same
// (test_optimizer_arguments.cpp checks it).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.0f;  // SGD, RMSProp
  float dampening = 0.0f; // SGD
  bool nesterov = false;  // SGD
  float beta_1 = 0.9f;    // Adam, AdamW, AdaMax, LAMB
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;                  // all but SGD
  float weight_decay = 0.0f;              // all; decoupled for AdamW, added to the gradient otherwise
  float rho = 0.9f;                       // RMSProp
  bool centered = false;                  // RMSProp
  float initial_accumulator_value = 0.1f; // Adagrad
  // All: the gradients' global norm is clipped to this before the update (Keras's
  // global_clipnorm); 0 does not clip.
  float global_clipnorm = 0.0f;
  // A learning-rate schedule the host evaluates before every update, in
  // format::parse_learning_rate_schedule's text form; empty: the constant learning_rate.
  std::string learning_rate_schedule;
  LossScaling loss_scaling;
};

// Keras's defaults for `kind`: learning rate 0.01 (SGD) or 0.001 (the others), and each argument's
// default for it in format::optimizer_argument_specs (weight decay 0.004 for AdamW, epsilon 1e-6
// for LAMB).
OptimizerConfig default_optimizer(OptimizerKind kind);

// Accuracy for the cross-entropies, none for the regression losses (as Keras's users ask).
std::vector<MetricConfig> default_metrics(LossKind kind);

struct LossValues {
  struct Metric {
    std::string name; // metric_name
    int sum = -1;     // f32 [1], the sum over the batch's rows
  };
  int labels = -1;             // int32 [batch] class indices, or f32 labels shaped like the scores
  int loss = -1;               // f32 [1], mean over the batch
  int correct = -1;            // f32 [1], number of correct predictions; -1 without the accuracy metric
  std::vector<Metric> metrics; // the others, in the order asked
};

// The hyper-parameters `config`'s update reads at run time, by runtime/format/host_contract.h's
// slot names (what the host may set per update); a value that changes the program's structure
// when zero (SGD's or RMSProp's momentum, SGD's dampening, plain SGD's weight decay) is read only
// when the program has it.
std::vector<std::string> hyper_parameters_read(const OptimizerConfig& config);
// `config`'s values in the slots hyper_parameters_read names, 0 in the others: the compiled
// defaults of the hyper-parameter tensor.
std::array<float, format::kHyperParameterCount> hyper_parameter_values(const OptimizerConfig& config);

// Adds the labels input, the loss on `scores` ([batch, classes] or [batch, outputs]) and the
// count of correct predictions: SparseCrossEntropy and CountCorrect for sparse categorical
// cross-entropy; DenseLoss, and DenseCorrect for the other cross-entropies, for the rest.
// Each metric of `metrics` adds a count (accuracy: CountCorrect or DenseCorrect) or a MetricSum;
// InvalidArgument for a metric the loss's labels cannot give (accuracy of a regression loss,
// top-k without class indices, MSE or MAE with them). `labels` >= 0 names the value that becomes
// the labels (the graph input of a model that computes its own loss: passes/graph_loss.h),
// retyped to what the loss reads; -1 adds a value "labels".
StatusOr<LossValues> add_loss(ir::Graph& graph, int scores, const LossConfig& config,
                              const std::vector<MetricConfig>& metrics, int labels = -1);

struct AccumulationConfig {
  uint32_t micro_batches = 1; // gradient accumulation steps per weight update
  uint32_t replicas = 1;
  uint32_t stages = 1;
  // Gradients go through accumulators (summed over micro-batches, all-reduced over replicas)
  // whenever an update sees more than one micro-batch's gradient, and in pipelines, where the
  // update waits for the last stage's drain.
  bool enabled() const { return micro_batches > 1 || replicas > 1 || stages > 1; }
};

// Differentiates `loss` with respect to every weight and appends one update per weight with its
// optimizer state (docs/training.md): SGD (a velocity when momentum is non-zero, and a step count
// when dampening is too), Adam/AdamW, AdaMax and LAMB (two moments and a step count), RMSProp (a
// square average, a momentum buffer, a gradient average when centered) or Adagrad (a sum). With accumulation,
// each gradient is added into an accumulator in the backward phase, and the update applies the mean over the
// micro-batches and clears it. Every update reads the optimizer's hyper-parameters from a
// kHyperParameters value of its stage (named format::kHyperParametersTensor on stage 0,
// "<that>@<stage>" on the others) whose initial value is hyper_parameter_values(config).
// Returns the accumulators (empty without accumulation).
StatusOr<std::vector<int>> add_gradients_and_updates(ir::Graph& graph, int loss,
                                                     const OptimizerConfig& config,
                                                     const AccumulationConfig& accumulation);

} // namespace ipu::passes
