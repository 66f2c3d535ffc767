#include "runtime/session/session_impl.h"

#include <algorithm>
#include <string>

namespace ipu::session {

StatusOr<EvaluateResult> Session::evaluate(const data::Dataset& data, const ProgressFn& progress) {
  Impl& s = *m_impl;
  IPU_RETURN_IF_ERROR(s.check_one_instance("evaluate"));
  IPU_RETURN_IF_ERROR(s.check_evaluable(data));
  IPU_RETURN_IF_ERROR(s.sync_weights(format::kWeightsFromHostProgram));
  return s.evaluate_on_device(data, progress);
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

} // namespace ipu::session
