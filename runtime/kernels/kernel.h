// The contract between the engine and a kernel. Kernels are stateless functions of their
// operands and of what the engine passes in (kernel_context.h), so TBB may run vertices of one
// compute set concurrently without locks; the compiler guarantees that vertices of one compute
// set write disjoint regions. A worker's scratch derived from inputs may be reused within one
// compute set. A kernel that meets data outside its op's domain reports a KernelFault; the
// engine stops the run with an error naming it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/codelet.h"
#include "runtime/format/codelet_params.h"
#include "runtime/format/executable.pb.h"
#include "runtime/kernels/kernel_context.h"
#include "runtime/kernels/kernel_fault.h"

namespace ipu::kernels {

using format::ActivationKind;
using format::Codelet;
using format::kActivationKindCount;

inline constexpr size_t kMaxOperands = 8;
inline constexpr size_t kMaxParams = 48;
inline constexpr size_t kMaxFloatParams = 8;

// A vertex resolved against the device's tensor storage, ready to run. Parameters are held by
// value so the engine can coalesce vertices into one host task (see try_merge).
struct PreparedVertex {
  std::array<void*, kMaxOperands> operands{};
  std::array<int64_t, kMaxParams> params{};
  std::array<float, kMaxFloatParams> fparams{};
  uint32_t num_operands = 0;
  uint32_t num_params = 0;
  uint32_t codelet = 0;
  uint64_t cycles = 0; // the compiler's estimate, used to size host tasks

  float* f32(size_t i) const { return static_cast<float*>(operands[i]); }
  const int32_t* i32(size_t i) const { return static_cast<const int32_t*>(operands[i]); }
};

// What the validator knows of an operand.
struct OperandInfo {
  format::DType dtype;
  uint64_t elements;
};

// A kernel that needs nothing but its vertex.
using KernelFn = void (*)(const PreparedVertex& vertex);
// A kernel that uses the worker's scratch, the compute set's number, or reports a fault.
using ContextKernelFn = void (*)(const PreparedVertex& vertex, KernelContext& context);

// Either kind of kernel, called the same way; a KernelDef names its function alone, or as
// KernelEntry::fallible(run) if it may report a fault.
class KernelEntry {
public:
  KernelEntry(KernelFn run) : m_run(run) {}                 // NOLINT(google-explicit-constructor)
  KernelEntry(ContextKernelFn run) : m_with_context(run) {} // NOLINT(google-explicit-constructor)
  static KernelEntry fallible(ContextKernelFn run) {
    KernelEntry entry(run);
    entry.m_can_fault = true;
    return entry;
  }

  void operator()(const PreparedVertex& vertex, KernelContext& context) const {
    if (m_with_context != nullptr) {
      m_with_context(vertex, context);
    } else {
      m_run(vertex);
    }
  }
  bool can_fault() const { return m_can_fault; }

private:
  KernelFn m_run = nullptr;
  ContextKernelFn m_with_context = nullptr;
  bool m_can_fault = false;
};

// Checks operand count, dtypes, parameter ranges and that every region the kernel touches lies
// inside its operands. Runs at load time, so a hostile executable is rejected before it runs.
using ValidateFn = Status (*)(const format::Vertex& vertex, const std::vector<OperandInfo>& operands);

// Indices of a [begin, end) pair among a kernel's params: the part of the work a vertex owns.
struct WorkRange {
  int begin = -1;
  int end = -1;
};
// The range of a layout whose work is its [kBegin, kEnd) (format::params).
template <typename Layout> constexpr WorkRange begin_end() {
  return {Layout::kBegin, Layout::kEnd};
}

struct KernelDef {
  Codelet codelet;
  KernelEntry run;
  ValidateFn validate;
  // Vertices that differ only in adjacent work ranges may be run as one host task. A kernel with
  // two ranges (rows and columns) merges along one while the other is equal.
  WorkRange primary{};
  WorkRange secondary{};
  // Where it returns true for a vertex, merging goes along `secondary` first (engine/coalesce.h).
  bool (*secondary_first)(const PreparedVertex& vertex) = nullptr;
  // Where it returns true, `task` keeps growing along `range` past the target task size: for a
  // kernel whose library call runs much slower per item on a small block.
  bool (*undersized)(const PreparedVertex& task, const WorkRange& range) = nullptr;
  // A vertex's third range, merged once tasks are rectangles of the other two (begin < 0, or no
  // function: none): a convolution's output rows, which the compiler splits over tiles at small
  // batches, where merging them leaves every sum as it was.
  WorkRange (*tertiary)(const PreparedVertex& vertex) = nullptr;
};

// Extends `into` by `next` if they are the same kernel on the same operands and parameters and
// `next`'s work range continues `into`'s. Vertices of one compute set write disjoint regions,
// so running the union is the same as running both.
bool try_merge(const KernelDef& def, PreparedVertex& into, const PreparedVertex& next);

// Returns nullptr for an id that names no codelet.
const KernelDef* find_kernel(uint32_t codelet_id);

// Validates `vertex` against the tensors it names (which the format verifier already checked).
Status validate_vertex(const format::Vertex& vertex, const format::Executable& executable);

// Each codelet's kernel, defined in its family's file (kernels.def).
#define KERNEL(codelet, definition) const KernelDef& definition();
#include "runtime/kernels/kernels.def"
#undef KERNEL

} // namespace ipu::kernels
