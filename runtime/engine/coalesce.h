// Host tasks from a compute set's per-tile vertices: vertices that run one kernel on the same
// operands and parameters, and whose work ranges continue each other (kernels::try_merge), are
// merged into tasks of about a target size.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/kernels/kernel.h"

namespace ipu::engine {

// Merges `vertices` of one compute set into tasks of at most `task_cycles` estimated cycles (a
// larger vertex stays whole). A vertex joins any task whose range it continues, next to it in the
// list or not: vertices of a compute set write disjoint regions, so their order is free. Kernels
// with two ranges merge along one first (KernelDef::secondary_first), then the other, so tasks are
// rectangles. The result depends on the vertices and `task_cycles` alone, never the thread count.
std::vector<kernels::PreparedVertex> coalesce(const std::vector<kernels::PreparedVertex>& vertices,
                                              uint64_t task_cycles);

}  // namespace ipu::engine
