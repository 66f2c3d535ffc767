// The program interpreter of the simulated device. Owns the device memory (one host buffer per
// tensor: tile memory is modelled by the compiler, not simulated byte by byte), runs compute
// sets by executing their vertices in parallel with TBB, and moves data through host streams.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/collectives/collectives.h"
#include "runtime/engine/rounding.h"
#include "runtime/engine/run_observer.h"
#include "runtime/format/executable.pb.h"
#include "runtime/format/initial_data.h"

namespace ipu::engine {

struct EngineOptions {
  int threads = 0; // TBB workers; 0 = all cores
  // The job's instances (docs/distributed.md); null for one process. With I instances this one
  // runs replicas [rank·R/I, (rank+1)·R/I) of the executable's R, and AllReduce averages over all R.
  collectives::Collectives* collectives = nullptr;
  // How values written to FLOAT16 tensors round (nearest even unless stochastic).
  RoundingOptions rounding;
  // Told the host time of every program and step run (run_observer.h); null: nothing measured.
  RunObserver* observer = nullptr;
};

// Host side of the streams. `pull` fills `destination` for a host-to-device stream; `push`
// receives one transfer of a device-to-host stream. Both run on the engine's calling thread;
// a transfer node calls them once per replica, replica 0 first.
// A FLOAT16 tensor's transfers carry 4-byte floats (format::host_element_size); the engine
// rounds what a host-to-device transfer brings to binary16.
struct HostStreams {
  std::function<Status(uint32_t stream, uint32_t replica, std::span<std::byte> destination)> pull;
  std::function<Status(uint32_t stream, uint32_t replica, std::span<const std::byte> source)> push;
};

class Engine {
public:
  // Verifies the executable (structure and every vertex) and allocates device memory for every
  // replica, initialised from the tensors' initial values (read from the data section of a loaded
  // file, which the engine keeps for reset_tensor).
  static StatusOr<std::unique_ptr<Engine>> create(format::LoadedExecutable loaded,
                                                  const EngineOptions& options);
  // An executable built in memory, its initial values inline.
  static StatusOr<std::unique_ptr<Engine>> create(format::Executable executable,
                                                  const EngineOptions& options);
  ~Engine();

  const format::Executable& executable() const;
  std::optional<uint32_t> find_program(const std::string& name) const;
  std::optional<uint32_t> find_stream(const std::string& name) const;
  std::optional<uint32_t> find_tensor(const std::string& name) const;

  Status run(uint32_t program, HostStreams& streams);

  // The replicas this instance runs (all of them for one process), and the first one's number.
  uint32_t replicas() const;
  uint32_t first_replica() const;
  // `replica` counts this instance's replicas from 0.
  std::span<std::byte> tensor_bytes(uint32_t tensor, uint32_t replica = 0);
  // Sets `tensor` on every replica back to its initial value (the executable's, else zeros).
  void reset_tensor(uint32_t tensor);

  // Diagnosis of a NaN or an infinity (ipurun train replays the execution that produced one):
  // while on, after every compute set the engine scans the float tensors its vertices touch, on
  // every replica, and stops the run (kNonFinite) at the first that holds a NaN or an infinity,
  // naming the tensor, the element, the compute set and its node. Tensors that held one when the
  // check was switched on (a mask of -inf) are not reported. It reads every touched tensor again
  // after each compute set, so it is off unless a run needs diagnosing.
  void set_finite_check(bool on);

private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

} // namespace ipu::engine
