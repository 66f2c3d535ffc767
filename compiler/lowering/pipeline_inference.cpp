#include "compiler/lowering/pipeline_inference.h"

#include <algorithm>
#include <string>

#include "runtime/format/verifier.h"

namespace ipu::lowering {
namespace {

// A value crossing forward from stage `from` to a later stage: buffers[k] holds, after a slot,
// the micro-batch `from` sent k slots before; the destination stage reads the last one.
struct Crossing {
  const StageCopy* copy = nullptr;
  std::vector<uint32_t> buffers;
  int span() const { return copy->destination_stage - copy->source_stage; }
};

class InferenceSlots {
public:
  InferenceSlots(const format::Executable& exe, const ProgramBuilder& programs,
                 const InferencePipeline& pipeline, std::vector<Crossing> crossings, uint64_t steps)
      : m_exe(exe), m_programs(programs), m_pipeline(pipeline), m_crossings(std::move(crossings)),
        m_steps(static_cast<int64_t>(steps)), m_stages(static_cast<int>(pipeline.stage_sets.size())),
        m_busy(pipeline.stage_sets.size(), 0), m_crossing_cycles(pipeline.stage_sets.size(), 0) {}

  // Slot t appended to `program`, and to `estimate` when not null; with `repeat`, in a Repeat of
  // that many slots, each a slot later than the one before it (the same program when every stage
  // is busy). A repeat of 0 is a slot of the ramp-up or ramp-down.
  void append(int64_t t, uint64_t repeat, format::Sequence& program, format::ScheduleEstimate* estimate);

  const std::vector<double>& busy() const { return m_busy; }
  const std::vector<double>& crossing_cycles() const { return m_crossing_cycles; }

private:
  // The micro-batch stage s runs in slot t, if any.
  bool runs(int stage, int64_t t) const { return t - stage >= 0 && t - stage < m_steps; }
  int stage_of(uint32_t tensor) const {
    return static_cast<int>(m_exe.tensors(static_cast<int>(tensor)).ipu());
  }

  const format::Executable& m_exe;
  const ProgramBuilder& m_programs;
  const InferencePipeline& m_pipeline;
  std::vector<Crossing> m_crossings;
  int64_t m_steps;
  int m_stages;
  std::vector<double> m_busy, m_crossing_cycles;
};

void InferenceSlots::append(int64_t t, uint64_t repeat, format::Sequence& program,
                            format::ScheduleEstimate* estimate) {
  const uint64_t count = std::max<uint64_t>(1, repeat);
  format::Sequence before, after;
  format::Parallel parallel;
  std::vector<format::Sequence> crossing(static_cast<size_t>(m_stages));
  auto crossing_copy = [&](format::Sequence& seq, int stage, uint32_t source, uint32_t destination) {
    ProgramBuilder::copy(seq, source, destination);
    ProgramBuilder::copy(crossing[static_cast<size_t>(stage)], source, destination);
  };
  for (const StreamTransfer& in : m_pipeline.inputs) {
    if (runs(stage_of(in.tensor), t)) ProgramBuilder::stream_in(before, in.stream, in.tensor);
  }
  for (const Crossing& c : m_crossings) {
    const int to = c.copy->destination_stage;
    if (runs(to, t)) crossing_copy(before, to, c.buffers.back(), c.copy->destination);
  }
  format::ScheduleSlot* estimated = estimate ? estimate->add_slots() : nullptr;
  if (estimated && count > 1) estimated->set_repeat(count);
  for (int s = 0; s < m_stages; ++s) {
    if (!runs(s, t)) continue;
    const std::vector<uint32_t>& sets = m_pipeline.stage_sets[static_cast<size_t>(s)];
    format::Sequence branch;
    ProgramBuilder::execute(branch, sets);
    *parallel.add_branches()->mutable_sequence() = std::move(branch);
    const double cycles = m_programs.estimator().cycles_of(sets);
    m_busy[static_cast<size_t>(s)] += cycles * static_cast<double>(count);
    if (!estimated) continue;
    format::SlotWork* work = estimated->add_work();
    work->set_stage(static_cast<uint32_t>(s));
    work->set_forward(true);
    work->set_micro_batch(static_cast<uint32_t>(t - s));
    work->set_cycles(cycles);
  }
  // Values still on their way move on by one buffer (the farthest first, so none is overwritten
  // before it moved), then each stage that ran sends what it computed.
  for (const Crossing& c : m_crossings) {
    // What stage `from` sent k slots ago is in buffers[k - 1]; it moves on until it reaches the last.
    bool moving = false;
    for (int k = 1; k < c.span(); ++k)
      moving = moving || runs(c.copy->source_stage, t - k);
    if (!moving) continue;
    for (size_t k = c.buffers.size() - 1; k > 0; --k)
      crossing_copy(after, c.copy->destination_stage, c.buffers[k - 1], c.buffers[k]);
  }
  for (const Crossing& c : m_crossings) {
    if (runs(c.copy->source_stage, t))
      crossing_copy(after, c.copy->source_stage, c.copy->source, c.buffers[0]);
  }
  for (const StreamTransfer& out : m_pipeline.outputs) {
    if (runs(stage_of(out.tensor), t)) ProgramBuilder::stream_out(after, out.stream, out.tensor);
  }
  for (int s = 0; s < m_stages; ++s) {
    m_crossing_cycles[static_cast<size_t>(s)] += m_programs.estimator().cycles_of(ProgramBuilder::sequence(
                                                     std::move(crossing[static_cast<size_t>(s)]))) *
                                                 static_cast<double>(count);
  }
  format::Sequence slot;
  for (auto& step : *before.mutable_steps())
    *slot.add_steps() = std::move(step);
  if (parallel.branches_size() == 1) {
    for (auto& step : *parallel.mutable_branches(0)->mutable_sequence()->mutable_steps())
      *slot.add_steps() = std::move(step);
  } else if (parallel.branches_size() > 1) {
    *slot.add_steps()->mutable_parallel() = std::move(parallel);
  }
  for (auto& step : *after.mutable_steps())
    *slot.add_steps() = std::move(step);
  // The slot's cost is its program's: its reads, one exchange in, the slowest stage, one exchange
  // out, its writes (ProgramEstimator::cycles_of), as the pipelined update's slots.
  format::Program slot_program = ProgramBuilder::sequence(std::move(slot));
  if (estimated) estimated->set_cycles(m_programs.estimator().cycles_of(slot_program));
  // A slot of the ramp is a nested Sequence, so its copies never merge with the next slot's into
  // one exchange.
  if (repeat > 0) {
    *program.add_steps() = ProgramBuilder::repeat(repeat, std::move(*slot_program.mutable_sequence()));
  } else {
    *program.add_steps() = std::move(slot_program);
  }
}

} // namespace

const std::vector<uint32_t>& receive_buffers(LowerContext& ctx, ReceiveBuffers& receive,
                                             const StageCopy& copy, size_t depth) {
  std::vector<uint32_t>& buffers = receive[copy.destination];
  while (buffers.size() < depth) {
    const std::string name = ctx.executable().tensors(static_cast<int>(copy.destination)).name() +
                             "/receive" + std::to_string(buffers.size());
    buffers.push_back(ctx.add_buffer(name, copy.destination, format::STASH));
  }
  return buffers;
}

format::Program build_pipelined_inference(LowerContext& ctx, const ProgramBuilder& programs,
                                          const InferencePipeline& pipeline, uint64_t steps,
                                          ReceiveBuffers& receive, format::ScheduleEstimate* estimate) {
  const format::Executable& exe = ctx.executable();
  const auto S = static_cast<int64_t>(pipeline.stage_sets.size());
  const auto N = static_cast<int64_t>(steps);
  std::vector<uint64_t> receive_bytes(static_cast<size_t>(S), 0);
  std::vector<Crossing> crossings;
  for (const StageCopy& c : ctx.stage_copies()) {
    if (c.phase != ir::Phase::kForward) continue;
    Crossing crossing{&c, {}};
    const auto span = static_cast<size_t>(crossing.span());
    const std::vector<uint32_t>& buffers = receive_buffers(ctx, receive, c, span);
    crossing.buffers.assign(buffers.begin(), buffers.begin() + static_cast<std::ptrdiff_t>(span));
    const format::Tensor& t = exe.tensors(static_cast<int>(c.destination));
    receive_bytes[static_cast<size_t>(c.destination_stage)] +=
        span * format::element_count(t) * format::dtype_size(t.dtype());
    crossings.push_back(std::move(crossing));
  }

  // Slots 0 .. N + S - 2; from S - 1 to N - 1 every stage is busy and each slot is the same program.
  InferenceSlots slots(exe, programs, pipeline, std::move(crossings), steps);
  format::Sequence program;
  for (int64_t t = 0; t < N + S - 1; ++t) {
    if (t == S - 1 && N >= S) {
      slots.append(t, static_cast<uint64_t>(N - S + 1), program, estimate);
      t = N - 1;
    } else {
      slots.append(t, 0, program, estimate);
    }
  }
  if (estimate) {
    for (int64_t s = 0; s < S; ++s) {
      estimate->add_busy_cycles(slots.busy()[static_cast<size_t>(s)]);
      estimate->add_crossing_cycles(slots.crossing_cycles()[static_cast<size_t>(s)]);
      estimate->add_stash_bytes(receive_bytes[static_cast<size_t>(s)]);
    }
  }
  if (program.steps_size() == 1) return program.steps(0);
  return ProgramBuilder::sequence(std::move(program));
}

} // namespace ipu::lowering
