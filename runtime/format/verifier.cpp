#include "runtime/format/verifier.h"

#include <algorithm>
#include <set>

namespace ipu::format {
namespace {

std::string tensor_label(const Executable& exe, uint64_t index) {
  return "tensor " + std::to_string(index) + " '" + exe.tensors(static_cast<int>(index)).name() + "'";
}

Status check_shape(const google::protobuf::RepeatedField<int64_t>& shape, const std::string& what) {
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0) return data_loss(what + ": dimension " + std::to_string(d) + " is not positive");
    if (elements > kMaxTensorElements / static_cast<uint64_t>(d)) return data_loss(what + ": too many elements");
    elements *= static_cast<uint64_t>(d);
  }
  return Status();
}

Status verify_target(const Target& t) {
  if (t.num_ipus() == 0 || t.num_ipus() > 1024) return data_loss("target: invalid num_ipus " + std::to_string(t.num_ipus()));
  if (t.tiles_per_ipu() == 0 || t.tiles_per_ipu() > 65536) {
    return data_loss("target: invalid tiles_per_ipu " + std::to_string(t.tiles_per_ipu()));
  }
  if (t.bytes_per_tile() == 0) return data_loss("target: bytes_per_tile is zero");
  if (t.worker_threads_per_tile() == 0 || t.worker_threads_per_tile() > 64) {
    return data_loss("target: invalid worker_threads_per_tile");
  }
  return Status();
}

Status verify_tensor(const Executable& exe, int index, uint64_t total_tiles) {
  const Tensor& t = exe.tensors(index);
  const std::string label = tensor_label(exe, static_cast<uint64_t>(index));
  if (dtype_size(t.dtype()) == 0) return data_loss(label + ": unknown dtype " + std::to_string(t.dtype()));
  IPU_RETURN_IF_ERROR(check_shape(t.shape(), label));
  const uint32_t ipus = ipus_per_replica(exe);
  if (t.ipu() >= ipus) {
    return data_loss(label + ": on IPU " + std::to_string(t.ipu()) + " of the replica's " + std::to_string(ipus));
  }
  const uint64_t elements = element_count(t);
  uint64_t next = 0;
  for (int i = 0; i < t.mapping_size(); ++i) {
    const Interval& iv = t.mapping(i);
    const bool on_its_ipu = iv.tile() / exe.target().tiles_per_ipu() == t.ipu();
    if (iv.begin() != next || iv.end() <= iv.begin() || iv.end() > elements || iv.tile() >= total_tiles || !on_its_ipu) {
      return data_loss(label + ": mapping interval " + std::to_string(i) + " [" + std::to_string(iv.begin()) + ", " +
                       std::to_string(iv.end()) + ") on tile " + std::to_string(iv.tile()) +
                       " does not continue a cover of its " + std::to_string(elements) + " elements on IPU " +
                       std::to_string(t.ipu()));
    }
    next = iv.end();
  }
  if (next != elements) return data_loss(label + ": mapping covers " + std::to_string(next) + " of " +
                                         std::to_string(elements) + " elements");
  if (!t.initial_value().empty() && t.initial_value().size() != elements * dtype_size(t.dtype())) {
    return data_loss(label + ": initial value has " + std::to_string(t.initial_value().size()) + " bytes, expected " +
                     std::to_string(elements * dtype_size(t.dtype())));
  }
  return Status();
}

// Tensors a parallel branch may touch; host transfers and all-reduces are not allowed there.
Status collect_parallel_tensors(const Executable& exe, const Program& program, int depth, const std::string& where,
                                std::set<uint32_t>& touched) {
  if (depth > kMaxProgramDepth) return data_loss(where + ": programs nested too deeply");
  switch (program.kind_case()) {
    case Program::kSequence:
      for (const Program& step : program.sequence().steps()) {
        IPU_RETURN_IF_ERROR(collect_parallel_tensors(exe, step, depth + 1, where, touched));
      }
      return Status();
    case Program::kRepeat:
      return collect_parallel_tensors(exe, program.repeat().body(), depth + 1, where, touched);
    case Program::kParallel:
      for (const Program& branch : program.parallel().branches()) {
        IPU_RETURN_IF_ERROR(collect_parallel_tensors(exe, branch, depth + 1, where, touched));
      }
      return Status();
    case Program::kExecute:
      for (const Vertex& v : exe.compute_sets(static_cast<int>(program.execute())).vertices()) {
        touched.insert(v.operands().begin(), v.operands().end());
      }
      return Status();
    case Program::kCopy:
      touched.insert(program.copy().source());
      touched.insert(program.copy().destination());
      return Status();
    default:
      return data_loss(where + ": a parallel branch may only execute compute sets and copy tensors");
  }
}

Status verify_program(const Executable& exe, const Program& program, int depth, const std::string& where) {
  if (depth > kMaxProgramDepth) return data_loss(where + ": programs nested deeper than " + std::to_string(kMaxProgramDepth));
  const auto tensor_ok = [&](uint32_t index) { return index < static_cast<uint32_t>(exe.tensors_size()); };
  switch (program.kind_case()) {
    case Program::kSequence:
      for (const Program& step : program.sequence().steps()) {
        IPU_RETURN_IF_ERROR(verify_program(exe, step, depth + 1, where));
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
      if (!tensor_ok(c.source()) || !tensor_ok(c.destination())) return data_loss(where + ": copy names a missing tensor");
      const Tensor& s = exe.tensors(static_cast<int>(c.source()));
      const Tensor& d = exe.tensors(static_cast<int>(c.destination()));
      if (s.dtype() != d.dtype() || element_count(s) != element_count(d)) {
        return data_loss(where + ": copy between tensors of different type or size");
      }
      return Status();
    }
    case Program::kRepeat:
      if (!program.repeat().has_body()) return data_loss(where + ": repeat without a body");
      return verify_program(exe, program.repeat().body(), depth + 1, where);
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
      const bool same_shape = std::equal(stream.shape().begin(), stream.shape().end(), tensor.shape().begin(),
                                         tensor.shape().end());
      if (stream.dtype() != tensor.dtype() || !same_shape) {
        return data_loss(where + ": stream '" + stream.name() + "' does not match " +
                         tensor_label(exe, st.tensor()));
      }
      return Status();
    }
    case Program::kParallel: {
      std::set<uint32_t> claimed;
      for (const Program& branch : program.parallel().branches()) {
        std::set<uint32_t> touched;
        IPU_RETURN_IF_ERROR(verify_program(exe, branch, depth + 1, where));
        IPU_RETURN_IF_ERROR(collect_parallel_tensors(exe, branch, depth + 1, where, touched));
        for (uint32_t t : touched) {
          if (!claimed.insert(t).second) {
            return data_loss(where + ": parallel branches share " + tensor_label(exe, t));
          }
        }
      }
      return Status();
    }
    case Program::kAllReduce:
      for (uint32_t index : program.all_reduce().tensors()) {
        if (!tensor_ok(index) || exe.tensors(static_cast<int>(index)).dtype() != FLOAT32) {
          return data_loss(where + ": all-reduce of a missing or non-float tensor");
        }
      }
      return Status();
    case Program::KIND_NOT_SET:
      return data_loss(where + ": empty program node");
  }
  return data_loss(where + ": unknown program node");
}

}  // namespace

uint32_t replica_count(const Executable& exe) { return std::max<uint32_t>(1, exe.pipeline().replicas()); }

uint32_t ipus_per_replica(const Executable& exe) { return exe.target().num_ipus() / replica_count(exe); }

uint64_t dtype_size(DType dtype) {
  switch (dtype) {
    case FLOAT32:
    case INT32:
      return 4;
    default:
      return 0;
  }
}

uint64_t element_count(const Tensor& tensor) {
  uint64_t n = 1;
  for (int64_t d : tensor.shape()) n *= static_cast<uint64_t>(d);
  return n;
}

Status verify_executable(const Executable& exe) {
  IPU_RETURN_IF_ERROR(verify_target(exe.target()));
  if (exe.batch_size() == 0) return data_loss("batch_size is zero");
  if (exe.steps_per_execution() == 0) return data_loss("steps_per_execution is zero");
  const uint32_t replicas = replica_count(exe);
  if (replicas > kMaxReplicas || exe.target().num_ipus() % replicas != 0) {
    return data_loss("invalid replica count " + std::to_string(replicas) + " for " +
                     std::to_string(exe.target().num_ipus()) + " IPUs");
  }
  const uint32_t accumulation = std::max<uint32_t>(1, exe.pipeline().gradient_accumulation());
  if (exe.steps_per_execution() % accumulation != 0) {
    return data_loss("gradient accumulation " + std::to_string(accumulation) + " does not divide steps_per_execution " +
                     std::to_string(exe.steps_per_execution()));
  }
  const uint64_t total_tiles = uint64_t{ipus_per_replica(exe)} * exe.target().tiles_per_ipu();
  for (int i = 0; i < exe.tensors_size(); ++i) IPU_RETURN_IF_ERROR(verify_tensor(exe, i, total_tiles));
  for (int i = 0; i < exe.streams_size(); ++i) {
    const Stream& s = exe.streams(i);
    const std::string label = "stream " + std::to_string(i) + " '" + s.name() + "'";
    if (s.direction() != Stream::HOST_TO_DEVICE && s.direction() != Stream::DEVICE_TO_HOST) {
      return data_loss(label + ": unknown direction");
    }
    if (dtype_size(s.dtype()) == 0) return data_loss(label + ": unknown dtype");
    IPU_RETURN_IF_ERROR(check_shape(s.shape(), label));
  }
  for (int c = 0; c < exe.compute_sets_size(); ++c) {
    const ComputeSet& cs = exe.compute_sets(c);
    for (int v = 0; v < cs.vertices_size(); ++v) {
      const Vertex& vertex = cs.vertices(v);
      const std::string label = "compute set " + std::to_string(c) + " '" + cs.name() + "' vertex " + std::to_string(v);
      if (vertex.tile() >= total_tiles) return data_loss(label + ": tile " + std::to_string(vertex.tile()) + " of " +
                                                         std::to_string(total_tiles));
      // Without op names every vertex says op 0 (the field's default).
      const auto ops = static_cast<uint32_t>(cs.ops_size());
      if (ops > 0 ? vertex.op() >= ops : vertex.op() != 0) {
        return data_loss(label + ": names op " + std::to_string(vertex.op()) + " of " + std::to_string(cs.ops_size()));
      }
      for (uint32_t operand : vertex.operands()) {
        if (operand >= static_cast<uint32_t>(exe.tensors_size())) {
          return data_loss(label + ": operand names tensor " + std::to_string(operand) + " of " +
                           std::to_string(exe.tensors_size()));
        }
      }
    }
  }
  std::set<std::string> names;
  for (const NamedProgram& p : exe.programs()) {
    if (!names.insert(p.name()).second) return data_loss("program '" + p.name() + "' defined twice");
    IPU_RETURN_IF_ERROR(verify_program(exe, p.program(), 0, "program '" + p.name() + "'"));
  }
  return Status();
}

}  // namespace ipu::format
