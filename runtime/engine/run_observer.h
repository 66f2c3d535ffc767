// What the engine tells an observer of a run (ipurun --trace): the host time of each program it
// runs and of each step within: a compute set, a copy, a stream transfer, an all-reduce. Nothing
// is measured without an observer.
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/format/executable.pb.h"

namespace ipu::engine {

class RunObserver {
public:
  using Clock = std::chrono::steady_clock;
  virtual ~RunObserver() = default;

  // Once, when the engine has verified `executable`; the Program references of the calls below
  // point into it and stay valid while the engine lives.
  virtual void attached(const format::Executable& executable) = 0;
  // Engine::run of program `program` (its index in the executable), on the caller's thread.
  virtual void ran_program(uint32_t program, Clock::time_point start, Clock::time_point end) = 0;
  // One step: an execute, copy, stream_in, stream_out or all_reduce node. Parallel branches call
  // this from several threads at once.
  virtual void ran_step(const format::Program& step, Clock::time_point start, Clock::time_point end) = 0;
};

} // namespace ipu::engine
