#include "compiler/lowering/program_estimator.h"

#include <algorithm>
#include <map>

#include "compiler/target/ipu_links.h"

#include "runtime/format/verifier.h"

namespace ipu::lowering {

double ProgramEstimator::bytes_of(uint32_t tensor) const {
  const format::Tensor& t = m_exe.tensors(static_cast<int>(tensor));
  return static_cast<double>(format::element_count(t) * format::dtype_size(t.dtype()));
}

// A run of consecutive copies is one exchange, as Poplar compiles a pipeline cycle's inter-IPU
// copies (PopART's popprograms.cpp; docs/cycle_model_sources.md): between IPUs every copy moves
// at once over the IPU-Links (target::ipu_link_cycles), within an IPU the copies share its
// exchange, spread over its tiles; the slower of the two sets the pace.
double ProgramEstimator::copies_cycles(const std::vector<const format::Copy*>& copies) const {
  std::vector<target::IpuTransfer> between_ipus;
  std::map<uint32_t, double> within_ipu;
  for (const format::Copy* copy : copies) {
    const uint32_t from = m_exe.tensors(static_cast<int>(copy->source())).ipu();
    const uint32_t to = m_exe.tensors(static_cast<int>(copy->destination())).ipu();
    if (from != to) {
      between_ipus.push_back({from, to, bytes_of(copy->source())});
    } else {
      within_ipu[from] += bytes_of(copy->source());
    }
  }
  double cycles = target::ipu_link_cycles(m_target, between_ipus);
  for (const auto& [ipu, bytes] : within_ipu)
    cycles = std::max(cycles, bytes / (m_target.cycles.exchange_bytes_per_cycle * m_target.tiles_per_ipu));
  return cycles;
}

template <typename Visit>
void ProgramEstimator::for_each_exchange_or_step(const format::Sequence& sequence, Visit visit) const {
  const auto& steps = sequence.steps();
  for (auto it = steps.begin(); it != steps.end();) {
    if (it->kind_case() != format::Program::kCopy) {
      visit(&*it, std::vector<const format::Copy*>(), 0.0);
      ++it;
      continue;
    }
    std::vector<const format::Copy*> run;
    for (; it != steps.end() && it->kind_case() == format::Program::kCopy; ++it)
      run.push_back(&it->copy());
    visit(nullptr, run, copies_cycles(run));
  }
}

// Within an IPU-POD16 a ring over the IPU-Links; beyond it, hierarchical over the GW-Links
// (target::all_reduce_cost).
format::AllReduceEstimate ProgramEstimator::all_reduce_estimate(const format::AllReduce& all_reduce) const {
  format::AllReduceEstimate estimate;
  // Values cross the links in the wire type: binary16 halves a float32 gradient's bytes.
  double bytes = 0;
  for (uint32_t t : all_reduce.tensors()) {
    const bool halved = all_reduce.wire_dtype() == format::FLOAT16 &&
                        m_exe.tensors(static_cast<int>(t)).dtype() == format::FLOAT32;
    bytes += halved ? bytes_of(t) / 2 : bytes_of(t);
  }
  const target::AllReduceCost cost = target::all_reduce_cost(m_target, bytes, m_replicas, m_target.num_ipus);
  estimate.set_bytes(bytes);
  estimate.set_replicas(m_replicas);
  estimate.set_replicas_per_pod(cost.replicas_per_pod);
  estimate.set_pods(cost.pods);
  estimate.set_ipu_link_cycles(cost.ipu_link_cycles);
  estimate.set_gw_link_cycles(cost.gw_link_cycles);
  return estimate;
}

double ProgramEstimator::all_reduce_cycles(const format::AllReduce& all_reduce) const {
  const format::AllReduceEstimate estimate = all_reduce_estimate(all_reduce);
  return estimate.ipu_link_cycles() + estimate.gw_link_cycles();
}

double ProgramEstimator::cycles_of(const std::vector<uint32_t>& compute_sets) const {
  double cycles = 0;
  for (uint32_t cs : compute_sets)
    cycles += static_cast<double>(m_exe.compute_sets(static_cast<int>(cs)).cycles());
  return cycles;
}

double ProgramEstimator::cycles_of(const format::Program& program) const {
  switch (program.kind_case()) {
  case format::Program::kSequence: {
    double cycles = 0;
    for_each_exchange_or_step(program.sequence(),
                              [&](const format::Program* step, const std::vector<const format::Copy*>&,
                                  double copies) { cycles += step ? cycles_of(*step) : copies; });
    return cycles;
  }
  case format::Program::kParallel: {
    double slowest = 0;
    for (const auto& branch : program.parallel().branches())
      slowest = std::max(slowest, cycles_of(branch));
    return slowest;
  }
  case format::Program::kExecute:
    return static_cast<double>(m_exe.compute_sets(static_cast<int>(program.execute())).cycles());
  case format::Program::kRepeat:
    return static_cast<double>(program.repeat().count()) * cycles_of(program.repeat().body());
  case format::Program::kStreamIn:
    return bytes_of(program.stream_in().tensor()) / m_target.cycles.host_bytes_per_cycle;
  case format::Program::kStreamOut:
    return bytes_of(program.stream_out().tensor()) / m_target.cycles.host_bytes_per_cycle;
  case format::Program::kAllReduce:
    return all_reduce_cycles(program.all_reduce());
  case format::Program::kCopy:
    return copies_cycles({&program.copy()});
  case format::Program::kConditional:
    // The slower side: the estimate is of a step that takes it.
    return std::max(cycles_of(program.conditional().then_body()),
                    cycles_of(program.conditional().else_body()));
  case format::Program::KIND_NOT_SET:
    return 0;
  }
  return 0;
}

// The same walk as cycles_of(), keeping the parts apart.
format::CycleBreakdown ProgramEstimator::breakdown_of(const format::Program& program) const {
  format::CycleBreakdown out;
  auto add = [&out](const format::CycleBreakdown& b, double times) {
    out.set_compute(out.compute() + times * b.compute());
    out.set_vertex_launch(out.vertex_launch() + times * b.vertex_launch());
    out.set_exchange(out.exchange() + times * b.exchange());
    out.set_sync(out.sync() + times * b.sync());
    out.set_transfer(out.transfer() + times * b.transfer());
  };
  switch (program.kind_case()) {
  case format::Program::kSequence:
    for_each_exchange_or_step(
        program.sequence(),
        [&](const format::Program* step, const std::vector<const format::Copy*>&, double copies) {
          if (step) {
            add(breakdown_of(*step), 1);
          } else {
            out.set_transfer(out.transfer() + copies);
          }
        });
    return out;
  case format::Program::kParallel: {
    double slowest = -1;
    for (const auto& branch : program.parallel().branches()) {
      const double cycles = cycles_of(branch);
      if (cycles > slowest) {
        slowest = cycles;
        out = breakdown_of(branch);
      }
    }
    return out;
  }
  case format::Program::kExecute: {
    const format::ComputeSet& cs = m_exe.compute_sets(static_cast<int>(program.execute()));
    out.set_compute(cs.compute_cycles());
    out.set_vertex_launch(cs.launch_cycles());
    out.set_exchange(cs.exchange_cycles());
    out.set_sync(cs.sync_cycles());
    return out;
  }
  case format::Program::kRepeat:
    add(breakdown_of(program.repeat().body()), static_cast<double>(program.repeat().count()));
    return out;
  case format::Program::kConditional: {
    const format::Conditional& c = program.conditional();
    return breakdown_of(cycles_of(c.then_body()) >= cycles_of(c.else_body()) ? c.then_body() : c.else_body());
  }
  default:
    out.set_transfer(cycles_of(program));
    return out;
  }
}

double ProgramEstimator::place(const format::Program& program, double start,
                               const std::function<void(const PlacedStep&)>& visit,
                               uint64_t& steps_left) const {
  auto at = [&program](PlacedStep::Kind kind, double when, double cycles) {
    PlacedStep step;
    step.kind = kind;
    step.program = &program;
    step.start = when;
    step.cycles = cycles;
    return step;
  };
  auto emit = [&](const PlacedStep& step) {
    visit(step);
    if (steps_left > 0) --steps_left;
    return step.start + step.cycles;
  };
  switch (program.kind_case()) {
  case format::Program::kSequence: {
    double now = start;
    for_each_exchange_or_step(
        program.sequence(),
        [&](const format::Program* step, const std::vector<const format::Copy*>& run, double copies) {
          if (step) {
            now = place(*step, now, visit, steps_left);
            return;
          }
          PlacedStep exchange = at(PlacedStep::Kind::kCopies, now, copies);
          exchange.copies = run;
          now = emit(exchange);
        });
    return now;
  }
  case format::Program::kParallel: {
    double end = start;
    for (const auto& branch : program.parallel().branches())
      end = std::max(end, place(branch, start, visit, steps_left));
    return end;
  }
  case format::Program::kExecute:
    return emit(at(PlacedStep::Kind::kComputeSet, start, cycles_of(program)));
  case format::Program::kRepeat: {
    const uint64_t count = program.repeat().count();
    double now = start;
    for (uint64_t i = 0; i < count; ++i) {
      if (steps_left == 0) {
        PlacedStep rest = at(PlacedStep::Kind::kRepeatRest, now,
                             static_cast<double>(count - i) * cycles_of(program.repeat().body()));
        rest.iterations = count - i;
        visit(rest);
        return now + rest.cycles;
      }
      now = place(program.repeat().body(), now, visit, steps_left);
    }
    return now;
  }
  case format::Program::kStreamIn:
    return emit(at(PlacedStep::Kind::kStreamIn, start, cycles_of(program)));
  case format::Program::kStreamOut:
    return emit(at(PlacedStep::Kind::kStreamOut, start, cycles_of(program)));
  case format::Program::kAllReduce:
    return emit(at(PlacedStep::Kind::kAllReduce, start, cycles_of(program)));
  case format::Program::kCopy: {
    PlacedStep exchange = at(PlacedStep::Kind::kCopies, start, cycles_of(program));
    exchange.copies = {&program.copy()};
    return emit(exchange);
  }
  case format::Program::kConditional: {
    const format::Conditional& c = program.conditional();
    const bool then_slower = cycles_of(c.then_body()) >= cycles_of(c.else_body());
    return place(then_slower ? c.then_body() : c.else_body(), start, visit, steps_left);
  }
  case format::Program::KIND_NOT_SET:
    return start;
  }
  return start;
}

} // namespace ipu::lowering
