// `ipurun --trace FILE.json`: the host time ipurun spent in each program the engine ran and in
// each step of it (compute sets, copies, stream transfers, all-reduces), as Chrome trace events
// (cli/trace_events.h) on the tracks of `ipucc compile --trace` (cli/ipu_tracks.h). The gaps
// between programs are the host's own work (reading and batching data, callbacks). It measures
// the simulator on this machine, not the IPU: the compile's trace has the estimated cycles.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/engine/run_observer.h"

namespace ipu::cli {

class MeasuredTrace final : public engine::RunObserver {
public:
  void attached(const format::Executable& executable) override;
  void ran_program(uint32_t program, Clock::time_point start, Clock::time_point end) override;
  void ran_step(const format::Program& step, Clock::time_point start, Clock::time_point end) override;

  // Whether the engine ran any program (a run that failed before it has nothing to show).
  bool ran() const;
  nlohmann::json document() const;

private:
  enum class Kind { kProgram, kComputeSet, kCopy, kStreamIn, kStreamOut, kAllReduce };
  struct Record {
    Kind kind;
    uint32_t index;  // program, compute set, stream or (kCopy) source tensor
    uint32_t second; // kCopy: the destination tensor; kAllReduce: the tensors reduced
    Clock::time_point start;
    Clock::time_point end;
  };
  struct TensorInfo {
    std::string name;
    uint32_t ipu;
  };

  // From the executable the engine attached: the names and places the trace shows.
  std::string m_model;
  std::vector<std::string> m_programs;
  std::vector<std::string> m_streams;
  std::vector<std::string> m_compute_sets;
  std::vector<std::vector<uint32_t>> m_compute_set_ipus;
  std::vector<TensorInfo> m_tensors;
  std::vector<std::string> m_ipus; // process names

  mutable std::mutex m_mutex;
  std::vector<Record> m_records;
  uint64_t m_steps_left_out = 0; // past the cap on slices
};

} // namespace ipu::cli
