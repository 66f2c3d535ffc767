// Keras-style loops over a loaded executable: fit, evaluate, predict. One execution runs
// steps_per_execution steps on the device; the infeed for the next execution is prepared on a
// host thread while the current one runs, and the outfeed is drained after each.
#pragma once

#include <functional>
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
#include "runtime/session/checkpoint.h"

namespace ipu::session {

// Whether samples of shape `got` can feed an input of per-sample shape `expected`: the same
// shape, the same size when either is flat, or the same shape once size-1 axes are dropped
// ([28,28,1] feeds [1,28,28]): in all three the bytes are laid out identically.
bool sample_shape_fits(const std::vector<int64_t>& got, const std::vector<int64_t>& expected);

struct FitOptions {
  int epochs = 1;
  std::optional<int64_t> steps_per_epoch; // default: whole batches of the data set
  bool shuffle = false;
  uint64_t seed = 0;
};

// A metric's value (a sum over the samples divided by them), under the name History gives it:
// "accuracy", "sparse_top_k_categorical_accuracy", "mse", "mae".
struct MetricValue {
  std::string name;
  double value = 0;
};

struct EpochResult {
  int epoch = 0; // 1-based
  int64_t steps = 0;
  int64_t samples = 0;
  double loss = 0;                  // mean of the step losses
  std::vector<MetricValue> metrics; // the executable's, accuracy first
  double seconds = 0;
};

struct EvaluateResult {
  int64_t steps = 0;
  int64_t samples = 0;
  double loss = 0;
  std::vector<MetricValue> metrics; // the executable's, accuracy first
  double seconds = 0;
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
};
using ProgressFn = std::function<void(const Progress&)>;

// Every step's loss as the outfeed returned it, for --step-log.
struct StepLog {
  std::vector<float> losses;
};

class Session {
public:
  // Verifies the executable and allocates the device; the host copy of the weights starts as
  // the executable's initial values.
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

  // Checkpoints: a directory with one .npy per weight and optimizer state tensor plus
  // index.json. Loading checks every name, dtype and shape against the executable.
  Status save_weights(const std::string& dir) const;
  // The host copy of every weight and optimizer state tensor, by tensor name.
  std::map<std::string, NamedTensor> named_weights() const;
  Status load_weights(const std::string& dir);

private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

} // namespace ipu::session
