// The program trees of an executable: every node verify_executable checks, the Parallel
// branches it proves disjoint, and the runs of each stream and compute set verify_host_contract
// bounds (verifier_internal.h).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "runtime/format/host_contract.h"
#include "runtime/format/verifier.h"
#include "runtime/format/verifier_internal.h"

namespace ipu::format {
namespace {

// Tensor names the disjointness check of Parallel branches may visit over the whole file: far
// more than a compiled pipeline needs (a few hundred per branch), a fraction of a second's work.
constexpr uint64_t kMaxParallelCheckWork = uint64_t{1} << 26;

// Which branch of which Parallel node last touched each tensor: branch stamps only grow, so a
// stamp from an earlier node never looks like a sibling's, and a check costs one compare.
struct ProgramCheck {
  const Executable& exe;
  const ComputeSetTensors& cs_tensors;
  std::vector<uint64_t> stamp; // per tensor
  uint64_t next_stamp = 1;
  uint64_t parallel_work = 0;
};

// Marks the tensors a parallel branch touches with `mine`; another branch of the same node
// (stamps in (first, mine)) touching one first is an error. Host transfers and all-reduces are
// not allowed there.
Status claim_branch_tensors(ProgramCheck& check, const Program& program, int depth, const std::string& where,
                            uint64_t first, uint64_t mine) {
  if (depth > kMaxProgramDepth) return data_loss(where + ": programs nested too deeply");
  auto claim = [&](uint32_t tensor) -> Status {
    uint64_t& stamp = check.stamp[tensor];
    if (stamp > first && stamp != mine) {
      return data_loss(where + ": parallel branches share tensor " + std::to_string(tensor) + " '" +
                       check.exe.tensors(static_cast<int>(tensor)).name() + "'");
    }
    stamp = mine;
    return Status();
  };
  switch (program.kind_case()) {
  case Program::kSequence:
    for (const Program& step : program.sequence().steps()) {
      IPU_RETURN_IF_ERROR(claim_branch_tensors(check, step, depth + 1, where, first, mine));
    }
    return Status();
  case Program::kRepeat:
    return claim_branch_tensors(check, program.repeat().body(), depth + 1, where, first, mine);
  case Program::kParallel:
    for (const Program& branch : program.parallel().branches()) {
      IPU_RETURN_IF_ERROR(claim_branch_tensors(check, branch, depth + 1, where, first, mine));
    }
    return Status();
  case Program::kExecute: {
    const std::vector<uint32_t>& tensors = check.cs_tensors[program.execute()];
    check.parallel_work += tensors.size() + 1;
    if (check.parallel_work > kMaxParallelCheckWork) {
      return data_loss(where + ": parallel branches name more than " + std::to_string(kMaxParallelCheckWork) +
                       " tensors in all; the executable is too large to verify");
    }
    for (uint32_t t : tensors)
      IPU_RETURN_IF_ERROR(claim(t));
    return Status();
  }
  case Program::kCopy:
    IPU_RETURN_IF_ERROR(claim(program.copy().source()));
    return claim(program.copy().destination());
  case Program::kConditional: {
    const Conditional& c = program.conditional();
    IPU_RETURN_IF_ERROR(claim(c.condition()));
    for (const Program* body : {&c.then_body(), &c.else_body()}) {
      if (body->kind_case() != Program::KIND_NOT_SET)
        IPU_RETURN_IF_ERROR(claim_branch_tensors(check, *body, depth + 1, where, first, mine));
    }
    return Status();
  }
  default:
    return data_loss(
        where + ": a parallel branch may only execute compute sets and copy tensors (conditionally or not)");
  }
}

Status verify_program(ProgramCheck& check, const Program& program, int depth, const std::string& where) {
  const Executable& exe = check.exe;
  if (depth > kMaxProgramDepth)
    return data_loss(where + ": programs nested deeper than " + std::to_string(kMaxProgramDepth));
  const auto tensor_ok = [&](uint32_t index) { return index < static_cast<uint32_t>(exe.tensors_size()); };
  switch (program.kind_case()) {
  case Program::kSequence:
    for (const Program& step : program.sequence().steps()) {
      IPU_RETURN_IF_ERROR(verify_program(check, step, depth + 1, where));
    }
    return Status();
  case Program::kExecute:
    if (program.execute() >= static_cast<uint32_t>(exe.compute_sets_size())) {
      return data_loss(where + ": executes compute set " + std::to_string(program.execute()) + " of " +
                       std::to_string(exe.compute_sets_size()));
    }
    return Status();
  case Program::kCopy: {
    const Copy& c = program.copy();
    if (!tensor_ok(c.source()) || !tensor_ok(c.destination()))
      return data_loss(where + ": copy names a missing tensor");
    const Tensor& s = exe.tensors(static_cast<int>(c.source()));
    const Tensor& d = exe.tensors(static_cast<int>(c.destination()));
    if (s.dtype() != d.dtype() || element_count(s) != element_count(d)) {
      return data_loss(where + ": copy between tensors of different type or size");
    }
    return Status();
  }
  case Program::kRepeat:
    if (!program.repeat().has_body()) return data_loss(where + ": repeat without a body");
    return verify_program(check, program.repeat().body(), depth + 1, where);
  case Program::kStreamIn:
  case Program::kStreamOut: {
    const bool in = program.kind_case() == Program::kStreamIn;
    const StreamTransfer& st = in ? program.stream_in() : program.stream_out();
    if (st.stream() >= static_cast<uint32_t>(exe.streams_size()) || !tensor_ok(st.tensor())) {
      return data_loss(where + ": stream transfer names a missing stream or tensor");
    }
    const Stream& stream = exe.streams(static_cast<int>(st.stream()));
    const Tensor& tensor = exe.tensors(static_cast<int>(st.tensor()));
    if (stream.direction() != (in ? Stream::HOST_TO_DEVICE : Stream::DEVICE_TO_HOST)) {
      return data_loss(where + ": stream '" + stream.name() + "' used against its direction");
    }
    // The session derives host sample shapes from streams, so a stream has its tensor's shape;
    // but float labels travel flattened per sample (the host contract checks them), whatever shape
    // the loss reads them in.
    const bool same_shape = std::equal(stream.shape().begin(), stream.shape().end(), tensor.shape().begin(),
                                       tensor.shape().end());
    const bool flattened_labels =
        stream.name() == kLabelsStream && element_count_of(stream) == element_count(tensor);
    if (stream.dtype() != tensor.dtype() || !(same_shape || flattened_labels)) {
      return data_loss(where + ": stream '" + stream.name() + "' does not match " +
                       tensor_label(exe, st.tensor()));
    }
    return Status();
  }
  case Program::kParallel: {
    // Branches (and the Parallel nodes inside them) are verified before this node takes its
    // stamps, so every stamp an inner node left is older than this node's.
    for (const Program& branch : program.parallel().branches()) {
      IPU_RETURN_IF_ERROR(verify_program(check, branch, depth + 1, where));
    }
    const uint64_t first = check.next_stamp;
    check.next_stamp += static_cast<uint64_t>(program.parallel().branches_size()) + 1;
    uint64_t mine = first;
    for (const Program& branch : program.parallel().branches()) {
      IPU_RETURN_IF_ERROR(claim_branch_tensors(check, branch, depth + 1, where, first, ++mine));
    }
    return Status();
  }
  case Program::kAllReduce: {
    for (uint32_t index : program.all_reduce().tensors()) {
      if (!tensor_ok(index) || !is_float(exe.tensors(static_cast<int>(index)).dtype())) {
        return data_loss(where + ": all-reduce of a missing or non-float tensor");
      }
    }
    const DType wire = program.all_reduce().wire_dtype();
    if (wire != DTYPE_UNSPECIFIED && wire != FLOAT32 && wire != FLOAT16)
      return data_loss(where + ": all-reduce over the links in type " + std::to_string(wire) +
                       ", not a float");
    return Status();
  }
  case Program::kConditional: {
    const Conditional& c = program.conditional();
    if (!tensor_ok(c.condition())) return data_loss(where + ": a conditional names a missing tensor");
    const Tensor& condition = exe.tensors(static_cast<int>(c.condition()));
    if (condition.dtype() != FLOAT32 || element_count(condition) == 0)
      return data_loss(where + ": a conditional's condition must be a non-empty float32 tensor");
    // An empty body is allowed: nothing runs on that side.
    for (const Program* body : {&c.then_body(), &c.else_body()}) {
      if (body->kind_case() != Program::KIND_NOT_SET)
        IPU_RETURN_IF_ERROR(verify_program(check, *body, depth + 1, where));
    }
    return Status();
  }
  case Program::KIND_NOT_SET:
    return data_loss(where + ": empty program node");
  }
  return data_loss(where + ": unknown program node");
}

} // namespace

ComputeSetTensors compute_set_tensors(const Executable& exe) {
  ComputeSetTensors out(static_cast<size_t>(exe.compute_sets_size()));
  for (int c = 0; c < exe.compute_sets_size(); ++c) {
    std::vector<uint32_t>& tensors = out[static_cast<size_t>(c)];
    for (const Vertex& v : exe.compute_sets(c).vertices())
      tensors.insert(tensors.end(), v.operands().begin(), v.operands().end());
    std::sort(tensors.begin(), tensors.end());
    tensors.erase(std::unique(tensors.begin(), tensors.end()), tensors.end());
  }
  return out;
}

Status verify_programs(const Executable& exe, const ComputeSetTensors& cs_tensors) {
  ProgramCheck check{exe, cs_tensors, std::vector<uint64_t>(static_cast<size_t>(exe.tensors_size()), 0)};
  std::set<std::string> names;
  for (const NamedProgram& p : exe.programs()) {
    if (!names.insert(p.name()).second) return data_loss("program '" + p.name() + "' defined twice");
    IPU_RETURN_IF_ERROR(verify_program(check, p.program(), 0, "program '" + p.name() + "'"));
  }
  return Status();
}

Status count_runs(const Executable& exe, const Program& program, uint64_t runs, const std::string& where,
                  RunCounts& counts) {
  const uint64_t S = exe.steps_per_execution();
  switch (program.kind_case()) {
  case Program::kSequence:
    for (const Program& step : program.sequence().steps())
      IPU_RETURN_IF_ERROR(count_runs(exe, step, runs, where, counts));
    return Status();
  case Program::kParallel:
    for (const Program& branch : program.parallel().branches())
      IPU_RETURN_IF_ERROR(count_runs(exe, branch, runs, where, counts));
    return Status();
  case Program::kConditional:
    // Either side may run: each is counted as if it always did.
    IPU_RETURN_IF_ERROR(count_runs(exe, program.conditional().then_body(), runs, where, counts));
    return count_runs(exe, program.conditional().else_body(), runs, where, counts);
  case Program::kRepeat: {
    const uint64_t count = program.repeat().count();
    if (count > S || runs * count > S) {
      const std::string around = runs > 1 ? " inside Repeats of " + std::to_string(runs) + " in all" : "";
      return data_loss(where + ": a Repeat of " + std::to_string(count) + around +
                       " makes its body run more than steps_per_execution (" + std::to_string(S) +
                       ") times per run");
    }
    return count_runs(exe, program.repeat().body(), runs * count, where, counts);
  }
  case Program::kExecute: {
    uint64_t& executions = counts.executions[program.execute()];
    executions += runs;
    if (executions > kMaxExecutionsPerStep * S) {
      return data_loss(where + ": executes compute set " + std::to_string(program.execute()) + " more than " +
                       std::to_string(kMaxExecutionsPerStep) + " times per step");
    }
    return Status();
  }
  case Program::kStreamIn:
    counts.transfers[program.stream_in().stream()] += runs;
    return Status();
  case Program::kStreamOut:
    counts.transfers[program.stream_out().stream()] += runs;
    return Status();
  default:
    return Status();
  }
}

} // namespace ipu::format
