#include "runtime/collectives/collectives.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace ipu::collectives {

Status SingleInstance::broadcast(std::span<std::byte> /*bytes*/, int root) {
  if (root != 0) return internal_error("broadcast from instance " + std::to_string(root) + " of 1");
  return Status();
}

Status SingleInstance::all_gather(std::span<const std::byte> sent, std::span<std::byte> received) {
  if (received.size() != sent.size()) return internal_error("all_gather: received is not the size of sent");
  std::memcpy(received.data(), sent.data(), sent.size());
  return Status();
}

void SingleInstance::abort(int exit_code) {
  std::exit(exit_code);
}

Status all_reduce_mean_in_replica_order(Collectives& collectives, std::span<const ReplicaTensor> tensors) {
  if (tensors.empty()) return Status();
  const size_t local_replicas = tensors.front().local.size();
  size_t per_replica = 0; // elements of every tensor, one replica's copies side by side
  for (const ReplicaTensor& t : tensors) {
    if (t.local.size() != local_replicas)
      return internal_error("all-reduce tensors of unequal replica counts");
    per_replica += t.elements;
  }
  std::vector<float> sent(local_replicas * per_replica);
  for (size_t r = 0, offset = 0; r < local_replicas; ++r) {
    for (const ReplicaTensor& t : tensors) {
      std::memcpy(sent.data() + offset, t.local[r], t.elements * sizeof(float));
      offset += t.elements;
    }
  }
  // [instance][local replica] is [replica]: every replica's copies, in replica order.
  std::vector<float> all(sent.size() * static_cast<size_t>(collectives.size()));
  IPU_RETURN_IF_ERROR(collectives.all_gather(std::as_bytes(std::span<const float>(sent)),
                                             std::as_writable_bytes(std::span<float>(all))));
  const size_t replicas = local_replicas * static_cast<size_t>(collectives.size());
  float* sum = all.data(); // replica 0's copies accumulate, as the single-process sum does
  for (size_t r = 1; r < replicas; ++r) {
    const float* other = all.data() + r * per_replica;
    for (size_t i = 0; i < per_replica; ++i)
      sum[i] += other[i];
  }
  const float scale = 1.0f / static_cast<float>(replicas);
  for (size_t i = 0; i < per_replica; ++i)
    sum[i] *= scale;
  for (const ReplicaTensor& t : tensors) {
    for (float* replica : t.local)
      std::memcpy(replica, sum, t.elements * sizeof(float));
    sum += t.elements;
  }
  return Status();
}

} // namespace ipu::collectives
