#include "runtime/engine/coalesce.h"

#include <algorithm>
#include <bit>
#include <map>

namespace ipu::engine {
namespace {

using kernels::KernelDef;
using kernels::PreparedVertex;
using kernels::WorkRange;

// Host tasks are built from adjacent vertices of one op up to 1/kTasksPerComputeSet of that op's
// work, so threads get a few tasks to balance with and no task is vanishingly small. The split
// depends on neither the thread count nor the other ops of the compute set (a merged task is
// one larger BLAS call, whose rounding may differ), so results are bitwise identical for any
// --threads and however the compiler groups ops into compute sets (recomputation regroups them).
constexpr uint64_t kTasksPerComputeSet = 8;
constexpr uint64_t kMinTaskCycles = 20000;

// Everything a vertex must share with a task to extend it along `range`, with `end` in place of
// the range: a task is filed under its range's end, and looked up by a vertex's begin.
using MergeKey = std::vector<int64_t>;

MergeKey merge_key(const PreparedVertex& v, const WorkRange& range, int64_t end) {
  MergeKey key{v.codelet, v.num_operands, v.num_params};
  for (uint32_t i = 0; i < v.num_operands; ++i)
    key.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(v.operands[i])));
  for (uint32_t i = 0; i < v.num_params; ++i) {
    const int index = static_cast<int>(i);
    key.push_back(index == range.begin ? 0 : index == range.end ? end : v.params[i]);
  }
  for (float f : v.fparams)
    key.push_back(std::bit_cast<int32_t>(f));
  return key;
}

// The range a vertex merges along in the first, second or third pass (begin < 0: none).
WorkRange pass_range(const KernelDef& def, const PreparedVertex& v, int pass) {
  if (pass == 2) return def.tertiary != nullptr ? def.tertiary(v) : WorkRange{};
  const bool secondary_first =
      def.secondary.begin >= 0 && def.secondary_first != nullptr && def.secondary_first(v);
  return (pass == 0) != secondary_first ? def.primary : def.secondary;
}

std::vector<HostTask> merge_pass(const std::vector<HostTask>& vertices, uint64_t task_cycles, int pass) {
  std::vector<HostTask> tasks;
  std::map<MergeKey, size_t> growing; // tasks that a later vertex may continue
  for (const HostTask& t : vertices) {
    const PreparedVertex& v = t.work;
    const KernelDef& def = *kernels::find_kernel(v.codelet);
    const WorkRange range = pass_range(def, v, pass);
    if (range.begin < 0) {
      tasks.push_back(t);
      continue;
    }
    auto found = growing.find(merge_key(v, range, v.params[static_cast<size_t>(range.begin)]));
    if (found != growing.end()) {
      const size_t at = found->second;
      PreparedVertex& task = tasks[at].work;
      const bool room =
          task.cycles + v.cycles <= task_cycles || (def.undersized != nullptr && def.undersized(task, range));
      if (room && kernels::try_merge(def, task, v)) {
        tasks[at].first_vertex = std::min(tasks[at].first_vertex, t.first_vertex);
        growing.erase(found);
        growing[merge_key(task, range, task.params[static_cast<size_t>(range.end)])] = at;
        continue;
      }
    }
    growing[merge_key(v, range, v.params[static_cast<size_t>(range.end)])] = tasks.size();
    tasks.push_back(t);
  }
  return tasks;
}

} // namespace

std::vector<HostTask> coalesce(const std::vector<PreparedVertex>& vertices, uint64_t task_cycles) {
  std::vector<HostTask> tasks;
  for (size_t i = 0; i < vertices.size(); ++i)
    tasks.push_back({vertices[i], i});
  for (int pass = 0; pass < 3; ++pass)
    tasks = merge_pass(tasks, task_cycles, pass);
  return tasks;
}

std::vector<HostTask> coalesce_by_op(const format::ComputeSet& cs,
                                     const std::vector<kernels::PreparedVertex>& prepared) {
  std::map<uint32_t, std::vector<size_t>> vertices_of_op;
  std::vector<uint32_t> op_order;
  for (int i = 0; i < cs.vertices_size(); ++i) {
    const uint32_t op = cs.vertices(i).op();
    if (!vertices_of_op.contains(op)) op_order.push_back(op);
    vertices_of_op[op].push_back(static_cast<size_t>(i));
  }
  std::vector<HostTask> tasks;
  for (uint32_t op : op_order) {
    const std::vector<size_t>& indices = vertices_of_op[op];
    std::vector<kernels::PreparedVertex> vertices;
    uint64_t cycles = 0;
    for (size_t i : indices) {
      vertices.push_back(prepared[i]);
      cycles += cs.vertices(static_cast<int>(i)).cycles();
    }
    for (HostTask task : coalesce(vertices, std::max(kMinTaskCycles, cycles / kTasksPerComputeSet))) {
      task.first_vertex = indices[task.first_vertex];
      tasks.push_back(task);
    }
  }
  return tasks;
}

} // namespace ipu::engine
