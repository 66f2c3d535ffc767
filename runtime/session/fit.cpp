#include "runtime/session/session_impl.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <string>

#include "runtime/base/non_finite.h"

namespace ipu::session {

// The steps of each epoch: --steps-per-epoch, checked against the data and steps_per_execution,
// else whole executions of whole batches.
StatusOr<int64_t> Session::Impl::fit_steps(const data::Dataset& data, const FitOptions& options) const {
  const int64_t S = steps_per_execution, B = global_batch;
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
  return steps;
}

// What an execution's updates leave in the epoch's result and the step log: the optimizer's
// position, the learning rate, the loss scale and the updates skipped.
void Session::Impl::record_updates(const Outfeed& out, const std::vector<float>& hyper_rows,
                                   const std::vector<float>& learning_rates, EpochResult& r,
                                   StepLog* step_log) {
  // Keras's iterations, the schedule's position, count the updates applied: a skipped one
  // leaves the inner optimizer as it was.
  const auto skipped = static_cast<int64_t>(std::count(out.skipped.begin(), out.skipped.end(), true));
  iterations += updates_per_execution - skipped;
  r.learning_rate = stream_hyper ? static_cast<double>(learning_rates.back()) : std::nan("");
  if (step_log && stream_hyper)
    step_log->learning_rates.insert(step_log->learning_rates.end(), learning_rates.begin(),
                                    learning_rates.end());
  // The static loss scale is the one streamed with each update.
  if (hyper_read.count(format::kHyperParameterNames[format::HyperParameter::kLossScale])) {
    for (size_t row = 0; row < hyper_rows.size(); row += format::kHyperParameterCount) {
      r.loss_scale = hyper_rows[row + format::HyperParameter::kLossScale];
      if (step_log) step_log->loss_scales.push_back(hyper_rows[row + format::HyperParameter::kLossScale]);
    }
  }
  // The dynamic scale is the one each update reported.
  if (stream_loss_scale) {
    if (!out.loss_scales.empty()) r.loss_scale = out.loss_scales.back();
    r.skipped_updates = std::max<int64_t>(r.skipped_updates, 0) + skipped;
    if (step_log) {
      step_log->loss_scales.insert(step_log->loss_scales.end(), out.loss_scales.begin(),
                                   out.loss_scales.end());
      step_log->skipped.insert(step_log->skipped.end(), out.skipped.begin(), out.skipped.end());
    }
  }
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
  IPU_ASSIGN_OR_RETURN(const int64_t steps, s.fit_steps(data, options));
  // Fit keeps the host's copy of the weights from here on (checkpoints, a NaN's diagnosis): taken
  // now, so weights_from_host moves them, instance 0's on every instance.
  s.host_weights();
  IPU_RETURN_IF_ERROR(s.broadcast_host_state());
  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  s.last_finite_state = s.host_weights();
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
      const bool finite_losses = all_finite(out.losses);
      if (!s.keep_state_if_finite() || !finite_losses) {
        return s.diagnose_non_finite(train, feed, hyper_rows, epoch, r.steps);
      }
      s.record_updates(out, hyper_rows, learning_rates, r, step_log);
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

} // namespace ipu::session
