#include "compiler/lowering/lower_graph.h"

#include <map>

#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "runtime/format/verifier.h"

namespace ipu::lowering {
namespace {

const char* phase_name(ir::Phase phase) {
  switch (phase) {
    case ir::Phase::kForward: return "forward";
    case ir::Phase::kLoss: return "loss";
    case ir::Phase::kBackward: return "backward";
    case ir::Phase::kUpdate: return "update";
  }
  return "?";
}

// BSP schedule of one phase: an op runs one compute set after the last of its producers in the
// same phase, so independent ops (e.g. the kernel and input gradients of a layer) share a set.
StatusOr<std::vector<uint32_t>> lower_phase(LowerContext& ctx, const ir::Graph& graph, ir::Phase phase) {
  std::map<int, int> level_of_op;
  std::map<int, std::vector<int>> ops_by_level;
  for (const ir::Op& op : graph.ops()) {
    if (op.phase != phase) continue;
    int level = 0;
    for (int in : op.inputs) {
      auto it = level_of_op.find(graph.value(in).producer);
      if (it != level_of_op.end()) level = std::max(level, it->second + 1);
    }
    level_of_op[op.id] = level;
    ops_by_level[level].push_back(op.id);
  }
  std::vector<uint32_t> sets;
  for (const auto& [level, ops] : ops_by_level) {
    ctx.begin_compute_set(std::string(phase_name(phase)) + "/" + std::to_string(level), 0);
    for (int id : ops) {
      const ir::Op& op = graph.op(id);
      Status status = ir::op_def(op.kind).lower(ctx, op);
      if (!status.ok()) return status.with_context("lowering '" + op.name + "' (" + ir::op_kind_name(op.kind) + ")");
    }
    if (auto index = ctx.end_compute_set()) sets.push_back(*index);
  }
  return sets;
}

class ProgramBuilder {
 public:
  ProgramBuilder(format::Executable& exe, const target::TargetSpec& target, uint32_t replicas)
      : m_exe(exe), m_target(target), m_replicas(replicas) {}

  uint32_t stream(const std::string& name, format::Stream::Direction direction, const format::Tensor& like) {
    format::Stream* s = m_exe.add_streams();
    s->set_name(name);
    s->set_direction(direction);
    s->set_dtype(like.dtype());
    *s->mutable_shape() = like.shape();
    return static_cast<uint32_t>(m_exe.streams_size() - 1);
  }

  static void stream_in(format::Sequence& seq, uint32_t stream, uint32_t tensor) {
    auto* st = seq.add_steps()->mutable_stream_in();
    st->set_stream(stream);
    st->set_tensor(tensor);
  }
  static void stream_out(format::Sequence& seq, uint32_t stream, uint32_t tensor) {
    auto* st = seq.add_steps()->mutable_stream_out();
    st->set_stream(stream);
    st->set_tensor(tensor);
  }
  static void execute(format::Sequence& seq, const std::vector<uint32_t>& sets) {
    for (uint32_t cs : sets) seq.add_steps()->set_execute(cs);
  }

  static format::Program repeat(uint64_t count, format::Sequence body) {
    format::Program p;
    p.mutable_repeat()->set_count(count);
    *p.mutable_repeat()->mutable_body()->mutable_sequence() = std::move(body);
    return p;
  }
  static format::Program sequence(format::Sequence body) {
    format::Program p;
    *p.mutable_sequence() = std::move(body);
    return p;
  }

  // Adds a program whose estimated cycles, divided by `steps` (the micro-batch steps it runs),
  // give its cycles per step.
  void add(const std::string& name, format::Program program, uint64_t steps) {
    format::NamedProgram* p = m_exe.add_programs();
    p->set_name(name);
    p->set_cycles_per_step(static_cast<uint64_t>(estimate_cycles(program) / static_cast<double>(steps)));
    *p->mutable_program() = std::move(program);
  }

 private:
  double transfer_cycles(const format::StreamTransfer& st) const {
    const format::Tensor& t = m_exe.tensors(static_cast<int>(st.tensor()));
    return static_cast<double>(format::element_count(t) * format::dtype_size(t.dtype())) /
           m_target.cycles.host_bytes_per_cycle;
  }

  // A ring all-reduce moves 2(R−1)/R of each tensor over the IPU links.
  double all_reduce_cycles(const format::AllReduce& all_reduce) const {
    if (m_replicas <= 1) return 0;
    double bytes = 0;
    for (uint32_t t : all_reduce.tensors()) {
      bytes += static_cast<double>(format::element_count(m_exe.tensors(static_cast<int>(t))) * sizeof(float));
    }
    const double r = m_replicas;
    return m_target.cycles.sync_cycles + bytes * 2.0 * (r - 1.0) / r / m_target.cycles.ipu_link_bytes_per_cycle;
  }

  double estimate_cycles(const format::Program& program) const {
    switch (program.kind_case()) {
      case format::Program::kSequence: {
        double cycles = 0;
        for (const auto& step : program.sequence().steps()) cycles += estimate_cycles(step);
        return cycles;
      }
      case format::Program::kExecute:
        return static_cast<double>(m_exe.compute_sets(static_cast<int>(program.execute())).cycles());
      case format::Program::kRepeat:
        return static_cast<double>(program.repeat().count()) * estimate_cycles(program.repeat().body());
      case format::Program::kStreamIn: return transfer_cycles(program.stream_in());
      case format::Program::kStreamOut: return transfer_cycles(program.stream_out());
      case format::Program::kAllReduce: return all_reduce_cycles(program.all_reduce());
      case format::Program::kCopy:
      case format::Program::KIND_NOT_SET: return 0;
    }
    return 0;
  }

  format::Executable& m_exe;
  const target::TargetSpec& m_target;
  uint32_t m_replicas;
};

}  // namespace

StatusOr<LoweringResult> lower_graph(const ir::Graph& graph, const GraphInterface& io, const target::TargetSpec& target,
                                     const LoweringOptions& options) {
  LoweringResult result;
  format::Executable& exe = result.executable;
  *exe.mutable_target() = target.to_format();
  exe.mutable_target()->set_num_ipus(target.num_ipus * options.replicas);
  exe.set_batch_size(options.batch_size);
  exe.set_steps_per_execution(options.steps_per_execution);

  LowerContext ctx(graph, target, exe);
  // Tensors no vertex produces are spread over the tiles up front.
  for (const ir::Value& v : graph.values()) {
    if (v.producer < 0 && v.role != ir::Role::kActivation) ctx.map_linearly(v.id);
  }

  const bool train = io.loss.has_value();
  IPU_ASSIGN_OR_RETURN(std::vector<uint32_t> forward, lower_phase(ctx, graph, ir::Phase::kForward));
  std::vector<uint32_t> loss, backward, update;
  if (train) {
    IPU_ASSIGN_OR_RETURN(loss, lower_phase(ctx, graph, ir::Phase::kLoss));
    IPU_ASSIGN_OR_RETURN(backward, lower_phase(ctx, graph, ir::Phase::kBackward));
    IPU_ASSIGN_OR_RETURN(update, lower_phase(ctx, graph, ir::Phase::kUpdate));
  }
  // A value nothing wrote (e.g. an output that is a plain input) still needs a home.
  for (const ir::Value& v : graph.values()) {
    uint32_t t = ctx.tensor(v.id);
    if (exe.tensors(static_cast<int>(t)).mapping_size() == 0) ctx.map_linearly(v.id);
  }

  ProgramBuilder programs(exe, target, options.replicas);
  const uint32_t features = ctx.tensor(io.features), scores = ctx.tensor(io.scores);
  const uint32_t features_stream = programs.stream("features", format::Stream::HOST_TO_DEVICE, exe.tensors(static_cast<int>(features)));

  // Weights and optimizer state travel between host and device by name.
  format::Sequence to_device, to_host;
  for (const ir::Value& v : graph.values()) {
    if (v.role != ir::Role::kWeight && v.role != ir::Role::kOptimizerState) continue;
    const uint32_t t = ctx.tensor(v.id);
    const format::Tensor& tensor = exe.tensors(static_cast<int>(t));
    ProgramBuilder::stream_in(to_device, programs.stream("to_device:" + v.name, format::Stream::HOST_TO_DEVICE, tensor), t);
    ProgramBuilder::stream_out(to_host, programs.stream("to_host:" + v.name, format::Stream::DEVICE_TO_HOST, tensor), t);
  }
  programs.add("weights_from_host", ProgramBuilder::sequence(std::move(to_device)), 1);

  std::vector<uint32_t> order = forward;
  if (train) {
    const uint32_t labels = ctx.tensor(io.loss->labels), loss_t = ctx.tensor(io.loss->loss),
                   correct = ctx.tensor(io.loss->correct);
    const uint32_t labels_stream = programs.stream("labels", format::Stream::HOST_TO_DEVICE, exe.tensors(static_cast<int>(labels)));
    const uint32_t loss_stream = programs.stream("loss", format::Stream::DEVICE_TO_HOST, exe.tensors(static_cast<int>(loss_t)));
    const uint32_t correct_stream = programs.stream("correct", format::Stream::DEVICE_TO_HOST, exe.tensors(static_cast<int>(correct)));
    const uint64_t S = options.steps_per_execution, K = options.micro_batches;
    for (bool training_step : {true, false}) {
      format::Sequence step;
      ProgramBuilder::stream_in(step, features_stream, features);
      ProgramBuilder::stream_in(step, labels_stream, labels);
      ProgramBuilder::execute(step, forward);
      ProgramBuilder::execute(step, loss);
      if (training_step) ProgramBuilder::execute(step, backward);
      if (training_step && io.accumulators.empty()) ProgramBuilder::execute(step, update);
      ProgramBuilder::stream_out(step, loss_stream, loss_t);
      ProgramBuilder::stream_out(step, correct_stream, correct);
      if (!training_step || io.accumulators.empty()) {
        programs.add(training_step ? "train" : "evaluate", ProgramBuilder::repeat(S, std::move(step)), S);
        continue;
      }
      // K micro-batches accumulate gradients; replicas average them; then one update.
      format::Sequence update_step;
      *update_step.add_steps() = ProgramBuilder::repeat(K, std::move(step));
      if (options.replicas > 1) {
        format::AllReduce* all_reduce = update_step.add_steps()->mutable_all_reduce();
        for (int acc : io.accumulators) all_reduce->add_tensors(ctx.tensor(acc));
      }
      ProgramBuilder::execute(update_step, update);
      programs.add("train", ProgramBuilder::repeat(S / K, std::move(update_step)), S);
    }
    order.insert(order.end(), loss.begin(), loss.end());
    order.insert(order.end(), backward.begin(), backward.end());
    order.insert(order.end(), update.begin(), update.end());
  }
  {
    format::Sequence step;
    ProgramBuilder::stream_in(step, features_stream, features);
    ProgramBuilder::execute(step, forward);
    ProgramBuilder::stream_out(step, programs.stream("predictions", format::Stream::DEVICE_TO_HOST, exe.tensors(static_cast<int>(scores))), scores);
    programs.add("predict", ProgramBuilder::repeat(options.steps_per_execution, std::move(step)), options.steps_per_execution);
  }
  programs.add("weights_to_host", ProgramBuilder::sequence(std::move(to_host)), 1);

  result.memory = passes::plan_memory(exe, order, ctx.records(), target);
  if (!result.memory.overflowing.empty()) {
    return resource_exhausted(passes::describe_overflow(result.memory, target, 3));
  }
  format::Estimates* e = exe.mutable_estimates();
  e->set_peak_tile_bytes(result.memory.fullest.peak_bytes);
  e->set_fullest_tile(result.memory.fullest.tile);
  e->set_total_bytes(result.memory.total_bytes);
  e->set_tiles_used(result.memory.tiles_used);
  uint64_t vertices = 0;
  for (const auto& cs : exe.compute_sets()) vertices += static_cast<uint64_t>(cs.vertices_size());
  e->set_vertices(vertices);
  return result;
}

}  // namespace ipu::lowering
