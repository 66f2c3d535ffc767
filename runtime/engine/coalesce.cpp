#include "runtime/engine/coalesce.h"

#include <algorithm>
#include <bit>
#include <map>

namespace ipu::engine {
namespace {

using kernels::KernelDef;
using kernels::PreparedVertex;
using kernels::WorkRange;

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

// The range a vertex merges along in the first or the second pass (begin < 0: none).
WorkRange pass_range(const KernelDef& def, const PreparedVertex& v, int pass) {
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
  return merge_pass(merge_pass(tasks, task_cycles, 0), task_cycles, 1);
}

} // namespace ipu::engine
