#include "runtime/session/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "runtime/base/half.h"
#include "runtime/base/printable.h"
#include "runtime/collectives/collectives.h"
#include "runtime/engine/non_finite.h"
#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"
#include "runtime/session/checkpoint.h"
#include "runtime/session/infeed.h"

namespace ipu::session {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

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
                                     int64_t offset, int64_t count) {
  if (count == batch) return order;
  std::vector<uint32_t> mine;
  mine.reserve(static_cast<size_t>(steps * count));
  for (int64_t step = 0; step < steps; ++step) {
    const auto first = order.begin() + step * batch + offset;
    mine.insert(mine.end(), first, first + count);
  }
  return mine;
}

// Sample indices of `samples` in order, as one instance feeds them: of each step's `batch` rows
// of the job, `count` from `offset` on; rows past the last sample are left out, so they become
// the padding gather_execution adds (only the last steps have any, and only at their ends).
std::vector<uint32_t> instance_rows(size_t samples, int64_t steps, int64_t batch, int64_t offset,
                                    int64_t count) {
  std::vector<uint32_t> mine;
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t row = step * batch + offset; row < step * batch + offset + count; ++row) {
      if (static_cast<size_t>(row) >= samples) return mine;
      mine.push_back(static_cast<uint32_t>(row));
    }
  }
  return mine;
}

} // namespace

bool sample_shape_fits(const std::vector<int64_t>& got, const std::vector<int64_t>& expected) {
  if (got == expected) return true;
  uint64_t expected_size = 1, got_size = 1;
  for (int64_t d : expected)
    expected_size *= static_cast<uint64_t>(d);
  for (int64_t d : got)
    got_size *= static_cast<uint64_t>(d);
  if (got_size != expected_size) return false;
  // A flat sample is accepted either way round (Flatten is the usual first layer), and so is one
  // that differs only in size-1 axes (HWC data with one channel feeding a CHW model).
  if (expected.size() == 1 || got.size() == 1) return true;
  auto squeezed = [](const std::vector<int64_t>& shape) {
    std::vector<int64_t> out;
    for (int64_t d : shape) {
      if (d != 1) out.push_back(d);
    }
    return out;
  };
  return squeezed(got) == squeezed(expected);
}

struct Session::Impl {
  std::unique_ptr<engine::Engine> engine;
  // Host copies of weights and optimizer state, by tensor index: the source of
  // weights_from_host and the destination of weights_to_host.
  std::map<uint32_t, std::vector<std::byte>> host_state;
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
};

Session::Session(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::create(format::Executable executable,
                                                   const engine::EngineOptions& options) {
  // Everything the host copies is proved to fit before the engine verifies the rest and
  // allocates the device.
  IPU_RETURN_IF_ERROR(format::verify_host_contract(executable));
  auto impl = std::make_unique<Impl>();
  IPU_ASSIGN_OR_RETURN(impl->engine, engine::Engine::create(std::move(executable), options));
  const format::Executable& exe = impl->engine->executable();
  impl->collectives = options.collectives;
  impl->replicas = impl->engine->replicas();
  impl->first_replica = impl->engine->first_replica();
  impl->total_replicas = format::replica_count(exe);
  impl->batch = int64_t{exe.batch_size()} * impl->replicas;
  impl->global_batch = int64_t{exe.batch_size()} * impl->total_replicas;
  impl->steps_per_execution = exe.steps_per_execution();
  for (int i = 0; i < exe.tensors_size(); ++i) {
    const format::Tensor& t = exe.tensors(i);
    // What travels to the host and into checkpoints: weights, optimizer state and batch
    // normalization's running statistics (replica 0's, as weights_to_host reads them).
    if (t.role() != format::WEIGHT && t.role() != format::OPTIMIZER_STATE &&
        t.role() != format::RUNNING_STATISTICS)
      continue;
    auto bytes = impl->engine->tensor_bytes(static_cast<uint32_t>(i));
    impl->host_state[static_cast<uint32_t>(i)].assign(bytes.begin(), bytes.end());
  }
  impl->stream_features = impl->engine->find_stream(std::string(format::kFeaturesStream));
  impl->stream_labels = impl->engine->find_stream(std::string(format::kLabelsStream));
  impl->float_labels =
      impl->stream_labels && exe.streams(static_cast<int>(*impl->stream_labels)).dtype() == format::FLOAT32;
  impl->stream_loss = impl->engine->find_stream(std::string(format::kLossStream));
  impl->stream_correct = impl->engine->find_stream(std::string(format::kCorrectStream));
  if (impl->stream_correct) impl->metrics.push_back({"accuracy", *impl->stream_correct});
  for (int i = 0; i < exe.streams_size(); ++i) {
    const std::string& name = exe.streams(i).name();
    if (name.rfind(format::kMetricStreamPrefix, 0) == 0) {
      impl->metrics.push_back({name.substr(format::kMetricStreamPrefix.size()), static_cast<uint32_t>(i)});
    }
  }
  impl->stream_predictions = impl->engine->find_stream(std::string(format::kPredictionsStream));
  impl->stream_loss_scale = impl->engine->find_stream(std::string(format::kLossScaleStream));
  impl->stream_hyper = impl->engine->find_stream(std::string(format::kHyperParametersStream));
  impl->hyper = format::hyper_parameter_defaults(exe).value_or(format::HyperParameterValues{});
  impl->hyper_read.insert(exe.hyper_parameters().begin(), exe.hyper_parameters().end());
  // verify_host_contract proved the schedule parses.
  if (!exe.learning_rate_schedule().empty())
    impl->schedule = format::parse_learning_rate_schedule(exe.learning_rate_schedule()).value();
  const uint32_t accumulation = std::max<uint32_t>(1, exe.pipeline().gradient_accumulation());
  impl->updates_per_execution = std::max<int64_t>(1, impl->steps_per_execution / accumulation);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const format::Executable& Session::executable() const {
  return m_impl->engine->executable();
}

StatusOr<uint32_t> Session::Impl::program(std::string_view name) const {
  auto index = engine->find_program(std::string(name));
  if (!index) {
    return failed_precondition("this executable has no '" + std::string(name) +
                               "' program (compiled with --mode " + engine->executable().mode() + ")");
  }
  return *index;
}

Status Session::Impl::check_data(const data::Dataset& data, bool need_labels) const {
  // A model without inputs (an ONNX model of constants) has no features stream: it only predicts.
  if (!stream_features)
    return invalid_argument(data.source +
                            ": this model has no inputs to feed a data set to; predict without one");
  const format::Stream& features = engine->executable().streams(static_cast<int>(*stream_features));
  if (features.shape_size() < 1 || engine->executable().inputs_size() > 1 ||
      (engine->executable().inputs_size() == 1 && !engine->executable().inputs(0).batched())) {
    return invalid_argument(
        data.source +
        ": a data set feeds models with one batched input; give this one's inputs with --input");
  }
  std::vector<int64_t> expected(features.shape().begin() + 1, features.shape().end());
  if (!sample_shape_fits(data.sample_shape, expected)) {
    return invalid_argument(data.source + ": samples have shape " + shape_text(data.sample_shape) +
                            ", the executable expects " + shape_text(expected));
  }
  if (need_labels) {
    if (!data.has_labels()) return invalid_argument(data.source + ": has no labels");
    if (float_labels) return check_float_labels(data);
    if (data.labels.empty()) {
      return invalid_argument(data.source + ": has float labels; the executable's loss "
                                            "(sparse_categorical_crossentropy) takes integer class indices");
    }
    const int64_t classes = engine->executable().num_classes();
    for (size_t i = 0; i < data.labels.size(); ++i) {
      if (data.labels[i] < 0 || data.labels[i] >= classes) {
        return invalid_argument(data.source + ": label " + std::to_string(data.labels[i]) + " of sample " +
                                std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
      }
    }
  }
  return Status();
}

// A loss on float labels takes C of them per sample, C the model's outputs; class indices feed
// one output as numbers (binary labels 0/1, integer targets).
Status Session::Impl::check_float_labels(const data::Dataset& data) const {
  const int64_t outputs = engine->executable().num_classes();
  if (data.float_labels.empty()) {
    if (outputs == 1) return Status();
    return invalid_argument(data.source +
                            ": has class indices; the executable's loss takes float labels of " +
                            std::to_string(outputs) +
                            " values per sample (one-hot rows for "
                            "categorical_crossentropy)");
  }
  if (static_cast<int64_t>(data.label_size()) != outputs) {
    return invalid_argument(data.source + ": labels have shape " + shape_text(data.label_shape) +
                            " per sample, the executable's loss takes " + std::to_string(outputs) +
                            " per sample (the model's output [batch, " + std::to_string(outputs) + "])");
  }
  return Status();
}

Status Session::Impl::check_one_instance(std::string_view what) const {
  if (!collectives || collectives->size() == 1) return Status();
  return unsupported(std::string(what) + " runs as one instance; run it without mpirun or --instances");
}

// Instance 0's weights and optimizer state (its --weights checkpoint, or the executable's) to all.
Status Session::Impl::broadcast_host_state() {
  if (!collectives || collectives->size() == 1) return Status();
  for (auto& [tensor, bytes] : host_state)
    IPU_RETURN_IF_ERROR(collectives->broadcast(bytes, 0));
  return Status();
}

// Every step's loss is the mean over all the job's replicas, summed in replica order (and in
// double, as one process sums), so it does not depend on the number of instances.
Status Session::Impl::combine_outfeed(Outfeed& out) {
  std::vector<float> all = out.replica_losses;
  if (collectives && collectives->size() > 1) {
    // One all-gather per execution: this instance's losses, then its metric sums.
    const size_t instances = static_cast<size_t>(collectives->size());
    const size_t per_instance = out.replica_losses.size(), steps = per_instance / replicas;
    const size_t loss_bytes = per_instance * sizeof(float),
                 sent_bytes = loss_bytes + out.metric_sums.size() * sizeof(double);
    std::vector<std::byte> sent(sent_bytes), received(sent_bytes * instances);
    std::memcpy(sent.data(), out.replica_losses.data(), loss_bytes);
    std::memcpy(sent.data() + loss_bytes, out.metric_sums.data(), out.metric_sums.size() * sizeof(double));
    IPU_RETURN_IF_ERROR(collectives->all_gather(sent, received));
    // [instance][step][local replica] → [step][replica]
    all.assign(per_instance * instances, 0.0f);
    std::fill(out.metric_sums.begin(), out.metric_sums.end(), 0.0);
    for (size_t i = 0; i < instances; ++i) {
      const std::byte* from = received.data() + i * sent_bytes;
      for (size_t step = 0; step < steps; ++step) {
        std::memcpy(all.data() + (step * instances + i) * replicas, from + step * replicas * sizeof(float),
                    replicas * sizeof(float));
      }
      // Summed in instance order; counts of correct rows are whole numbers, exact in any order.
      for (size_t m = 0; m < out.metric_sums.size(); ++m) {
        double sum = 0;
        std::memcpy(&sum, from + loss_bytes + m * sizeof(double), sizeof(double));
        out.metric_sums[m] += sum;
      }
    }
  }
  for (size_t first = 0; first + total_replicas <= all.size(); first += total_replicas) {
    double sum = 0;
    for (size_t r = 0; r < total_replicas; ++r)
      sum += all[first + r];
    out.losses.push_back(static_cast<float>(sum / total_replicas));
  }
  return Status();
}

Status Session::Impl::sync_weights(std::string_view name) {
  IPU_ASSIGN_OR_RETURN(uint32_t index, program(name));
  const format::Executable& exe = engine->executable();
  engine::HostStreams streams;
  // Weight streams are named "to_device:<tensor>" / "to_host:<tensor>".
  auto tensor_of = [&](uint32_t stream) -> std::optional<uint32_t> {
    const std::string& s = exe.streams(static_cast<int>(stream)).name();
    return engine->find_tensor(s.substr(s.find(':') + 1));
  };
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> destination) -> Status {
    auto t = tensor_of(stream);
    if (!t || !host_state.count(*t) || host_state[*t].size() != destination.size()) {
      return data_loss("weight stream '" + exe.streams(static_cast<int>(stream)).name() +
                       "' names no weight");
    }
    std::memcpy(destination.data(), host_state[*t].data(), destination.size());
    return Status();
  };
  // Replicas hold identical weights after every all-reduced update: replica 0 speaks for all.
  streams.push = [&](uint32_t stream, uint32_t replica, std::span<const std::byte> source) -> Status {
    if (replica != 0) return Status();
    auto t = tensor_of(stream);
    if (!t || !host_state.count(*t) || host_state[*t].size() != source.size()) {
      return data_loss("weight stream '" + exe.streams(static_cast<int>(stream)).name() +
                       "' names no weight");
    }
    std::memcpy(host_state[*t].data(), source.data(), source.size());
    return Status();
  };
  return engine->run(index, streams);
}

// The hyper-parameter rows of the next execution's updates, the learning rate of each appended
// to `learning_rates`: the schedule's at each update's position, else the constant rate.
std::vector<float> Session::Impl::hyper_rows(int epoch_index, std::vector<float>& learning_rates) const {
  std::vector<float> rows;
  rows.reserve(static_cast<size_t>(updates_per_execution) * format::kHyperParameterCount);
  for (int64_t u = 0; u < updates_per_execution; ++u) {
    format::HyperParameterValues row = hyper;
    if (schedule) {
      const int64_t step = schedule->per_epoch ? epoch_index : iterations + u;
      row[format::HyperParameter::kLearningRate] = static_cast<float>(format::learning_rate_at(
          *schedule, step, static_cast<double>(hyper[format::HyperParameter::kLearningRate])));
    }
    learning_rates.push_back(row[format::HyperParameter::kLearningRate]);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  return rows;
}

Status Session::Impl::run_execution(uint32_t index, const ExecutionFeed& feed, Outfeed& out,
                                    const std::vector<float>& hyper_rows) {
  out.metric_sums.assign(metrics.size(), 0.0);
  size_t features_step = 0, labels_step = 0, hyper_transfers = 0;
  engine::HostStreams streams;
  // Transfers come step by step, replica-major within a step: the feed's layout.
  // verify_host_contract proves a transfer is one step's rows and a run takes at most S steps, so
  // these copies stay inside the feed; the checks make a broken proof an error, not a stray read.
  auto take_step = [](const auto& values, size_t& step, std::span<std::byte> destination,
                      const char* what) -> Status {
    const size_t bytes = values.size() * sizeof(values[0]);
    if ((step + 1) * destination.size() > bytes) {
      return data_loss(std::string("the executable streams more ") + what + " than an execution holds");
    }
    std::memcpy(destination.data(),
                reinterpret_cast<const std::byte*>(values.data()) + step * destination.size(),
                destination.size());
    ++step;
    return Status();
  };
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> destination) -> Status {
    if (stream_features && stream == *stream_features)
      return take_step(feed.features, features_step, destination, "features");
    if (stream_labels && stream == *stream_labels) {
      if (float_labels) return take_step(feed.float_labels, labels_step, destination, "labels");
      return take_step(feed.labels, labels_step, destination, "labels");
    }
    if (stream_hyper && stream == *stream_hyper) {
      // One row per update, the same for every replica.
      const size_t row = hyper_transfers++ / replicas, bytes = destination.size();
      if ((row + 1) * bytes > hyper_rows.size() * sizeof(float))
        return data_loss("the executable streams more hyper-parameters than an execution has updates");
      std::memcpy(destination.data(), reinterpret_cast<const std::byte*>(hyper_rows.data()) + row * bytes,
                  bytes);
      return Status();
    }
    return failed_precondition("the host feeds no stream " + std::to_string(stream));
  };
  streams.push = [&](uint32_t stream, uint32_t replica, std::span<const std::byte> source) -> Status {
    const float* values = reinterpret_cast<const float*>(source.data());
    if (stream_loss && stream == *stream_loss) {
      out.replica_losses.push_back(values[0]);
    } else if (stream_loss_scale && stream == *stream_loss_scale) {
      if (replica == 0) {
        out.loss_scales.push_back(values[0]);
        out.skipped.push_back(values[1] != 0.0f);
      }
    } else if (auto m = std::find_if(metrics.begin(), metrics.end(),
                                     [&](const MetricStream& metric) { return metric.stream == stream; });
               m != metrics.end()) {
      out.metric_sums[static_cast<size_t>(m - metrics.begin())] += values[0];
    } else if (stream_predictions && stream == *stream_predictions) {
      out.predictions.insert(out.predictions.end(), values, values + source.size() / sizeof(float));
    }
    return Status();
  };
  Status status = engine->run(index, streams);
  out.steps_started = static_cast<int64_t>(features_step / replicas);
  IPU_RETURN_IF_ERROR(status);
  return combine_outfeed(out);
}

// Replicas hold identical weights after every update, so replica 0's are checked and kept.
bool Session::Impl::keep_state_if_finite() {
  for (const auto& [tensor, bytes] : last_finite_state) {
    const std::span<std::byte> device = engine->tensor_bytes(tensor);
    if (engine::first_non_finite(
            {reinterpret_cast<const float*>(device.data()), device.size() / sizeof(float)})) {
      return false;
    }
  }
  for (auto& [tensor, bytes] : last_finite_state) {
    const std::span<std::byte> device = engine->tensor_bytes(tensor);
    std::memcpy(bytes.data(), device.data(), bytes.size());
  }
  return true;
}

// Every replica back to the state after the last finite execution: its weights and optimizer
// state; every other tensor as the executable starts it (accumulators empty, since an execution
// holds whole updates; activations and gradients, which each step writes before reading, free of
// the NaNs the failed execution left, so the finite check sees them appear).
void Session::Impl::restore_last_finite_state() {
  const int tensors = engine->executable().tensors_size();
  for (uint32_t t = 0; t < static_cast<uint32_t>(tensors); ++t) {
    auto kept = last_finite_state.find(t);
    if (kept == last_finite_state.end()) {
      engine->reset_tensor(t);
      continue;
    }
    for (uint32_t r = 0; r < replicas; ++r)
      std::memcpy(engine->tensor_bytes(t, r).data(), kept->second.data(), kept->second.size());
  }
}

// An execution left a NaN or an infinity in a loss or the weights: run it again from the state
// before it, with the engine's finite check on, to name the step and the first tensor that went
// non-finite. Runs are deterministic, so the replay meets what the execution met.
Status Session::Impl::diagnose_non_finite(uint32_t program, const ExecutionFeed& feed,
                                          const std::vector<float>& hyper_rows, int epoch,
                                          int64_t steps_before) {
  restore_last_finite_state();
  engine->set_finite_check(true);
  Outfeed replay;
  Status found = run_execution(program, feed, replay, hyper_rows);
  engine->set_finite_check(false);
  restore_last_finite_state();
  const std::string where =
      "epoch " + std::to_string(epoch) + ", step " + std::to_string(steps_before + replay.steps_started);
  if (found.code() == StatusCode::kNonFinite)
    return found.with_context(where + ": training stopped at a NaN or an infinity");
  if (!found.ok()) return found.with_context("epoch " + std::to_string(epoch));
  return non_finite("epoch " + std::to_string(epoch) +
                    ": training stopped at a NaN or an infinity in the loss or the weights between steps " +
                    std::to_string(steps_before + 1) + " and " +
                    std::to_string(steps_before + steps_per_execution) +
                    " (the replay to find its tensor did not meet it)");
}

int64_t Session::samples_per_step() const {
  return m_impl->global_batch;
}

int64_t Session::default_steps_per_epoch(const data::Dataset& data) const {
  const int64_t batches = static_cast<int64_t>(data.num_samples) / m_impl->global_batch;
  return batches - batches % m_impl->steps_per_execution;
}

StatusOr<std::vector<EpochResult>> Session::fit(const data::Dataset& data, const FitOptions& options,
                                                const ProgressFn& progress, StepLog* step_log) {
  Impl& s = *m_impl;
  IPU_ASSIGN_OR_RETURN(uint32_t train, s.program(format::kTrainProgram));
  IPU_RETURN_IF_ERROR(s.check_data(data, /*need_labels=*/true));
  if (options.validation) IPU_RETURN_IF_ERROR(s.check_evaluable(*options.validation));
  if (options.epochs < 1) return invalid_argument("--epochs must be at least 1");
  if (options.initial_epoch < 0 || options.initial_epoch >= options.epochs) {
    return invalid_argument("--initial-epoch " + std::to_string(options.initial_epoch) +
                            " leaves no epoch to train: --epochs " + std::to_string(options.epochs) +
                            " is the number of the last epoch, as Keras counts it");
  }
  // The progress line, with dynamic loss scaling's scale and skipped updates so far.
  const auto report = [&](Progress p, const EpochResult& r) {
    if (s.stream_loss_scale) {
      p.loss_scale = r.loss_scale;
      p.skipped_updates = r.skipped_updates;
    }
    progress(p);
  };
  // B counts the job's samples per step; this instance feeds Bi of them to its replicas.
  const int64_t S = s.steps_per_execution, B = s.global_batch, Bi = s.batch;
  int64_t steps = static_cast<int64_t>(data.num_samples) / B;
  if (options.steps_per_epoch) {
    if (*options.steps_per_epoch < 1 || *options.steps_per_epoch > steps) {
      return invalid_argument("--steps-per-epoch " + std::to_string(*options.steps_per_epoch) +
                              " is outside [1, " + std::to_string(steps) + "] (" + data.source + " has " +
                              std::to_string(data.num_samples) + " samples, batch " + std::to_string(B) +
                              ")");
    }
    steps = *options.steps_per_epoch;
    if (steps % S != 0) {
      return invalid_argument("--steps-per-epoch " + std::to_string(steps) +
                              " is not a multiple of steps_per_execution " + std::to_string(S));
    }
  } else {
    steps = default_steps_per_epoch(data);
  }
  if (steps < S) {
    return invalid_argument(data.source + ": " + std::to_string(data.num_samples) +
                            " samples are fewer than one execution (" + std::to_string(S) +
                            " steps of batch " + std::to_string(B) + ")");
  }

  IPU_RETURN_IF_ERROR(s.broadcast_host_state());
  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  s.last_finite_state = s.host_state;
  std::vector<EpochResult> results;
  for (int epoch = options.initial_epoch + 1; epoch <= options.epochs; ++epoch) {
    const auto start = Clock::now();
    const std::vector<uint32_t> order =
        instance_order(data::epoch_order(data.num_samples, options.shuffle, options.seed, epoch - 1), steps,
                       B, static_cast<int64_t>(s.first_replica) * B / s.total_replicas, Bi);
    const int64_t executions = steps / S;
    auto prepare = [&](int64_t e) { return s.gather(data, order, static_cast<size_t>(e * S * Bi), S, Bi); };
    std::future<ExecutionFeed> next = std::async(std::launch::async, prepare, 0);
    EpochResult r;
    r.epoch = epoch;
    double loss_sum = 0;
    std::vector<double> sums(s.metrics.size(), 0.0);
    for (int64_t e = 0; e < executions; ++e) {
      ExecutionFeed feed = next.get();
      if (e + 1 < executions) next = std::async(std::launch::async, prepare, e + 1);
      Outfeed out;
      std::vector<float> learning_rates;
      const std::vector<float> hyper_rows = s.hyper_rows(static_cast<int>(s.epochs_trained), learning_rates);
      IPU_RETURN_IF_ERROR_CTX(s.run_execution(train, feed, out, hyper_rows),
                              "epoch " + std::to_string(epoch));
      // Never train on from a NaN (Keras' TerminateOnNaN): a loss or weight that left the finite
      // numbers stops the run, naming the step and the tensor where it began.
      const bool finite_losses = !engine::first_non_finite(out.losses);
      if (!s.keep_state_if_finite() || !finite_losses) {
        return s.diagnose_non_finite(train, feed, hyper_rows, epoch, r.steps);
      }
      // Keras's iterations, the schedule's position, count the updates applied: a skipped one
      // leaves the inner optimizer as it was.
      const auto skipped = static_cast<int64_t>(std::count(out.skipped.begin(), out.skipped.end(), true));
      s.iterations += s.updates_per_execution - skipped;
      r.learning_rate = s.stream_hyper ? static_cast<double>(learning_rates.back()) : std::nan("");
      if (step_log && s.stream_hyper)
        step_log->learning_rates.insert(step_log->learning_rates.end(), learning_rates.begin(),
                                        learning_rates.end());
      // The static loss scale is the one streamed with each update.
      if (s.hyper_read.count(format::kHyperParameterNames[format::HyperParameter::kLossScale])) {
        for (size_t row = 0; row < hyper_rows.size(); row += format::kHyperParameterCount) {
          r.loss_scale = hyper_rows[row + format::HyperParameter::kLossScale];
          if (step_log) step_log->loss_scales.push_back(hyper_rows[row + format::HyperParameter::kLossScale]);
        }
      }
      // The dynamic scale is the one each update reported.
      if (s.stream_loss_scale) {
        if (!out.loss_scales.empty()) r.loss_scale = out.loss_scales.back();
        r.skipped_updates = std::max<int64_t>(r.skipped_updates, 0) + skipped;
        if (step_log) {
          step_log->loss_scales.insert(step_log->loss_scales.end(), out.loss_scales.begin(),
                                       out.loss_scales.end());
          step_log->skipped.insert(step_log->skipped.end(), out.skipped.begin(), out.skipped.end());
        }
      }
      for (float l : out.losses)
        loss_sum += l;
      for (size_t m = 0; m < sums.size(); ++m)
        sums[m] += out.metric_sums[m];
      if (step_log) step_log->losses.insert(step_log->losses.end(), out.losses.begin(), out.losses.end());
      r.steps += S;
      r.samples += S * B;
      if (progress) {
        report({epoch, options.epochs, r.steps, steps, loss_sum / static_cast<double>(r.steps),
                s.metric_values(sums, static_cast<double>(r.samples)), seconds_since(start), false,
                std::nullopt},
               r);
      }
    }
    r.loss = loss_sum / static_cast<double>(r.steps);
    r.metrics = s.metric_values(sums, static_cast<double>(r.samples));
    r.seconds = seconds_since(start);
    ++s.epochs_trained;
    // The evaluate program leaves the weights and optimizer state as training left them.
    if (options.validation) {
      StatusOr<EvaluateResult> validated = s.evaluate_on_device(*options.validation, nullptr);
      if (!validated.ok())
        return validated.status().with_context("epoch " + std::to_string(epoch) + ": validation");
      r.validation = *validated;
    }
    if (progress)
      report({epoch, options.epochs, r.steps, steps, r.loss, r.metrics, r.seconds, true, r.validation}, r);
    results.push_back(r);
    if (options.on_epoch_end) {
      IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsToHostProgram));
      IPU_ASSIGN_OR_RETURN(FitDecision decision, options.on_epoch_end(r));
      if (decision == FitDecision::kStop) break;
    }
  }
  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsToHostProgram));
  return results;
}

StatusOr<EvaluateResult> Session::evaluate(const data::Dataset& data, const ProgressFn& progress) {
  Impl& s = *m_impl;
  IPU_RETURN_IF_ERROR(s.check_one_instance("evaluate"));
  IPU_RETURN_IF_ERROR(s.check_evaluable(data));
  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  return s.evaluate_on_device(data, progress);
}

Status Session::Impl::check_evaluable(const data::Dataset& data) const {
  IPU_RETURN_IF_ERROR(program(format::kEvaluateProgram).status());
  IPU_RETURN_IF_ERROR(check_data(data, /*need_labels=*/true));
  if (data.num_samples == 0) return invalid_argument(data.source + ": has no samples");
  if (engine->executable().loss_counts_padding() &&
      data.num_samples % static_cast<size_t>(global_batch) != 0) {
    return invalid_argument(
        data.source + ": " + std::to_string(data.num_samples) + " samples do not fill whole batches of " +
        std::to_string(global_batch) +
        " (batch size x replicas): the executable's loss, which its model's graph computes, "
        "counts every row of a batch, padding too; evaluate a multiple of " +
        std::to_string(global_batch) + " samples");
  }
  return Status();
}

// The evaluate program over every sample of `data`, with the weights the device holds. In a job of
// several instances each feeds its replicas' rows of every step, as fit does, and the outfeed
// gathers every replica's loss and count: the result is one process's.
StatusOr<EvaluateResult> Session::Impl::evaluate_on_device(const data::Dataset& data,
                                                           const ProgressFn& progress) {
  Impl& s = *this;
  IPU_ASSIGN_OR_RETURN(uint32_t evaluate, s.program(format::kEvaluateProgram));
  const int64_t S = s.steps_per_execution, B = s.global_batch, Bi = s.batch;
  const auto N = static_cast<int64_t>(data.num_samples);
  // Every sample counts: the last execution is padded with rows the loss and the count of
  // correct rows skip (format::kPaddedRowLabel), and the steps it runs past the data cost only time.
  const int64_t steps = (N + B - 1) / B;
  const int64_t executions = (steps + S - 1) / S;
  const auto start = Clock::now();
  const std::vector<uint32_t> order = instance_rows(
      data.num_samples, steps, B, static_cast<int64_t>(s.first_replica) * B / s.total_replicas, Bi);
  EvaluateResult r;
  // A step's loss is the mean over the job's B rows (over every replica's rows), padded rows
  // adding 0: times B it is the sum over its real rows.
  double loss_sum = 0;
  std::vector<double> sums(s.metrics.size(), 0.0);
  for (int64_t e = 0; e < executions; ++e) {
    ExecutionFeed feed = s.gather(data, order, static_cast<size_t>(e * S * Bi), S, Bi);
    Outfeed out;
    IPU_RETURN_IF_ERROR(s.run_execution(evaluate, feed, out));
    // Steps past the data hold padding rows only: they add nothing.
    const int64_t data_steps = std::min(S, steps - e * S);
    // The verifier bounds what a run streams from above only: an evaluate program that streams
    // no loss (or too few) is a corrupt executable, not an empty result.
    if (static_cast<int64_t>(out.losses.size()) < data_steps) {
      return data_loss("program 'evaluate' streamed " + std::to_string(out.losses.size()) +
                       " loss(es) in an execution of " + std::to_string(data_steps) +
                       " step(s) of data; it must stream one per step");
    }
    for (int64_t i = 0; i < data_steps; ++i)
      loss_sum += static_cast<double>(out.losses[static_cast<size_t>(i)]) * static_cast<double>(B);
    for (size_t m = 0; m < sums.size(); ++m)
      sums[m] += out.metric_sums[m];
    r.steps += std::min(S, steps - e * S);
    r.samples += std::min(S * B, N - e * S * B);
    if (progress) {
      progress({1, 1, r.steps, steps, loss_sum / static_cast<double>(r.samples),
                s.metric_values(sums, static_cast<double>(r.samples)), seconds_since(start),
                e + 1 == executions, std::nullopt});
    }
  }
  r.loss = loss_sum / static_cast<double>(r.samples);
  r.metrics = s.metric_values(sums, static_cast<double>(r.samples));
  r.seconds = seconds_since(start);
  return r;
}

StatusOr<PredictResult> Session::predict(const data::Dataset& data) {
  Impl& s = *m_impl;
  IPU_ASSIGN_OR_RETURN(uint32_t predict, s.program(format::kPredictProgram));
  IPU_RETURN_IF_ERROR(s.check_one_instance("predict"));
  IPU_RETURN_IF_ERROR(s.check_data(data, /*need_labels=*/false));
  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  const int64_t S = s.steps_per_execution, B = s.batch;
  const auto start = Clock::now();
  const std::vector<uint32_t> order = data::epoch_order(data.num_samples, false, 0, 0);
  PredictResult r;
  const format::Stream& stream = s.engine->executable().streams(static_cast<int>(*s.stream_predictions));
  r.shape = {static_cast<int64_t>(data.num_samples)};
  for (int i = 1; i < stream.shape_size(); ++i)
    r.shape.push_back(stream.shape(i));
  // The last execution is padded with zeros; its padded rows are dropped.
  for (size_t first = 0; first < data.num_samples; first += static_cast<size_t>(S * B)) {
    ExecutionFeed feed = gather_execution(data, order, first, S, B);
    Outfeed out;
    IPU_RETURN_IF_ERROR(s.run_execution(predict, feed, out));
    const size_t keep =
        static_cast<size_t>(feed.valid_samples) * (out.predictions.size() / static_cast<size_t>(S * B));
    r.values.insert(r.values.end(), out.predictions.begin(),
                    out.predictions.begin() + static_cast<long>(keep));
  }
  r.samples = static_cast<int64_t>(data.num_samples);
  r.seconds = seconds_since(start);
  return r;
}

namespace {

// An input's values as the device takes them: floats as they are (a NaN or an infinity too, as
// ONNX Runtime takes them; a FLOAT16 input's transfer rounds them to binary16), integers checked
// to be exact.
StatusOr<std::vector<float>> device_values(const data::NpyArray& array, const format::ModelIo& io) {
  std::vector<float> values = data::floats_as_is(array);
  if (array.dtype[0] == 'i' || array.dtype[0] == 'u') {
    for (size_t i = 0; i < values.size(); ++i) {
      // Integer inputs (indices, flags) reach the device unchanged only within float32's exact integers.
      if (std::abs(static_cast<double>(values[i])) > static_cast<double>(format::kExactFloatIntegers)) {
        return invalid_argument("input '" + io.name() + "': element " + std::to_string(i) +
                                " is beyond the integers the device holds exactly (|v| <= 2^24)");
      }
    }
  }
  return values;
}

} // namespace

StatusOr<InferResult> Session::infer(const std::vector<data::NpyArray>& inputs) {
  Impl& s = *m_impl;
  const format::Executable& exe = s.engine->executable();
  IPU_ASSIGN_OR_RETURN(uint32_t predict, s.program(format::kPredictProgram));
  IPU_RETURN_IF_ERROR(s.check_one_instance("predict"));
  if (static_cast<int>(inputs.size()) != exe.inputs_size()) {
    return invalid_argument("the model has " + std::to_string(exe.inputs_size()) + " input(s), " +
                            std::to_string(inputs.size()) + " given");
  }
  const int64_t S = s.steps_per_execution, R = s.replicas, B = exe.batch_size();
  // Check shapes and convert every input before anything runs.
  std::optional<int64_t> samples;
  std::vector<std::vector<float>> values(inputs.size());
  std::map<uint32_t, size_t> input_of_stream;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const format::ModelIo& io = exe.inputs(static_cast<int>(i));
    std::vector<int64_t> want(io.shape().begin(), io.shape().end());
    std::vector<int64_t> got = inputs[i].shape;
    if (io.batched() && !got.empty()) {
      if (samples && *samples != got[0]) {
        return invalid_argument("input '" + io.name() + "' has " + std::to_string(got[0]) +
                                " samples, an earlier input " + std::to_string(*samples));
      }
      samples = got[0];
      got[0] = want.empty() ? 0 : want[0];
    }
    if (got != want || (samples && *samples < 1)) {
      std::string expected = shape_text(want);
      if (io.batched())
        expected = "[N" + expected.substr(1 + std::to_string(want[0]).size()); // "[N,28,28,1]"
      return invalid_argument("input '" + io.name() + "' has shape " + shape_text(inputs[i].shape) +
                              ", the model expects " + expected);
    }
    IPU_ASSIGN_OR_RETURN(values[i], device_values(inputs[i], io));
    input_of_stream[io.stream()] = i;
  }
  std::map<uint32_t, size_t> output_of_stream;
  for (int j = 0; j < exe.outputs_size(); ++j)
    output_of_stream[exe.outputs(j).stream()] = static_cast<size_t>(j);

  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  const auto start = Clock::now();
  const int64_t N = samples.value_or(1);
  const int64_t steps = samples ? (N + B * R - 1) / (B * R) : 1;
  std::vector<std::vector<float>> collected(output_of_stream.size());
  for (int64_t first_step = 0; first_step < steps; first_step += S) {
    std::map<uint32_t, int64_t> transfers; // per stream, this execution
    engine::HostStreams streams;
    streams.pull = [&](uint32_t stream, uint32_t replica, std::span<std::byte> destination) -> Status {
      auto found = input_of_stream.find(stream);
      if (found == input_of_stream.end())
        return failed_precondition("the host feeds no stream " + std::to_string(stream));
      const std::vector<float>& v = values[found->second];
      const int64_t step = first_step + transfers[stream]++ / R;
      const size_t count = destination.size() / sizeof(float);
      if (!exe.inputs(static_cast<int>(found->second)).batched()) {
        if (destination.size() != v.size() * sizeof(float))
          return data_loss("input stream " + std::to_string(stream) + " does not match its input");
        std::memcpy(destination.data(), v.data(), destination.size());
        return Status();
      }
      // Rows past the last sample are zero padding.
      const size_t begin = static_cast<size_t>((step * R + replica) * B) * (count / static_cast<size_t>(B));
      const size_t available = begin < v.size() ? std::min(count, v.size() - begin) : 0;
      std::memset(destination.data(), 0, destination.size());
      if (available > 0) std::memcpy(destination.data(), v.data() + begin, available * sizeof(float));
      return Status();
    };
    streams.push = [&](uint32_t stream, uint32_t, std::span<const std::byte> source) -> Status {
      auto found = output_of_stream.find(stream);
      if (found == output_of_stream.end()) return Status();
      const float* f = reinterpret_cast<const float*>(source.data());
      auto& out = collected[found->second];
      const bool batched = exe.outputs(static_cast<int>(found->second)).batched();
      const size_t count = source.size() / sizeof(float);
      // One push per step and replica: room for all of them at once, not regrown as they come.
      if (batched && out.empty()) out.reserve(count * static_cast<size_t>(steps * R));
      if (batched || out.empty()) out.insert(out.end(), f, f + count);
      return Status();
    };
    IPU_RETURN_IF_ERROR(s.engine->run(predict, streams));
  }
  InferResult r;
  for (int j = 0; j < exe.outputs_size(); ++j) {
    const format::ModelIo& io = exe.outputs(j);
    std::vector<int64_t> shape(io.shape().begin(), io.shape().end());
    std::vector<float>& v = collected[static_cast<size_t>(j)];
    if (io.batched() && !shape.empty()) {
      const size_t row = shape[0] > 0 ? v.size() / static_cast<size_t>(steps * R * shape[0]) : 0;
      shape[0] = N;
      v.resize(static_cast<size_t>(N) * row);
    } else {
      size_t elements = 1;
      for (int64_t d : shape)
        elements *= static_cast<size_t>(d);
      v.resize(elements);
    }
    r.outputs.push_back(data::make_npy_from_floats(io.dtype(), std::move(shape), v));
  }
  r.samples = N;
  r.seconds = seconds_since(start);
  return r;
}

std::vector<std::string> Session::metric_names() const {
  std::vector<std::string> names;
  for (const Impl::MetricStream& m : m_impl->metrics)
    names.push_back(m.name);
  return names;
}

Status Session::save_weights(const std::string& dir) const {
  return write_checkpoint(dir, named_weights());
}

std::map<std::string, NamedTensor> Session::named_weights() const {
  const format::Executable& exe = m_impl->engine->executable();
  std::map<std::string, NamedTensor> tensors;
  for (const auto& [index, bytes] : m_impl->host_state) {
    const format::Tensor& t = exe.tensors(static_cast<int>(index));
    NamedTensor named;
    named.shape.assign(t.shape().begin(), t.shape().end());
    named.values.resize(bytes.size() / sizeof(float));
    std::memcpy(named.values.data(), bytes.data(), bytes.size());
    named.half = t.dtype() == format::FLOAT16;
    tensors[t.name()] = std::move(named);
  }
  // The position of a schedule; a run at a constant rate writes what it always wrote.
  if (m_impl->schedule) {
    tensors[std::string(kIterationsCheckpointName)] = {{1}, {static_cast<float>(m_impl->iterations)}};
    tensors[std::string(kEpochsCheckpointName)] = {{1}, {static_cast<float>(m_impl->epochs_trained)}};
  }
  return tensors;
}

Status Session::set_hyper_parameter(std::string_view name, float value) {
  Impl& s = *m_impl;
  const std::optional<uint32_t> slot = format::hyper_parameter_slot(name);
  if (!slot || !s.hyper_read.count(name)) {
    std::string read;
    for (const std::string& n : s.engine->executable().hyper_parameters())
      read += (read.empty() ? "" : ", ") + n;
    return invalid_argument("this executable's optimizer does not read " + std::string(name) +
                            (read.empty() ? std::string(" (it has no optimizer)")
                                          : " (it reads " + read +
                                                "; a value that is 0 when compiled, such as SGD's momentum, "
                                                "changes the program: compile with it)"));
  }
  s.hyper[*slot] = value;
  if (*slot == format::HyperParameter::kLearningRate) s.schedule.reset();
  return Status();
}

Status Session::set_learning_rate_schedule(std::optional<format::LearningRateSchedule> schedule) {
  if (schedule &&
      !m_impl->hyper_read.count(format::kHyperParameterNames[format::HyperParameter::kLearningRate]))
    return invalid_argument("this executable has no optimizer whose learning rate a schedule could set");
  m_impl->schedule = std::move(schedule);
  return Status();
}

bool Session::has_learning_rate_schedule() const {
  return m_impl->schedule.has_value();
}

const format::HyperParameterValues& Session::hyper_parameters() const {
  return m_impl->hyper;
}

int64_t Session::iterations() const {
  return m_impl->iterations;
}

int64_t Session::epochs_trained() const {
  return m_impl->epochs_trained;
}

Status Session::load_weights(const std::string& dir, std::vector<std::string>* not_loaded) {
  IPU_ASSIGN_OR_RETURN(auto tensors, read_checkpoint(dir));
  IPU_RETURN_IF_ERROR(set_weights(tensors, dir));
  if (not_loaded) {
    const format::Executable& exe = m_impl->engine->executable();
    for (const auto& [index, bytes] : m_impl->host_state)
      tensors.erase(exe.tensors(static_cast<int>(index)).name());
    tensors.erase(std::string(kIterationsCheckpointName));
    tensors.erase(std::string(kEpochsCheckpointName));
    for (const auto& entry : tensors)
      not_loaded->push_back(entry.first);
  }
  return Status();
}

Status Session::set_weights(const std::map<std::string, NamedTensor>& tensors, const std::string& source) {
  const format::Executable& exe = m_impl->engine->executable();
  // Check everything first so a bad checkpoint changes nothing.
  for (const auto& [index, bytes] : m_impl->host_state) {
    const format::Tensor& t = exe.tensors(static_cast<int>(index));
    auto it = tensors.find(t.name());
    if (it == tensors.end()) {
      if (t.role() == format::OPTIMIZER_STATE) continue; // a fresh optimizer is fine
      return invalid_argument(source + ": checkpoint has no weight '" + printable(t.name()) + "'");
    }
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    if (it->second.shape != shape) {
      return invalid_argument(source + ": weight '" + printable(t.name()) + "' has shape " +
                              shape_text(it->second.shape) + ", the executable expects " + shape_text(shape));
    }
  }
  // A checkpoint from before schedules, or of an executable without an optimizer, starts at 0.
  std::optional<int64_t> iterations, epochs;
  for (const auto& [name, out] :
       {std::pair{kIterationsCheckpointName, &iterations}, std::pair{kEpochsCheckpointName, &epochs}}) {
    auto it = tensors.find(std::string(name));
    if (it == tensors.end()) continue;
    const std::vector<float>& v = it->second.values;
    if (v.size() != 1 || !(v[0] >= 0) || v[0] != std::floor(v[0]))
      return invalid_argument(source + ": '" + std::string(name) +
                              "' is not one whole number of updates or epochs");
    *out = static_cast<int64_t>(v[0]);
  }
  for (auto& [index, bytes] : m_impl->host_state) {
    const format::Tensor& t = exe.tensors(static_cast<int>(index));
    auto it = tensors.find(t.name());
    if (it == tensors.end()) continue;
    std::memcpy(bytes.data(), it->second.values.data(), bytes.size());
    // A float32 file may feed a FLOAT16 tensor: its values round to nearest, as the device would
    // round them on their way in, so the host's copy holds what the device holds.
    if (t.dtype() == format::FLOAT16) {
      auto* values = reinterpret_cast<float*>(bytes.data());
      for (size_t i = 0; i < bytes.size() / sizeof(float); ++i)
        values[i] = round_to_half(values[i]);
    }
  }
  m_impl->iterations = iterations.value_or(0);
  m_impl->epochs_trained = epochs.value_or(0);
  return Status();
}

} // namespace ipu::session
