// Host tasks from a compute set's per-tile vertices: vertices that run one kernel on the same
// operands and parameters, and whose work ranges continue each other (kernels::try_merge), are
// merged into tasks of about a target size.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/format/executable.pb.h"
#include "runtime/kernels/kernel.h"

namespace ipu::engine {

// A host task: the merged work, and the index (in the compute set's vertex list) of the vertex
// it grew from, which names the task's op in fault reports.
struct HostTask {
  kernels::PreparedVertex work;
  size_t first_vertex = 0;
};

// Merges `vertices` of one compute set into tasks of at most `task_cycles` estimated cycles (a
// larger vertex stays whole), or more where the kernel finds a task too small to run
// efficiently (KernelDef::undersized). A vertex joins any task whose range it continues, next to it in the
// list or not: vertices of a compute set write disjoint regions, so their order is free. Kernels
// with two ranges merge along one first (KernelDef::secondary_first), then the other, so tasks are
// rectangles; then along a third range (KernelDef::tertiary), rectangles of the same shape. The result
// depends on the vertices and `task_cycles` alone, never the thread count.
std::vector<HostTask> coalesce(const std::vector<kernels::PreparedVertex>& vertices, uint64_t task_cycles);

// coalesce of each op's vertices of `cs` (in the order its ops first appear) with that op's own
// task size; first_vertex indexes the compute set's vertices.
std::vector<HostTask> coalesce_by_op(const format::ComputeSet& cs,
                                     const std::vector<kernels::PreparedVertex>& prepared);

} // namespace ipu::engine
