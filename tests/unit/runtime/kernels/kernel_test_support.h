// What the kernel tests share: a kernel by codelet, vertices built from plain buffers, validation
// of float operands by size, and deterministic test values.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/format/host_contract.h"
#include "runtime/kernels/kernel.h"

namespace ipu::kernels::testing {

inline const KernelDef& kernel(format::Codelet c) {
  const KernelDef* def = find_kernel(static_cast<uint32_t>(c));
  REQUIRE(def != nullptr);
  REQUIRE(def->codelet == c);
  return *def;
}

inline PreparedVertex vertex(format::Codelet c, const std::vector<void*>& operands,
                             const std::vector<int64_t>& params, const std::vector<float>& fparams = {},
                             uint64_t cycles = 10) {
  PreparedVertex v;
  v.codelet = static_cast<uint32_t>(c);
  for (void* o : operands)
    v.operands[v.num_operands++] = o;
  for (int64_t p : params)
    v.params[v.num_params++] = p;
  for (size_t i = 0; i < fparams.size(); ++i)
    v.fparams[i] = fparams[i];
  v.cycles = cycles;
  return v;
}

// Runs `v` with `context`'s scratch and compute set, and returns what it reported.
inline KernelFault run_for_fault(const PreparedVertex& v, WorkerScratch& scratch, uint64_t compute_set) {
  KernelFault fault;
  KernelContext context{scratch, compute_set, fault};
  kernel(static_cast<format::Codelet>(v.codelet)).run(v, context);
  return fault;
}

// Runs `v` alone in a compute set of its own, as an engine would, and returns what it reported
// (nothing, for valid data).
inline KernelFault run_for_fault(const PreparedVertex& v) {
  thread_local WorkerScratch scratch;
  thread_local uint64_t compute_sets_run = 0;
  return run_for_fault(v, scratch, ++compute_sets_run);
}

// Runs `v` on data it must accept.
inline void run(const PreparedVertex& v) {
  const KernelFault fault = run_for_fault(v);
  // Described only when there is a fault: doctest's -s evaluates a passing assertion's message too.
  if (fault) FAIL(describe(fault));
}

inline void run(format::Codelet c, const std::vector<void*>& operands, const std::vector<int64_t>& params,
                const std::vector<float>& fparams = {}) {
  run(vertex(c, operands, params, fparams));
}

// The hyper-parameters operand of an optimizer vertex: runtime/format/host_contract.h's slots,
// those not given 0.
using H = format::HyperParameter;
inline std::vector<float> hyper(std::initializer_list<std::pair<H::Index, float>> given) {
  std::vector<float> values(format::kHyperParameterCount, 0.0f);
  for (const auto& [slot, value] : given)
    values[slot] = value;
  return values;
}

// Validates a vertex whose operands are float tensors of the given element counts.
inline Status validate(format::Codelet c, const std::vector<uint64_t>& sizes,
                       const std::vector<int64_t>& params, const std::vector<float>& fparams = {}) {
  format::Vertex v;
  v.set_codelet(static_cast<uint32_t>(c));
  std::vector<OperandInfo> ops;
  for (size_t i = 0; i < sizes.size(); ++i) {
    v.add_operands(static_cast<uint32_t>(i));
    ops.push_back({format::FLOAT32, sizes[i]});
  }
  for (int64_t p : params)
    v.add_params(p);
  for (float f : fparams)
    v.add_fparams(f);
  return kernel(c).validate(v, ops);
}

// Deterministic values in [-2, 2).
inline std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t state = seed * 2654435761u + 12345u;
  for (float& x : out) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 4.0f - 2.0f;
  }
  return out;
}

} // namespace ipu::kernels::testing
