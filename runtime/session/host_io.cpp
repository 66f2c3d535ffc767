#include "runtime/session/session_impl.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "runtime/session/stream_feed.h"

namespace ipu::session {

Status Session::Impl::sync_weights(std::string_view name) {
  IPU_ASSIGN_OR_RETURN(uint32_t index, program(name));
  // Nothing has changed the device's weights since it was created (host_state).
  if (!host_state && name == format::kWeightsFromHostProgram) return Status();
  std::map<uint32_t, std::vector<std::byte>>& host = host_weights();
  const format::Executable& exe = engine->executable();
  engine::HostStreams streams;
  // Weight streams are named "to_device:<tensor>" / "to_host:<tensor>".
  auto tensor_of = [&](uint32_t stream) -> std::optional<uint32_t> {
    const std::string& s = exe.streams(static_cast<int>(stream)).name();
    return engine->find_tensor(s.substr(s.find(':') + 1));
  };
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> destination) -> Status {
    auto t = tensor_of(stream);
    if (!t || !host.count(*t) || host[*t].size() != destination.size()) {
      return data_loss("weight stream '" + exe.streams(static_cast<int>(stream)).name() +
                       "' names no weight");
    }
    std::memcpy(destination.data(), host[*t].data(), destination.size());
    return Status();
  };
  // Replicas hold identical weights after every all-reduced update: replica 0 speaks for all.
  streams.push = [&](uint32_t stream, uint32_t replica, std::span<const std::byte> source) -> Status {
    if (replica != 0) return Status();
    auto t = tensor_of(stream);
    if (!t || !host.count(*t) || host[*t].size() != source.size()) {
      return data_loss("weight stream '" + exe.streams(static_cast<int>(stream)).name() +
                       "' names no weight");
    }
    std::memcpy(host[*t].data(), source.data(), source.size());
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
  // verify_host_contract proves a transfer is one step's rows and a run takes at most S steps, so
  // the feed holds every transfer; the checks make a broken proof an error, not a stray read.
  StreamFeed feed_streams;
  const auto rows_of = [](const auto& values, const char* what, uint64_t share, const char* limit) {
    return StreamFeed::Source{.bytes = std::as_bytes(std::span(values)),
                              .share = share,
                              .overrun =
                                  std::string("the executable streams more ") + what + " than " + limit};
  };
  if (stream_features)
    feed_streams.add(*stream_features, rows_of(feed.features, "features", 1, "an execution holds"));
  if (stream_labels) {
    feed_streams.add(*stream_labels, float_labels
                                         ? rows_of(feed.float_labels, "labels", 1, "an execution holds")
                                         : rows_of(feed.labels, "labels", 1, "an execution holds"));
  }
  // One row per update, the same for every replica.
  if (stream_hyper)
    feed_streams.add(*stream_hyper,
                     rows_of(hyper_rows, "hyper-parameters", replicas, "an execution has updates"));
  engine::HostStreams streams;
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> destination) {
    return feed_streams.pull(stream, destination);
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
  out.steps_started =
      stream_features ? static_cast<int64_t>(feed_streams.transfers(*stream_features) / replicas) : 0;
  IPU_RETURN_IF_ERROR(status);
  return combine_outfeed(out);
}

} // namespace ipu::session
