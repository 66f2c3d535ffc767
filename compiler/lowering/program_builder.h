// Builds the executable's streams and program trees, and estimates what programs cost.
#pragma once

#include <string>
#include <vector>

#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

class ProgramBuilder {
public:
  ProgramBuilder(format::Executable& exe, const target::TargetSpec& target, uint32_t replicas)
      : m_exe(exe), m_target(target), m_replicas(replicas) {}

  uint32_t stream(const std::string& name, format::Stream::Direction direction, uint32_t like_tensor);

  static void stream_in(format::Sequence& seq, uint32_t stream, uint32_t tensor);
  static void stream_out(format::Sequence& seq, uint32_t stream, uint32_t tensor);
  static void execute(format::Sequence& seq, const std::vector<uint32_t>& sets);
  static void copy(format::Sequence& seq, uint32_t source, uint32_t destination);
  static format::Program repeat(uint64_t count, format::Sequence body);
  static format::Program sequence(format::Sequence body);

  // Adds a program whose estimated cycles, divided by `steps` (the micro-batch steps it runs),
  // give its cycles per step.
  void add(const std::string& name, format::Program program, uint64_t steps);

  // Estimated device cycles of a program tree (Parallel takes its slowest branch).
  double estimate_cycles(const format::Program& program) const;
  double estimate_cycles(const std::vector<uint32_t>& compute_sets) const;
  // Its parts: compute, vertex launch, exchange and sync of the compute sets it runs, and the
  // transfers (streams, copies, all-reduces) between them.
  format::CycleBreakdown estimate_breakdown(const format::Program& program) const;
  // What one all-reduce costs across every replica, per link (target::all_reduce_cost).
  format::AllReduceEstimate all_reduce_estimate(const format::AllReduce& all_reduce) const;

private:
  double bytes_of(uint32_t tensor) const;
  // One exchange that makes all of `copies` at once.
  double copies_cycles(const std::vector<const format::Copy*>& copies) const;
  // Calls visit(&step, 0) for each step of `sequence` that is not a copy and visit(nullptr, cycles)
  // once for each run of consecutive copies, in order.
  template <typename Visit>
  void for_each_exchange_or_step(const format::Sequence& sequence, Visit visit) const;
  double all_reduce_cycles(const format::AllReduce& all_reduce) const;

  format::Executable& m_exe;
  const target::TargetSpec& m_target;
  uint32_t m_replicas;
};

} // namespace ipu::lowering
