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

Status all_reduce_mean_in_replica_order(Collectives& collectives, std::span<float* const> local,
                                        size_t elements) {
  const size_t local_replicas = local.size();
  std::vector<float> sent(local_replicas * elements);
  for (size_t r = 0; r < local_replicas; ++r)
    std::memcpy(sent.data() + r * elements, local[r], elements * sizeof(float));
  std::vector<float> all(sent.size() * static_cast<size_t>(collectives.size()));
  IPU_RETURN_IF_ERROR(collectives.all_gather(std::as_bytes(std::span<const float>(sent)),
                                             std::as_writable_bytes(std::span<float>(all))));
  const size_t replicas = local_replicas * static_cast<size_t>(collectives.size());
  float* sum = all.data(); // replica 0's copy accumulates, as the single-process sum does
  for (size_t r = 1; r < replicas; ++r) {
    const float* other = all.data() + r * elements;
    for (size_t i = 0; i < elements; ++i)
      sum[i] += other[i];
  }
  const float scale = 1.0f / static_cast<float>(replicas);
  for (size_t i = 0; i < elements; ++i)
    sum[i] *= scale;
  for (float* replica : local)
    std::memcpy(replica, sum, elements * sizeof(float));
  return Status();
}

} // namespace ipu::collectives
