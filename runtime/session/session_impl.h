// The state behind a Session (session.h), shared by the files that implement it, each one job:
// session.cpp (creating it: which stream is which), data_checks.cpp (what data an executable
// takes), host_io.cpp (feeding, through stream_feed.h, and draining the host streams of one
// execution, the weights' transfers), instance_sync.cpp (a job of several instances),
// non_finite_guard.cpp (stopping at a NaN and naming where it began), fit.cpp, evaluate.cpp
// (evaluate and predict on a data set), infer.cpp (the model's own inputs and outputs) and
// weights.cpp (checkpoints). Not installed: only runtime/session includes it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/collectives/collectives.h"
#include "runtime/session/infeed.h"
#include "runtime/session/session.h"

namespace ipu::session {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "[2,3]"
std::string shape_text(const std::vector<int64_t>& shape);

// What the outfeed returned during one execution.
struct Outfeed {
  std::vector<float> losses;         // one per step: the mean over the replicas of the job
  int64_t steps_started = 0;         // steps whose features were fed (the step running when a run stops)
  std::vector<float> replica_losses; // this instance's, step by step, replica-major within a step
  std::vector<double> metric_sums;   // per Impl::metrics: the sum over this execution's rows
  std::vector<float> predictions;
  // Dynamic loss scaling, per weight update: the scale its gradients were unscaled by, and
  // whether it was skipped (format::kLossScaleStream; every replica's is the same).
  std::vector<float> loss_scales;
  std::vector<bool> skipped;
};

// This instance's share of an epoch's order: of each of the epoch's `steps` steps of `batch`
// samples, the `count` rows from `offset` on, which its replicas train on. Every instance draws
// the same global order, so the job trains on the samples one process would, step by step.
std::vector<uint32_t> instance_order(const std::vector<uint32_t>& order, int64_t steps, int64_t batch,
                                     int64_t offset, int64_t count);

// Sample indices of `samples` in order, as one instance feeds them: of each step's `batch` rows
// of the job, `count` from `offset` on; rows past the last sample are left out, so they become
// the padding gather_execution adds (only the last steps have any, and only at their ends).
std::vector<uint32_t> instance_rows(size_t samples, int64_t steps, int64_t batch, int64_t offset,
                                    int64_t count);

struct Session::Impl {
  std::unique_ptr<engine::Engine> engine;
  // Host copies of weights, optimizer state and running statistics, by tensor index: the source of
  // weights_from_host and the destination of weights_to_host. Taken from the device when first
  // needed (host_weights): until then the device holds the executable's initial values, which
  // predict and evaluate leave as they are, so weights_from_host has nothing to copy.
  std::optional<std::map<uint32_t, std::vector<std::byte>>> host_state;
  std::map<uint32_t, std::vector<std::byte>>& host_weights();
  // During fit: the device's weights and optimizer state after the last execution that left them
  // all finite (before the first, host_state): where a diagnosis of a NaN starts from.
  std::map<uint32_t, std::vector<std::byte>> last_finite_state;
  // Null for one process; else the job's instances, of which this one runs `replicas` of the
  // executable's `total_replicas`, from `first_replica` on (docs/distributed.md).
  collectives::Collectives* collectives = nullptr;
  uint32_t replicas = 1;
  uint32_t total_replicas = 1;
  uint32_t first_replica = 0;
  int64_t batch = 0;        // samples per step on this instance: the micro-batch of each of its replicas
  int64_t global_batch = 0; // samples per step of the job
  int64_t steps_per_execution = 1;

  std::optional<uint32_t> stream_features, stream_labels, stream_loss, stream_correct, stream_predictions;
  std::optional<uint32_t> stream_loss_scale; // dynamic loss scaling's report
  // The optimizer's hyper-parameters: their stream, the values of the next update, the slots the
  // optimizer reads, the learning-rate schedule, and the schedule's position.
  std::optional<uint32_t> stream_hyper;
  format::HyperParameterValues hyper{};
  std::set<std::string, std::less<>> hyper_read;
  std::optional<format::LearningRateSchedule> schedule;
  int64_t iterations = 0;
  int64_t epochs_trained = 0;
  int64_t updates_per_execution = 1;

  // The loss takes float labels (format::Stream FLOAT32 [batch, C]) rather than class indices.
  bool float_labels = false;

  // The metrics the executable streams out, accuracy first: each a sum over the rows of a step.
  struct MetricStream {
    std::string name;
    uint32_t stream = 0;
  };
  std::vector<MetricStream> metrics;

  // Each metric's sum over `samples` rows, divided by them.
  std::vector<MetricValue> metric_values(const std::vector<double>& sums, double samples) const {
    std::vector<MetricValue> values;
    for (size_t i = 0; i < metrics.size(); ++i)
      values.push_back({metrics[i].name, sums[i] / samples});
    return values;
  }
  ExecutionFeed gather(const data::Dataset& data, std::span<const uint32_t> order, size_t first,
                       int64_t steps, int64_t batch) const {
    return gather_execution(data, order, first, steps, batch, float_labels);
  }

  Status check_data(const data::Dataset& data, bool need_labels) const;
  Status check_float_labels(const data::Dataset& data) const;
  Status check_one_instance(std::string_view what) const;
  Status check_evaluable(const data::Dataset& data) const;
  StatusOr<EvaluateResult> evaluate_on_device(const data::Dataset& data, const ProgressFn& progress);
  Status broadcast_host_state();
  Status combine_outfeed(Outfeed& out);
  Status sync_weights(std::string_view program);
  // `hyper_rows`: kHyperParameterCount floats per weight update of the execution (train only).
  Status run_execution(uint32_t program, const ExecutionFeed& feed, Outfeed& out,
                       const std::vector<float>& hyper_rows = {});
  std::vector<float> hyper_rows(int epoch_index, std::vector<float>& learning_rates) const;
  bool keep_state_if_finite();
  void restore_last_finite_state();
  Status diagnose_non_finite(uint32_t program, const ExecutionFeed& feed,
                             const std::vector<float>& hyper_rows, int epoch, int64_t steps_before);
  StatusOr<uint32_t> program(std::string_view name) const;
  int64_t default_steps_per_epoch(const data::Dataset& data) const;
  StatusOr<int64_t> fit_steps(const data::Dataset& data, const FitOptions& options) const;
  void record_updates(const Outfeed& out, const std::vector<float>& hyper_rows,
                      const std::vector<float>& learning_rates, EpochResult& r, StepLog* step_log);
};

} // namespace ipu::session
