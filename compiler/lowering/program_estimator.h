// What a program tree costs on the IPU, estimated from its compute sets' cycles and the target's
// rates for what moves between them (streams, copies, all-reduces): the cycles per step that
// `ipucc compile --json` reports, their parts, and the same walk laid out in time for a trace.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

// One step of a program at its place on the estimated timeline (ProgramEstimator::place).
struct PlacedStep {
  enum class Kind {
    kComputeSet, // `program` executes a compute set
    kCopies,     // a run of copies made as one exchange: `copies`
    kStreamIn,
    kStreamOut,
    kAllReduce,
    kRepeatRest, // `iterations` iterations of the Repeat `program`, left undrawn one by one
  };
  Kind kind = Kind::kComputeSet;
  const format::Program* program = nullptr;
  std::vector<const format::Copy*> copies;
  double start = 0;
  double cycles = 0;
  uint64_t iterations = 0;
};

class ProgramEstimator {
public:
  // `exe` holds the compute sets and tensors the programs name; `replicas` run the programs.
  ProgramEstimator(const format::Executable& exe, const target::TargetSpec& target, uint32_t replicas)
      : m_exe(exe), m_target(target), m_replicas(replicas) {}

  // Estimated device cycles of a program tree (Parallel takes its slowest branch).
  double cycles_of(const format::Program& program) const;
  double cycles_of(const std::vector<uint32_t>& compute_sets) const;
  // Its parts: compute, vertex launch, exchange and sync of the compute sets it runs, and the
  // transfers (streams, copies, all-reduces) between them.
  format::CycleBreakdown breakdown_of(const format::Program& program) const;
  // What one all-reduce costs across every replica, per link (target::all_reduce_cost).
  format::AllReduceEstimate all_reduce_estimate(const format::AllReduce& all_reduce) const;

  // Lays `program` out from cycle `start` as cycles_of() times it (a Sequence's steps one after
  // another, a Parallel's branches from the same start, a Conditional's slower side) and visits
  // each compute set, run of copies, stream transfer and all-reduce at its place. Once
  // `steps_left` visits are spent, each Repeat still running visits its remaining iterations as
  // one kRepeatRest step: a long loop's trace stays a size a viewer opens. Returns the end, which
  // is start + cycles_of(program).
  double place(const format::Program& program, double start,
               const std::function<void(const PlacedStep&)>& visit, uint64_t& steps_left) const;

private:
  double bytes_of(uint32_t tensor) const;
  // One exchange that makes all of `copies` at once.
  double copies_cycles(const std::vector<const format::Copy*>& copies) const;
  // Calls visit(&step, {}, 0) for each step of `sequence` that is not a copy and
  // visit(nullptr, run, cycles) once for each run of consecutive copies, in order.
  template <typename Visit>
  void for_each_exchange_or_step(const format::Sequence& sequence, Visit visit) const;
  double all_reduce_cycles(const format::AllReduce& all_reduce) const;

  const format::Executable& m_exe;
  const target::TargetSpec& m_target;
  uint32_t m_replicas;
};

} // namespace ipu::lowering
