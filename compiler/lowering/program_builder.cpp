#include "compiler/lowering/program_builder.h"

#include <algorithm>
#include <map>

#include "compiler/target/ipu_links.h"

#include "runtime/format/verifier.h"

namespace ipu::lowering {

uint32_t ProgramBuilder::stream(const std::string& name, format::Stream::Direction direction,
                                uint32_t like_tensor) {
  const format::Tensor& like = m_exe.tensors(static_cast<int>(like_tensor));
  format::Stream* s = m_exe.add_streams();
  s->set_name(name);
  s->set_direction(direction);
  s->set_dtype(like.dtype());
  *s->mutable_shape() = like.shape();
  return static_cast<uint32_t>(m_exe.streams_size() - 1);
}

void ProgramBuilder::stream_in(format::Sequence& seq, uint32_t stream, uint32_t tensor) {
  auto* st = seq.add_steps()->mutable_stream_in();
  st->set_stream(stream);
  st->set_tensor(tensor);
}

void ProgramBuilder::stream_out(format::Sequence& seq, uint32_t stream, uint32_t tensor) {
  auto* st = seq.add_steps()->mutable_stream_out();
  st->set_stream(stream);
  st->set_tensor(tensor);
}

void ProgramBuilder::execute(format::Sequence& seq, const std::vector<uint32_t>& sets) {
  for (uint32_t cs : sets)
    seq.add_steps()->set_execute(cs);
}

void ProgramBuilder::copy(format::Sequence& seq, uint32_t source, uint32_t destination) {
  auto* c = seq.add_steps()->mutable_copy();
  c->set_source(source);
  c->set_destination(destination);
}

format::Program ProgramBuilder::repeat(uint64_t count, format::Sequence body) {
  format::Program p;
  p.mutable_repeat()->set_count(count);
  *p.mutable_repeat()->mutable_body()->mutable_sequence() = std::move(body);
  return p;
}

format::Program ProgramBuilder::sequence(format::Sequence body) {
  format::Program p;
  *p.mutable_sequence() = std::move(body);
  return p;
}

void ProgramBuilder::add(const std::string& name, format::Program program, uint64_t steps) {
  format::NamedProgram* p = m_exe.add_programs();
  p->set_name(name);
  p->set_cycles_per_step(static_cast<uint64_t>(estimate_cycles(program) / static_cast<double>(steps)));
  format::CycleBreakdown parts = estimate_breakdown(program);
  const double per_step = 1.0 / static_cast<double>(steps);
  parts.set_compute(parts.compute() * per_step);
  parts.set_vertex_launch(parts.vertex_launch() * per_step);
  parts.set_exchange(parts.exchange() * per_step);
  parts.set_sync(parts.sync() * per_step);
  parts.set_transfer(parts.transfer() * per_step);
  *p->mutable_breakdown_per_step() = std::move(parts);
  *p->mutable_program() = std::move(program);
}

double ProgramBuilder::bytes_of(uint32_t tensor) const {
  const format::Tensor& t = m_exe.tensors(static_cast<int>(tensor));
  return static_cast<double>(format::element_count(t) * format::dtype_size(t.dtype()));
}

// A run of consecutive copies is one exchange, as Poplar compiles a pipeline cycle's inter-IPU
// copies (PopART's popprograms.cpp; docs/cycle_model_sources.md): between IPUs every copy moves
// at once over the IPU-Links (target::ipu_link_cycles), within an IPU the copies share its
// exchange, spread over its tiles; the slower of the two sets the pace.
double ProgramBuilder::copies_cycles(const std::vector<const format::Copy*>& copies) const {
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
void ProgramBuilder::for_each_exchange_or_step(const format::Sequence& sequence, Visit visit) const {
  const auto& steps = sequence.steps();
  for (auto it = steps.begin(); it != steps.end();) {
    if (it->kind_case() != format::Program::kCopy) {
      visit(&*it, 0.0);
      ++it;
      continue;
    }
    std::vector<const format::Copy*> run;
    for (; it != steps.end() && it->kind_case() == format::Program::kCopy; ++it)
      run.push_back(&it->copy());
    visit(nullptr, copies_cycles(run));
  }
}

// Within an IPU-POD16 a ring over the IPU-Links; beyond it, hierarchical over the GW-Links
// (target::all_reduce_cost).
format::AllReduceEstimate ProgramBuilder::all_reduce_estimate(const format::AllReduce& all_reduce) const {
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

double ProgramBuilder::all_reduce_cycles(const format::AllReduce& all_reduce) const {
  const format::AllReduceEstimate estimate = all_reduce_estimate(all_reduce);
  return estimate.ipu_link_cycles() + estimate.gw_link_cycles();
}

double ProgramBuilder::estimate_cycles(const std::vector<uint32_t>& compute_sets) const {
  double cycles = 0;
  for (uint32_t cs : compute_sets)
    cycles += static_cast<double>(m_exe.compute_sets(static_cast<int>(cs)).cycles());
  return cycles;
}

double ProgramBuilder::estimate_cycles(const format::Program& program) const {
  switch (program.kind_case()) {
  case format::Program::kSequence: {
    double cycles = 0;
    for_each_exchange_or_step(program.sequence(), [&](const format::Program* step, double copies) {
      cycles += step ? estimate_cycles(*step) : copies;
    });
    return cycles;
  }
  case format::Program::kParallel: {
    double slowest = 0;
    for (const auto& branch : program.parallel().branches())
      slowest = std::max(slowest, estimate_cycles(branch));
    return slowest;
  }
  case format::Program::kExecute:
    return static_cast<double>(m_exe.compute_sets(static_cast<int>(program.execute())).cycles());
  case format::Program::kRepeat:
    return static_cast<double>(program.repeat().count()) * estimate_cycles(program.repeat().body());
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
    return std::max(estimate_cycles(program.conditional().then_body()),
                    estimate_cycles(program.conditional().else_body()));
  case format::Program::KIND_NOT_SET:
    return 0;
  }
  return 0;
}

// The same walk as estimate_cycles, keeping the parts apart.
format::CycleBreakdown ProgramBuilder::estimate_breakdown(const format::Program& program) const {
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
    for_each_exchange_or_step(program.sequence(), [&](const format::Program* step, double copies) {
      if (step) {
        add(estimate_breakdown(*step), 1);
      } else {
        out.set_transfer(out.transfer() + copies);
      }
    });
    return out;
  case format::Program::kParallel: {
    double slowest = -1;
    for (const auto& branch : program.parallel().branches()) {
      const double cycles = estimate_cycles(branch);
      if (cycles > slowest) {
        slowest = cycles;
        out = estimate_breakdown(branch);
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
    add(estimate_breakdown(program.repeat().body()), static_cast<double>(program.repeat().count()));
    return out;
  case format::Program::kConditional: {
    const format::Conditional& c = program.conditional();
    return estimate_breakdown(
        estimate_cycles(c.then_body()) >= estimate_cycles(c.else_body()) ? c.then_body() : c.else_body());
  }
  default:
    out.set_transfer(estimate_cycles(program));
    return out;
  }
}

} // namespace ipu::lowering
