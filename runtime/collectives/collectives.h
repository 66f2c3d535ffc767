// Collective operations between the host instances of one job (PopRun's instances; docs/distributed.md).
// The runtime reduces and broadcasts through this interface only: a single process uses
// SingleInstance, and ipurun links the Open MPI implementation (runtime/mpi), so the runtime
// libraries build and run without MPI.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::collectives {

// How long a barrier waits for the other instances.
enum class Wait {
  kBounded,   // up to the job's collective timeout, as every other collective
  kUnbounded, // as long as it takes: instance 0's compile, whose length no one can know
};

// An implementation may bound how long a collective waits for the other instances; one that
// gives up returns DeadlineExceeded naming the instances that did not answer, and the caller must
// then abort(), as the job can no longer agree on what was exchanged.
class Collectives {
public:
  virtual ~Collectives() = default;

  // This instance's number, in [0, size()); instance i drives replicas [i·R/I, (i+1)·R/I).
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every instance passes a span of the same size; afterwards each holds `root`'s bytes.
  virtual Status broadcast(std::span<std::byte> bytes, int root) = 0;
  // Every instance passes `sent` of the same size and `received` of size() times it; afterwards
  // `received` holds every instance's `sent`, in rank order.
  virtual Status all_gather(std::span<const std::byte> sent, std::span<std::byte> received) = 0;
  // Returns once every instance has called it.
  virtual Status barrier(Wait wait) = 0;
  // Ends this instance and every other with `exit_code`, so that none waits for a peer that will
  // never answer. For an instance that met an error and cannot take part in the next collective.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// One instance alone: every collective is the identity.
class SingleInstance final : public Collectives {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status broadcast(std::span<std::byte> bytes, int root) override;
  Status all_gather(std::span<const std::byte> sent, std::span<std::byte> received) override;
  Status barrier(Wait) override { return Status(); }
  [[noreturn]] void abort(int exit_code) override;
};

// One float tensor of an all-reduce: this instance's replicas' copies (consecutive replicas, in
// order) and its element count.
struct ReplicaTensor {
  std::vector<float*> local;
  size_t elements = 0;
};

// The mean over every replica of the job of each tensor, written back into each of this
// instance's replicas; instances hold consecutive replicas, ranks in replica order. One
// all-gather carries every tensor. Each element is summed in global replica order, replica 0
// first, then scaled by 1/R: the order a single process sums in, so the result is bitwise the same
// for any number of instances (an MPI_SUM reduction fixes no order).
Status all_reduce_mean_in_replica_order(Collectives& collectives, std::span<const ReplicaTensor> tensors);

} // namespace ipu::collectives
