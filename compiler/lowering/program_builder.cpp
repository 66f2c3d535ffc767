#include "compiler/lowering/program_builder.h"

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
  p->set_cycles_per_step(static_cast<uint64_t>(m_estimator.cycles_of(program) / static_cast<double>(steps)));
  format::CycleBreakdown parts = m_estimator.breakdown_of(program);
  const double per_step = 1.0 / static_cast<double>(steps);
  parts.set_compute(parts.compute() * per_step);
  parts.set_vertex_launch(parts.vertex_launch() * per_step);
  parts.set_exchange(parts.exchange() * per_step);
  parts.set_sync(parts.sync() * per_step);
  parts.set_transfer(parts.transfer() * per_step);
  *p->mutable_breakdown_per_step() = std::move(parts);
  *p->mutable_program() = std::move(program);
}

} // namespace ipu::lowering
