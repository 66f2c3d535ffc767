#include "runtime/engine/engine.h"

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/format/verifier.h"
#include "runtime/kernels/kernel.h"

namespace ipu::engine {
namespace {

// Below this many estimated device cycles a compute set runs on the calling thread: handing a
// handful of tiny vertices to TBB costs more than running them.
constexpr uint64_t kParallelCycleThreshold = 20000;
// Host tasks are built from adjacent vertices up to 1/kTasksPerComputeSet of a compute set's
// work, so threads get a few tasks to balance with and no task is vanishingly small. The split
// does not depend on the thread count, so results are bitwise identical for any --threads.
constexpr uint64_t kTasksPerComputeSet = 8;
constexpr uint64_t kMinTaskCycles = 20000;

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte[], AlignedFree>;

// The host's execution plan of one compute set: the per-tile vertices of the executable,
// coalesced into fewer host tasks where adjacent vertices continue each other's work.
struct PreparedComputeSet {
  std::vector<kernels::PreparedVertex> vertices;
  std::vector<kernels::KernelFn> kernels;
  bool parallel = false;
};

void coalesce(PreparedComputeSet& cs, uint64_t task_cycles) {
  // Grid-shaped work (matmul blocks) merges along columns first, then along rows.
  for (int pass = 0; pass < 2; ++pass) {
    PreparedComputeSet merged;
    for (size_t i = 0; i < cs.vertices.size(); ++i) {
      const kernels::PreparedVertex& v = cs.vertices[i];
      if (!merged.vertices.empty() && merged.vertices.back().cycles + v.cycles <= task_cycles &&
          kernels::try_merge(*kernels::find_kernel(v.codelet), merged.vertices.back(), v)) {
        continue;
      }
      merged.vertices.push_back(v);
      merged.kernels.push_back(cs.kernels[i]);
    }
    cs.vertices = std::move(merged.vertices);
    cs.kernels = std::move(merged.kernels);
  }
}

}  // namespace

struct Engine::Impl {
  format::Executable executable;
  std::vector<Buffer> buffers;
  std::vector<size_t> sizes;
  std::vector<PreparedComputeSet> compute_sets;
  tbb::task_arena arena;

  Status run_program(const format::Program& program, HostStreams& streams);
  void run_compute_set(const PreparedComputeSet& cs);
};

Engine::Engine(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::create(format::Executable executable, const EngineOptions& options) {
  IPU_RETURN_IF_ERROR(format::verify_executable(executable));
  for (int c = 0; c < executable.compute_sets_size(); ++c) {
    const format::ComputeSet& cs = executable.compute_sets(c);
    for (int v = 0; v < cs.vertices_size(); ++v) {
      Status status = kernels::validate_vertex(cs.vertices(v), executable);
      if (!status.ok()) {
        return data_loss("compute set " + std::to_string(c) + " '" + cs.name() + "' vertex " + std::to_string(v) +
                         ": " + status.message());
      }
    }
  }

  // The device's memory lives in host memory: refuse an executable that cannot fit before
  // allocating any of it (a hostile file may declare huge tensors).
  uint64_t total_bytes = 0;
  for (const format::Tensor& t : executable.tensors()) total_bytes += format::element_count(t) * format::dtype_size(t.dtype());
  const uint64_t host_bytes = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(::sysconf(_SC_PAGE_SIZE));
  if (total_bytes > host_bytes / 2) {
    return resource_exhausted("the executable's tensors need " + std::to_string(total_bytes) +
                              " bytes of memory; this machine has " + std::to_string(host_bytes));
  }

  auto impl = std::make_unique<Impl>();
  impl->executable = std::move(executable);
  const format::Executable& exe = impl->executable;
  if (options.threads > 0) impl->arena.initialize(options.threads);

  for (const format::Tensor& t : exe.tensors()) {
    size_t bytes = format::element_count(t) * format::dtype_size(t.dtype());
    size_t rounded = (bytes + 63) / 64 * 64;
    Buffer buffer(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
    if (!buffer) return resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes for tensor '" + t.name() + "'");
    if (t.initial_value().empty()) {
      std::memset(buffer.get(), 0, rounded);
    } else {
      std::memcpy(buffer.get(), t.initial_value().data(), bytes);
    }
    impl->buffers.push_back(std::move(buffer));
    impl->sizes.push_back(bytes);
  }

  for (const format::ComputeSet& cs : exe.compute_sets()) {
    PreparedComputeSet prepared;
    uint64_t cycles = 0;
    for (const format::Vertex& v : cs.vertices()) {
      kernels::PreparedVertex pv;
      pv.num_operands = static_cast<uint32_t>(v.operands_size());
      for (int i = 0; i < v.operands_size(); ++i) pv.operands[static_cast<size_t>(i)] = impl->buffers[v.operands(i)].get();
      pv.num_params = static_cast<uint32_t>(v.params_size());
      std::copy(v.params().begin(), v.params().end(), pv.params.begin());
      std::copy(v.fparams().begin(), v.fparams().end(), pv.fparams.begin());
      pv.codelet = v.codelet();
      pv.cycles = v.cycles();
      prepared.vertices.push_back(pv);
      prepared.kernels.push_back(kernels::find_kernel(v.codelet())->run);
      cycles += v.cycles();
    }
    coalesce(prepared, std::max(kMinTaskCycles, cycles / kTasksPerComputeSet));
    prepared.parallel = prepared.vertices.size() > 1 && cycles >= kParallelCycleThreshold;
    impl->compute_sets.push_back(std::move(prepared));
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const format::Executable& Engine::executable() const { return m_impl->executable; }

std::optional<uint32_t> Engine::find_program(const std::string& name) const {
  for (int i = 0; i < m_impl->executable.programs_size(); ++i) {
    if (m_impl->executable.programs(i).name() == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

std::optional<uint32_t> Engine::find_stream(const std::string& name) const {
  for (int i = 0; i < m_impl->executable.streams_size(); ++i) {
    if (m_impl->executable.streams(i).name() == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

std::optional<uint32_t> Engine::find_tensor(const std::string& name) const {
  for (int i = 0; i < m_impl->executable.tensors_size(); ++i) {
    if (m_impl->executable.tensors(i).name() == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

std::span<std::byte> Engine::tensor_bytes(uint32_t tensor) {
  return {m_impl->buffers.at(tensor).get(), m_impl->sizes.at(tensor)};
}

Status Engine::run(uint32_t program, HostStreams& streams) {
  if (program >= static_cast<uint32_t>(m_impl->executable.programs_size())) {
    return invalid_argument("no program " + std::to_string(program));
  }
  return m_impl->run_program(m_impl->executable.programs(static_cast<int>(program)).program(), streams);
}

void Engine::Impl::run_compute_set(const PreparedComputeSet& cs) {
  if (!cs.parallel) {
    for (size_t i = 0; i < cs.vertices.size(); ++i) cs.kernels[i](cs.vertices[i]);
    return;
  }
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, cs.vertices.size()), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t i = r.begin(); i != r.end(); ++i) cs.kernels[i](cs.vertices[i]);
    });
  });
}

Status Engine::Impl::run_program(const format::Program& program, HostStreams& streams) {
  switch (program.kind_case()) {
    case format::Program::kSequence:
      for (const format::Program& step : program.sequence().steps()) IPU_RETURN_IF_ERROR(run_program(step, streams));
      return Status();
    case format::Program::kExecute:
      run_compute_set(compute_sets[program.execute()]);
      return Status();
    case format::Program::kCopy:
      std::memcpy(buffers[program.copy().destination()].get(), buffers[program.copy().source()].get(),
                  sizes[program.copy().source()]);
      return Status();
    case format::Program::kRepeat:
      for (uint64_t i = 0; i < program.repeat().count(); ++i) IPU_RETURN_IF_ERROR(run_program(program.repeat().body(), streams));
      return Status();
    case format::Program::kStreamIn: {
      const auto& st = program.stream_in();
      if (!streams.pull) return failed_precondition("program reads stream " + std::to_string(st.stream()) + " but no host feeds it");
      return streams.pull(st.stream(), {buffers[st.tensor()].get(), sizes[st.tensor()]});
    }
    case format::Program::kStreamOut: {
      const auto& st = program.stream_out();
      if (!streams.push) return Status();
      return streams.push(st.stream(), {buffers[st.tensor()].get(), sizes[st.tensor()]});
    }
    case format::Program::KIND_NOT_SET:
      break;
  }
  return internal_error("unverified program node");
}

}  // namespace ipu::engine
