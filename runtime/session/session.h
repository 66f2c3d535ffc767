// Keras-style loops over a loaded executable: fit, evaluate, predict. One execution runs
// steps_per_execution steps on the device; the infeed for the next execution is prepared on a
// host thread while the current one runs, and the outfeed is drained after each.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/data/dataset.h"
#include "runtime/data/npy.h"
#include "runtime/engine/engine.h"
#include "runtime/format/executable.pb.h"
#include "runtime/format/hyper_parameters.h"
#include "runtime/session/checkpoint.h"

namespace ipu::session {

// Whether samples of shape `got` can feed an input of per-sample shape `expected`: the same
// shape, the same size when either is flat, or the same shape once size-1 axes are dropped
// ([28,28,1] feeds [1,28,28]): in all three the bytes are laid out identically.
bool sample_shape_fits(const std::vector<int64_t>& got, const std::vector<int64_t>& expected);

// A metric's value (a sum over the samples divided by them), under the name History gives it:
// "accuracy", "sparse_top_k_categorical_accuracy", "mse", "mae".
struct MetricValue {
  std::string name;
  double value = 0;
};

struct EvaluateResult {
  int64_t steps = 0;
  int64_t samples = 0;
  double loss = 0;
  std::vector<MetricValue> metrics; // the executable's, accuracy first
  double seconds = 0;
};

struct EpochResult {
  int epoch = 0; // 1-based
  int64_t steps = 0;
  int64_t samples = 0;
  double loss = 0;                  // mean of the step losses
  std::vector<MetricValue> metrics; // the executable's, accuracy first
  double seconds = 0;               // training only; the validation pass has its own
  // The learning rate of the epoch's last weight update (Keras's History "learning_rate"); NaN
  // for an executable without an optimizer's hyper-parameters.
  double learning_rate = 0;
  // The loss scale of the epoch's last weight update (docs/training.md, "Loss scaling"); NaN for
  // an executable without loss scaling.
  double loss_scale = std::numeric_limits<double>::quiet_NaN();
  // Dynamic loss scaling: the epoch's updates skipped for a non-finite gradient; -1 without it.
  int64_t skipped_updates = -1;
  // The validation data evaluated with the weights at the end of the epoch (Keras's val_loss and
  // val_ metrics), when fit was given validation data.
  std::optional<EvaluateResult> validation;
};

// Whether fit goes on after an epoch: a callback (early stopping) may end it.
enum class FitDecision { kContinue, kStop };
// Called after every epoch, once its validation has run and the host copy of the weights holds
// the epoch's (so save_weights and named_weights see them). An error ends fit with that error.
using EpochEndFn = std::function<StatusOr<FitDecision>(const EpochResult&)>;

struct FitOptions {
  int epochs = 1; // the number of the last epoch (1-based), as Keras's fit(epochs=...)
  // Keras's initial_epoch: the epochs done before (by the run whose checkpoint this one starts
  // from); fit trains epochs initial_epoch + 1 ... epochs, each shuffled as it would have been in
  // one uninterrupted run.
  int initial_epoch = 0;
  std::optional<int64_t> steps_per_epoch; // default: whole batches of the data set
  bool shuffle = false;
  uint64_t seed = 0;
  // Evaluated after every epoch by the executable's evaluate program, every sample counted as
  // evaluate counts them. Not owned; must outlive fit.
  const data::Dataset* validation = nullptr;
  EpochEndFn on_epoch_end;
};

struct PredictResult {
  int64_t samples = 0;
  std::vector<int64_t> shape; // [samples, ...output shape]
  std::vector<float> values;
  double seconds = 0;
};

// The model outputs of `Session::infer`, in the executable's output order, in their host dtypes.
struct InferResult {
  std::vector<data::NpyArray> outputs;
  int64_t samples = 0; // batched samples run (1 for a model without batched inputs)
  double seconds = 0;
};

// Reported after every execution, so a caller can draw a progress bar.
struct Progress {
  int epoch = 0;
  int epochs = 0;
  int64_t step = 0; // steps done in this epoch
  int64_t steps = 0;
  double loss = 0;                  // running mean over the epoch
  std::vector<MetricValue> metrics; // running over the epoch
  double seconds = 0;
  bool epoch_done = false;
  std::optional<EvaluateResult> validation; // with epoch_done, when fit validates
  // Dynamic loss scaling: the scale of the last update so far and the epoch's skipped updates
  // (NaN and -1 without it).
  double loss_scale = std::numeric_limits<double>::quiet_NaN();
  int64_t skipped_updates = -1;
};
using ProgressFn = std::function<void(const Progress&)>;

// Every step's loss as the outfeed returned it, and every weight update's learning rate as the
// host streamed it, for --step-log; with loss scaling, every update's loss scale (the one its
// gradients were unscaled by), and with dynamic scaling whether each update was skipped.
struct StepLog {
  std::vector<float> losses;
  std::vector<float> learning_rates;
  std::vector<float> loss_scales;
  std::vector<bool> skipped;
};

class Session {
public:
  // Verifies the executable and allocates the device; the host copy of the weights starts as
  // the executable's initial values.
  static StatusOr<std::unique_ptr<Session>> create(format::LoadedExecutable loaded,
                                                   const engine::EngineOptions& options);
  static StatusOr<std::unique_ptr<Session>> create(format::Executable executable,
                                                   const engine::EngineOptions& options);
  ~Session();

  const format::Executable& executable() const;

  // With several instances (EngineOptions::collectives) only fit runs; each instance trains on its
  // replicas' rows of every step of the one global order (docs/distributed.md).
  // The steps of an epoch without --steps-per-epoch: whole executions of whole batches, as Keras
  // on IPU runs them; the samples past the last one are left out of that epoch.
  int64_t default_steps_per_epoch(const data::Dataset& data) const;
  // Samples one step consumes: the micro-batch of every replica of the job (of every instance).
  int64_t samples_per_step() const;
  StatusOr<std::vector<EpochResult>> fit(const data::Dataset& data, const FitOptions& options,
                                         const ProgressFn& progress, StepLog* step_log);
  StatusOr<EvaluateResult> evaluate(const data::Dataset& data, const ProgressFn& progress);
  StatusOr<PredictResult> predict(const data::Dataset& data);
  // Runs the predict program on every model input (format::ModelIo), given in the executable's
  // input order in any numeric dtype. Batched inputs hold the same number of samples N, split
  // over steps (the last padded); static inputs have exactly their declared shape and are fed
  // every step. Batched outputs have N rows; static ones come from the first step.
  StatusOr<InferResult> infer(const std::vector<data::NpyArray>& inputs);

  // The optimizer's hyper-parameters (runtime/format/host_contract.h) start as the executable's
  // compiled values and its learning-rate schedule, if it has one; the host streams them before
  // every weight update. InvalidArgument when the executable's optimizer does not read `name`
  // (its `hyper_parameters`: momentum for Adam, or for SGD compiled without momentum, where
  // momentum state is part of the program). Setting the learning rate drops a schedule.
  Status set_hyper_parameter(std::string_view name, float value);
  // Replaces the learning-rate schedule; nullopt: the constant learning rate. InvalidArgument
  // when the executable's optimizer reads no learning rate.
  Status set_learning_rate_schedule(std::optional<format::LearningRateSchedule> schedule);
  bool has_learning_rate_schedule() const;
  // The hyper-parameters the next update gets but for a schedule's learning rate, by slot.
  const format::HyperParameterValues& hyper_parameters() const;
  // Weight updates and epochs trained: a schedule's position (Keras's optimizer.iterations, and
  // the epoch LearningRateScheduler counts), kept in checkpoints so a resumed run goes on.
  int64_t iterations() const;
  int64_t epochs_trained() const;

  // The names of the metrics the executable reports beside its loss, accuracy first (as in
  // EpochResult::metrics).
  std::vector<std::string> metric_names() const;

  // Checkpoints: a directory with one .npy per weight and optimizer state tensor plus
  // index.json, and with a learning-rate schedule its position (kIterationsCheckpointName,
  // kEpochsCheckpointName). Loading checks every name, dtype and shape against the executable.
  Status save_weights(const std::string& dir) const;
  // The host copy of every weight and optimizer state tensor, by tensor name.
  std::map<std::string, NamedTensor> named_weights() const;
  // Tensors of the checkpoint the executable has none of (another optimizer's state, a layer
  // this model lacks) are not loaded; their names go to `not_loaded` when given, for the tool to
  // say so.
  Status load_weights(const std::string& dir, std::vector<std::string>* not_loaded = nullptr);
  // Replaces the host copy of the weights and optimizer state with `tensors` (as named_weights
  // gives them), as load_weights does from a checkpoint: every weight must be there with its
  // shape; optimizer state not there keeps its values. The next fit, evaluate or predict starts
  // from them. `source` names the tensors in errors.
  Status set_weights(const std::map<std::string, NamedTensor>& tensors, const std::string& source);

private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

} // namespace ipu::session
