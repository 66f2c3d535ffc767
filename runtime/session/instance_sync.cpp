#include "runtime/session/session_impl.h"

#include <cstring>

namespace ipu::session {

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

// Instance 0's weights and optimizer state (its --weights checkpoint, or the executable's) to all.
Status Session::Impl::broadcast_host_state() {
  if (!collectives || collectives->size() == 1) return Status();
  for (auto& [tensor, bytes] : host_weights())
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

} // namespace ipu::session
