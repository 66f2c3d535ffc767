// Internal to the verifier (verifier.cpp, verify_programs.cpp), not a public API: what its checks
// of the program trees share with the rest of it. Everyone else includes verifier.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::format {

// "tensor 12 'fc1/kernel'", as the verifier's messages name a tensor.
std::string tensor_label(const Executable& exe, uint64_t index);
uint64_t element_count_of(const Stream& stream);

// The distinct tensors each compute set's vertices name, worked out once: a Parallel node checks
// its branches against them, and a file may execute one large compute set from many branches.
using ComputeSetTensors = std::vector<std::vector<uint32_t>>;
ComputeSetTensors compute_set_tensors(const Executable& exe);

// The programs of verify_executable, after everything else of it: each name once, and each tree
// (nested at most kMaxProgramDepth deep) naming existing objects of matching types, with the
// branches of every Parallel node sharing no tensor. DataLoss naming the program otherwise.
Status verify_programs(const Executable& exe, const ComputeSetTensors& cs_tensors);

// How often one run of a program moves each stream and executes each compute set, per replica:
// the sum over the nodes doing it of the product of the Repeat counts around them.
struct RunCounts {
  std::map<uint32_t, uint64_t> transfers;  // by stream
  std::map<uint32_t, uint64_t> executions; // by compute set
};

// With no node repeated more than S times and no compute set run more than
// kMaxExecutionsPerStep times a step, the vertices one run executes are bounded by S times the
// file's: a small file cannot loop for 2^62 iterations nor execute a large compute set from
// 20,000 nodes.
Status count_runs(const Executable& exe, const Program& program, uint64_t runs, const std::string& where,
                  RunCounts& counts);

} // namespace ipu::format
