#include "runtime/engine/engine.h"

#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/base/half.h"
#include "runtime/base/non_finite.h"
#include "runtime/engine/coalesce.h"
#include "runtime/engine/device_memory.h"
#include "runtime/engine/parallel_tasks.h"
#include "runtime/engine/rounding.h"
#include "runtime/format/verifier.h"
#include "runtime/kernels/kernel.h"

namespace ipu::engine {
namespace {

// Below this many estimated device cycles a compute set runs on the calling thread: handing a
// handful of tiny vertices to TBB costs more than running them.
constexpr uint64_t kParallelCycleThreshold = 20000;
// Elements of FLOAT16 tensors rounded per host task after a compute set.
constexpr uint64_t kRoundingGrain = 1 << 16;
// Where a host task came from: the first executable vertex it runs, and its replica.
struct VertexOrigin {
  uint32_t vertex = 0;
  uint32_t replica = 0;
};

// A piece of a range the engine rounds: elements [begin, end) of `tensor`.
struct RoundingTask {
  uint32_t tensor = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The host's execution plan of one compute set: the per-tile vertices of the executable,
// coalesced into fewer host tasks (coalesce.h).
struct PreparedComputeSet {
  std::vector<kernels::PreparedVertex> vertices;
  std::vector<kernels::KernelEntry> kernels;
  std::vector<VertexOrigin> origins;
  // One slot per task, written only by a kernel that faults: tasks never share a slot, so no
  // locks, and the engine reports the lowest faulting task whichever thread ran it first.
  std::vector<kernels::KernelFault> faults;
  bool can_fault = false;
  bool parallel = false;
  // The set's `rounded` ranges in pieces of at most kRoundingGrain elements, the same on every
  // replica.
  std::vector<RoundingTask> rounding;
  uint64_t executions = 0; // how many times it has run: stochastic rounding's stream
};

// A compute set's `rounded` ranges (sorted and disjoint: the verifier checks it) as host tasks:
// ranges that touch are joined, since tiles often write neighbouring regions of one tensor, then
// cut into pieces of at most kRoundingGrain elements.
std::vector<RoundingTask> rounding_tasks(const format::ComputeSet& set) {
  std::vector<RoundingTask> joined;
  for (const format::TensorRange& range : set.rounded()) {
    if (!joined.empty() && joined.back().tensor == range.tensor() && joined.back().end == range.begin())
      joined.back().end = range.end();
    else
      joined.push_back({range.tensor(), range.begin(), range.end()});
  }
  std::vector<RoundingTask> tasks;
  for (const RoundingTask& range : joined) {
    for (uint64_t begin = range.begin; begin < range.end; begin += kRoundingGrain)
      tasks.push_back({range.tensor, begin, std::min(range.end, begin + kRoundingGrain)});
  }
  return tasks;
}

} // namespace

struct Engine::Impl {
  format::Executable executable;
  format::InitialData initial_data; // where the initial values reset_tensor reads are
  uint32_t replicas = 1;            // on this instance
  uint32_t first_replica = 0;
  uint32_t total_replicas = 1; // of the job
  collectives::Collectives* collectives = nullptr;
  DeviceMemory memory;
  std::vector<size_t> sizes; // per tensor
  std::vector<PreparedComputeSet> compute_sets;
  tbb::task_arena arena;
  // Each thread that runs vertices has its own scratch (kernel_context.h), dropped with the
  // engine; compute_sets_run numbers the compute sets for scratch derived from their inputs. Atomic:
  // the branches of a Parallel run compute sets at once, and two sharing a number would let a worker
  // reuse one's scratch (a Conv's converted weights) in the other.
  tbb::enumerable_thread_specific<kernels::WorkerScratch> scratch;
  std::atomic<uint64_t> compute_sets_run = 0;
  RoundingOptions rounding;

  // set_finite_check: whether it is on, the tensors each compute set touches (float ones, in
  // index order), and the tensors that held a NaN or an infinity when it was switched on.
  bool finite_check = false;
  std::vector<std::vector<uint32_t>> touched_floats;
  std::vector<bool> non_finite_at_start;

  RunObserver* observer = nullptr;

  // Runs a program node; with an observer, timing each step that does work (run_observer.h).
  Status run_program(const format::Program& program, HostStreams& streams);
  Status run_node(const format::Program& program, HostStreams& streams);
  Status run_compute_set(uint32_t index);
  Status run_vertices(uint32_t index);
  Status fault_status(uint32_t index, size_t task);
  Status check_finite(uint32_t index);
  void round_written(uint32_t index);
  void round_whole(uint32_t tensor, uint32_t replica);
  bool is_half(uint32_t tensor) const {
    return executable.tensors(static_cast<int>(tensor)).dtype() == format::FLOAT16;
  }
  void reset_tensor(uint32_t tensor) {
    const std::string_view initial = initial_data.of(executable.tensors(static_cast<int>(tensor)));
    for (uint32_t r = 0; r < replicas; ++r) {
      if (initial.empty()) {
        std::memset(buffer(tensor, r), 0, sizes[tensor]);
      } else if (is_half(tensor)) {
        // binary16 in the file, floats on the device (format::host_element_size).
        auto* values = reinterpret_cast<float*>(buffer(tensor, r));
        for (size_t i = 0; i < sizes[tensor] / sizeof(float); ++i) {
          uint16_t bits = 0;
          std::memcpy(&bits, initial.data() + 2 * i, 2);
          values[i] = half_bits_to_float(bits);
        }
      } else {
        std::memcpy(buffer(tensor, r), initial.data(), sizes[tensor]);
      }
    }
  }
  std::optional<size_t> first_non_finite_in(uint32_t tensor, uint32_t replica) {
    return first_non_finite(
        {reinterpret_cast<const float*>(buffer(tensor, replica)), sizes[tensor] / sizeof(float)});
  }
  void all_reduce_mean(uint32_t tensor);
  Status all_reduce_mean_across_instances(const format::AllReduce& all_reduce);
  void round_for_the_links(const format::AllReduce& all_reduce);
  std::byte* buffer(uint32_t tensor, uint32_t replica) { return memory.tensor(tensor, replica); }
};

Engine::Engine(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::create(format::Executable executable,
                                                 const EngineOptions& options) {
  return create(format::LoadedExecutable{std::move(executable), {}}, options);
}

StatusOr<std::unique_ptr<Engine>> Engine::create(format::LoadedExecutable loaded,
                                                 const EngineOptions& options) {
  format::Executable& executable = loaded.executable;
  IPU_RETURN_IF_ERROR(loaded.initial_data.check(executable, "the executable"));
  IPU_RETURN_IF_ERROR(format::verify_executable(executable));
  for (int c = 0; c < executable.compute_sets_size(); ++c) {
    const format::ComputeSet& cs = executable.compute_sets(c);
    for (int v = 0; v < cs.vertices_size(); ++v) {
      Status status = kernels::validate_vertex(cs.vertices(v), executable);
      if (!status.ok()) {
        return data_loss("compute set " + std::to_string(c) + " '" + cs.name() + "' vertex " +
                         std::to_string(v) + ": " + status.message());
      }
    }
  }

  // The device's memory lives in host memory: refuse an executable that cannot fit before
  // allocating any of it (a hostile file may declare huge tensors).
  const uint32_t total_replicas = format::replica_count(executable);
  const uint32_t instances = options.collectives ? static_cast<uint32_t>(options.collectives->size()) : 1;
  if (total_replicas % instances != 0) {
    return bad_option("the executable's " + std::to_string(total_replicas) +
                      " replica(s) do not divide over " + std::to_string(instances) + " instances");
  }
  const uint32_t replicas = total_replicas / instances;
  uint64_t total_bytes = 0, largest_bytes = 0;
  const format::Tensor* largest = nullptr;
  for (const format::Tensor& t : executable.tensors()) {
    const uint64_t bytes = format::element_count(t) * format::host_element_size(t.dtype());
    total_bytes += bytes;
    if (bytes > largest_bytes) largest_bytes = bytes, largest = &t;
  }
  total_bytes *= replicas;
  const uint64_t host_bytes =
      static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(::sysconf(_SC_PAGE_SIZE));
  if (total_bytes > host_bytes / 2) {
    return resource_exhausted(
        "the executable's tensors need " + std::to_string(total_bytes) +
        " bytes of memory; this machine has " + std::to_string(host_bytes) + " (the largest, tensor '" +
        largest->name() + "', " + std::to_string(largest_bytes) + " bytes" +
        (replicas > 1 ? ", on each of " + std::to_string(replicas) + " replicas)" : ")"));
  }

  auto impl = std::make_unique<Impl>();
  impl->executable = std::move(executable);
  impl->initial_data = std::move(loaded.initial_data);
  impl->replicas = replicas;
  impl->total_replicas = total_replicas;
  impl->collectives = options.collectives;
  impl->rounding = options.rounding;
  impl->observer = options.observer;
  if (options.collectives)
    impl->first_replica = static_cast<uint32_t>(options.collectives->rank()) * replicas;
  const format::Executable& exe = impl->executable;
  if (options.threads > 0) impl->arena.initialize(options.threads);

  for (const format::Tensor& t : exe.tensors())
    impl->sizes.push_back(format::element_count(t) * format::host_element_size(t.dtype()));
  // reset_tensor below sets every tensor's bytes.
  IPU_ASSIGN_OR_RETURN(impl->memory, DeviceMemory::allocate(impl->sizes, replicas));
  for (uint32_t t = 0; t < impl->sizes.size(); ++t)
    impl->reset_tensor(t);

  // Every replica runs the same plan on its own buffers; one compute set's host tasks are those
  // of all replicas, so replicas run concurrently.
  for (const format::ComputeSet& cs : exe.compute_sets()) {
    PreparedComputeSet all;
    uint64_t cycles = 0;
    for (const format::Vertex& v : cs.vertices())
      cycles += v.cycles();
    for (uint32_t r = 0; r < replicas; ++r) {
      std::vector<kernels::PreparedVertex> prepared;
      for (const format::Vertex& v : cs.vertices()) {
        kernels::PreparedVertex pv;
        pv.num_operands = static_cast<uint32_t>(v.operands_size());
        for (int i = 0; i < v.operands_size(); ++i)
          pv.operands[static_cast<size_t>(i)] = impl->buffer(v.operands(i), r);
        pv.num_params = static_cast<uint32_t>(v.params_size());
        std::copy(v.params().begin(), v.params().end(), pv.params.begin());
        std::copy(v.fparams().begin(), v.fparams().end(), pv.fparams.begin());
        pv.codelet = v.codelet();
        pv.cycles = v.cycles();
        prepared.push_back(pv);
      }
      for (const HostTask& task : coalesce_by_op(cs, prepared)) {
        all.vertices.push_back(task.work);
        all.kernels.push_back(kernels::find_kernel(task.work.codelet)->run);
        all.origins.push_back({static_cast<uint32_t>(task.first_vertex), r});
      }
    }
    all.faults.resize(all.vertices.size());
    for (const kernels::KernelEntry& kernel : all.kernels)
      all.can_fault = all.can_fault || kernel.can_fault();
    all.parallel = all.vertices.size() > 1 && cycles * replicas >= kParallelCycleThreshold;
    all.rounding = rounding_tasks(cs);
    impl->compute_sets.push_back(std::move(all));
  }
  if (impl->observer != nullptr) impl->observer->attached(impl->executable);
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const format::Executable& Engine::executable() const {
  return m_impl->executable;
}

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

uint32_t Engine::replicas() const {
  return m_impl->replicas;
}

uint32_t Engine::first_replica() const {
  return m_impl->first_replica;
}

std::span<std::byte> Engine::tensor_bytes(uint32_t tensor, uint32_t replica) {
  if (tensor >= m_impl->sizes.size() || replica >= m_impl->replicas) return {};
  return {m_impl->buffer(tensor, replica), m_impl->sizes[tensor]};
}

Status Engine::run(uint32_t program, HostStreams& streams) {
  if (program >= static_cast<uint32_t>(m_impl->executable.programs_size())) {
    return invalid_argument("no program " + std::to_string(program));
  }
  const format::Program& body = m_impl->executable.programs(static_cast<int>(program)).program();
  if (m_impl->observer == nullptr) return m_impl->run_program(body, streams);
  const RunObserver::Clock::time_point start = RunObserver::Clock::now();
  Status status = m_impl->run_program(body, streams);
  m_impl->observer->ran_program(program, start, RunObserver::Clock::now());
  return status;
}

void Engine::reset_tensor(uint32_t tensor) {
  if (tensor < m_impl->sizes.size()) m_impl->reset_tensor(tensor);
}

void Engine::set_finite_check(bool on) {
  Impl& s = *m_impl;
  s.finite_check = on;
  if (!on) return;
  const format::Executable& exe = s.executable;
  if (s.touched_floats.empty()) {
    for (const format::ComputeSet& cs : exe.compute_sets()) {
      std::vector<uint32_t> tensors;
      for (const format::Vertex& v : cs.vertices()) {
        for (uint32_t t : v.operands()) {
          if (format::is_float(exe.tensors(static_cast<int>(t)).dtype())) tensors.push_back(t);
        }
      }
      std::sort(tensors.begin(), tensors.end());
      tensors.erase(std::unique(tensors.begin(), tensors.end()), tensors.end());
      s.touched_floats.push_back(std::move(tensors));
    }
  }
  s.non_finite_at_start.assign(s.sizes.size(), false);
  for (uint32_t t = 0; t < s.sizes.size(); ++t) {
    if (!format::is_float(exe.tensors(static_cast<int>(t)).dtype())) continue;
    for (uint32_t r = 0; r < s.replicas && !s.non_finite_at_start[t]; ++r) {
      s.non_finite_at_start[t] = s.first_non_finite_in(t, r).has_value();
    }
  }
}

// A tensor that was finite before compute set `index` and is not after it was written by it.
Status Engine::Impl::check_finite(uint32_t index) {
  const format::ComputeSet& set = executable.compute_sets(static_cast<int>(index));
  for (uint32_t t : touched_floats[index]) {
    if (non_finite_at_start[t]) continue;
    for (uint32_t r = 0; r < replicas; ++r) {
      const std::optional<size_t> element = first_non_finite_in(t, r);
      if (!element) continue;
      const float value = reinterpret_cast<const float*>(buffer(t, r))[*element];
      const std::string what = std::string(std::isnan(value) ? "nan"
                                           : value > 0       ? "inf"
                                                             : "-inf") +
                               " at element " + std::to_string(*element);
      const format::Tensor& tensor = executable.tensors(static_cast<int>(t));
      std::string where = "compute set '" + set.name() + "'";
      for (const format::Vertex& v : set.vertices()) {
        if (std::find(v.operands().begin(), v.operands().end(), t) == v.operands().end()) continue;
        const std::string codelet(format::codelet_name(static_cast<format::Codelet>(v.codelet())));
        where += set.ops_size() > 0 ? " (node '" + set.ops(static_cast<int>(v.op())) + "', " + codelet + ")"
                                    : " (" + codelet + ")";
        break;
      }
      if (total_replicas > 1) where += ", replica " + std::to_string(first_replica + r);
      return non_finite("tensor '" + tensor.name() + "' went non-finite in " + where + ": " + what);
    }
  }
  return Status();
}

Status Engine::Impl::run_compute_set(uint32_t index) {
  IPU_RETURN_IF_ERROR(run_vertices(index));
  round_written(index);
  return finite_check ? check_finite(index) : Status();
}

// Rounds what the compute set wrote to FLOAT16 tensors, on every replica, in host tasks of
// kRoundingGrain elements. An element's result depends only on its value (and, stochastically,
// on its place in the stream), so the split does not change it.
void Engine::Impl::round_written(uint32_t index) {
  PreparedComputeSet& prepared = compute_sets[index];
  const uint64_t execution = prepared.executions++;
  const std::vector<RoundingTask>& tasks = prepared.rounding;
  if (tasks.empty()) return;
  auto round_task = [&](size_t i) {
    const RoundingTask& task = tasks[i % tasks.size()];
    const auto replica = static_cast<uint32_t>(i / tasks.size());
    auto* data = reinterpret_cast<float*>(buffer(task.tensor, replica));
    if (!rounding.stochastic) return round_to_half(data, task.begin, task.end, nullptr);
    const RoundingStream stream =
        RoundingStream::of(rounding.seed, index, execution, task.tensor, first_replica + replica);
    round_to_half(data, task.begin, task.end, &stream);
  };
  const size_t count = tasks.size() * replicas;
  if (count == 1) return round_task(0);
  run_parallel(arena, count, round_task);
}

// Values from the host and all-reduce results round to nearest.
void Engine::Impl::round_whole(uint32_t tensor, uint32_t replica) {
  if (!is_half(tensor)) return;
  round_to_half(reinterpret_cast<float*>(buffer(tensor, replica)), 0, sizes[tensor] / sizeof(float), nullptr);
}

Status Engine::Impl::run_vertices(uint32_t index) {
  PreparedComputeSet& cs = compute_sets[index];
  const uint64_t compute_set = compute_sets_run.fetch_add(1) + 1; // scratch of earlier sets is stale
  auto run_task = [&](size_t i) {
    kernels::KernelContext context{scratch.local(), compute_set, cs.faults[i]};
    cs.kernels[i](cs.vertices[i], context);
  };
  if (!cs.parallel) {
    for (size_t i = 0; i < cs.vertices.size(); ++i) {
      run_task(i);
      if (cs.faults[i]) return fault_status(index, i); // the lowest: later tasks need not run
    }
    return Status();
  }
  run_parallel(arena, cs.vertices.size(), run_task);
  if (!cs.can_fault) return Status();
  for (size_t i = 0; i < cs.faults.size(); ++i) {
    if (cs.faults[i]) return fault_status(index, i);
  }
  return Status();
}

// Names the op, codelet and compute set of task `task`'s fault, and clears every fault of the
// set so that a later run starts clean.
Status Engine::Impl::fault_status(uint32_t index, size_t task) {
  const format::ComputeSet& set = executable.compute_sets(static_cast<int>(index));
  const VertexOrigin origin = compute_sets[index].origins[task];
  const format::Vertex& vertex = set.vertices(static_cast<int>(origin.vertex));
  std::string where = std::string(format::codelet_name(static_cast<format::Codelet>(vertex.codelet()))) +
                      " in compute set '" + set.name() + "'";
  if (total_replicas > 1) where += ", replica " + std::to_string(first_replica + origin.replica);
  where =
      set.ops_size() > 0 ? "node '" + set.ops(static_cast<int>(vertex.op())) + "' (" + where + ")" : where;
  const std::string what = kernels::describe(compute_sets[index].faults[task]);
  for (kernels::KernelFault& fault : compute_sets[index].faults)
    fault = kernels::KernelFault();
  return out_of_range(where + ": " + what);
}

// Sums in replica order, so the result is the same on every run and every thread count.
// A half wire type rounds every replica's values to binary16, before the sum as they leave and
// after it as the mean arrives, in one process and across instances alike.
void Engine::Impl::round_for_the_links(const format::AllReduce& all_reduce) {
  if (all_reduce.wire_dtype() != format::FLOAT16) return;
  for (uint32_t tensor : all_reduce.tensors()) {
    for (uint32_t r = 0; r < replicas; ++r)
      round_to_half(reinterpret_cast<float*>(buffer(tensor, r)), 0, sizes[tensor] / sizeof(float), nullptr);
  }
}

void Engine::Impl::all_reduce_mean(uint32_t tensor) {
  if (replicas == 1) return;
  const size_t n = sizes[tensor] / sizeof(float);
  float* first = reinterpret_cast<float*>(buffer(tensor, 0));
  for (uint32_t r = 1; r < replicas; ++r) {
    const float* other = reinterpret_cast<const float*>(buffer(tensor, r));
    for (size_t i = 0; i < n; ++i)
      first[i] += other[i];
  }
  const float scale = 1.0f / static_cast<float>(replicas);
  for (size_t i = 0; i < n; ++i)
    first[i] *= scale;
  round_whole(tensor, 0);
  for (uint32_t r = 1; r < replicas; ++r)
    std::memcpy(buffer(tensor, r), first, sizes[tensor]);
}

// With several instances: every tensor of the node in one collective, each summed in the order
// all_reduce_mean sums in, whatever the number of instances.
Status Engine::Impl::all_reduce_mean_across_instances(const format::AllReduce& all_reduce) {
  std::vector<collectives::ReplicaTensor> tensors;
  for (uint32_t tensor : all_reduce.tensors()) {
    collectives::ReplicaTensor t;
    for (uint32_t r = 0; r < replicas; ++r)
      t.local.push_back(reinterpret_cast<float*>(buffer(tensor, r)));
    t.elements = sizes[tensor] / sizeof(float);
    tensors.push_back(std::move(t));
  }
  IPU_RETURN_IF_ERROR(collectives::all_reduce_mean_in_replica_order(*collectives, tensors));
  for (uint32_t tensor : all_reduce.tensors()) {
    for (uint32_t r = 0; r < replicas; ++r)
      round_whole(tensor, r);
  }
  return Status();
}

Status Engine::Impl::run_program(const format::Program& program, HostStreams& streams) {
  const format::Program::KindCase kind = program.kind_case();
  const bool step = kind == format::Program::kExecute || kind == format::Program::kCopy ||
                    kind == format::Program::kStreamIn || kind == format::Program::kStreamOut ||
                    kind == format::Program::kAllReduce;
  if (observer == nullptr || !step) return run_node(program, streams);
  const RunObserver::Clock::time_point start = RunObserver::Clock::now();
  Status status = run_node(program, streams);
  observer->ran_step(program, start, RunObserver::Clock::now());
  return status;
}

Status Engine::Impl::run_node(const format::Program& program, HostStreams& streams) {
  switch (program.kind_case()) {
  case format::Program::kSequence:
    for (const format::Program& step : program.sequence().steps())
      IPU_RETURN_IF_ERROR(run_program(step, streams));
    return Status();
  case format::Program::kExecute:
    return run_compute_set(program.execute());
  case format::Program::kCopy:
    for (uint32_t r = 0; r < replicas; ++r) {
      std::memcpy(buffer(program.copy().destination(), r), buffer(program.copy().source(), r),
                  sizes[program.copy().source()]);
    }
    return Status();
  case format::Program::kRepeat:
    for (uint64_t i = 0; i < program.repeat().count(); ++i)
      IPU_RETURN_IF_ERROR(run_program(program.repeat().body(), streams));
    return Status();
  case format::Program::kStreamIn: {
    const auto& st = program.stream_in();
    if (!streams.pull)
      return failed_precondition("program reads stream " + std::to_string(st.stream()) +
                                 " but no host feeds it");
    for (uint32_t r = 0; r < replicas; ++r) {
      IPU_RETURN_IF_ERROR(streams.pull(st.stream(), r, {buffer(st.tensor(), r), sizes[st.tensor()]}));
      round_whole(st.tensor(), r);
    }
    return Status();
  }
  case format::Program::kStreamOut: {
    const auto& st = program.stream_out();
    if (!streams.push) return Status();
    for (uint32_t r = 0; r < replicas; ++r) {
      IPU_RETURN_IF_ERROR(streams.push(st.stream(), r, {buffer(st.tensor(), r), sizes[st.tensor()]}));
    }
    return Status();
  }
  case format::Program::kAllReduce: {
    const format::AllReduce& all_reduce = program.all_reduce();
    round_for_the_links(all_reduce);
    if (replicas != total_replicas) {
      IPU_RETURN_IF_ERROR(all_reduce_mean_across_instances(all_reduce));
    } else {
      for (uint32_t tensor : all_reduce.tensors())
        all_reduce_mean(tensor);
    }
    round_for_the_links(all_reduce);
    return Status();
  }
  case format::Program::kParallel: {
    // Branches touch disjoint tensors and never call the host (verified), so they may run at once.
    const auto& branches = program.parallel().branches();
    std::vector<Status> results(static_cast<size_t>(branches.size()));
    run_parallel(arena, results.size(),
                 [&](size_t i) { results[i] = run_program(branches[static_cast<int>(i)], streams); });
    for (const Status& result : results)
      IPU_RETURN_IF_ERROR(result);
    return Status();
  }
  case format::Program::kConditional: {
    // Every replica holds the same condition (it derives from all-reduced values); one that does
    // not would make replicas' weights drift apart, so it fails the run.
    const auto& conditional = program.conditional();
    const bool taken = reinterpret_cast<const float*>(buffer(conditional.condition(), 0))[0] != 0.0f;
    for (uint32_t r = 1; r < replicas; ++r) {
      if ((reinterpret_cast<const float*>(buffer(conditional.condition(), r))[0] != 0.0f) != taken)
        return internal_error("replicas disagree on the condition in tensor " +
                              std::to_string(conditional.condition()));
    }
    const format::Program& body = taken ? conditional.then_body() : conditional.else_body();
    return body.kind_case() == format::Program::KIND_NOT_SET ? Status() : run_program(body, streams);
  }
  case format::Program::KIND_NOT_SET:
    break;
  }
  return internal_error("unverified program node");
}

} // namespace ipu::engine
