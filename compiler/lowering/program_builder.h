// Builds the executable's streams and program trees, and estimates what programs cost.
#pragma once

#include <string>
#include <vector>

#include "compiler/lowering/program_estimator.h"
#include "compiler/target/target.h"
#include "runtime/format/executable.pb.h"

namespace ipu::lowering {

class ProgramBuilder {
public:
  ProgramBuilder(format::Executable& exe, const target::TargetSpec& target, uint32_t replicas)
      : m_exe(exe), m_estimator(exe, target, replicas) {}

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

  // What programs of this executable cost (its compute sets as built so far).
  const ProgramEstimator& estimator() const { return m_estimator; }

private:
  format::Executable& m_exe;
  ProgramEstimator m_estimator;
};

} // namespace ipu::lowering
