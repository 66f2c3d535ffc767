// Structural verification of an executable: every index, interval, size and program node is
// checked, so that nothing after this can read or write outside a tensor. Codelet-specific
// checks (parameters of each vertex) belong to the kernel registry.
#pragma once

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::format {

inline constexpr int kMaxProgramDepth = 64;
inline constexpr uint64_t kMaxTensorElements = uint64_t{1} << 32;
inline constexpr uint32_t kMaxReplicas = 64;

uint64_t element_count(const Tensor& tensor);
uint64_t dtype_size(DType dtype); // bytes in tile memory and on the host link; 0 for an unknown dtype
bool is_float(DType dtype);       // FLOAT32 or FLOAT16
// Bytes of one element in the runtime's device memory and host transfers: 4 for every dtype (a
// FLOAT16 element is a float holding a binary16 value); 0 for an unknown dtype.
uint64_t host_element_size(DType dtype);
// Replicas the executable runs as (an unset field means 1).
uint32_t replica_count(const Executable& executable);
// IPUs one replica uses: tensors, vertices and tiles of the executable live on these.
uint32_t ipus_per_replica(const Executable& executable);

// Returns DataLoss naming the first offending object ("tensor 12 'fc1/kernel': mapping interval
// 3 ends at 1000 past the tensor's 800 elements").
Status verify_executable(const Executable& executable);

// The facts runtime/session relies on, beyond verify_executable's, when it feeds, drains and
// repeats programs (docs/executable_format.md, "What the verifier guarantees"): the streams it
// knows by name have the dtype and shape it copies, model inputs and outputs match their streams,
// and no run of a program moves a data stream, or repeats any node, more than steps_per_execution
// times, nor executes a compute set more than twice per step. DataLoss naming the first offending
// object otherwise. Safe on any parsed message, so it may run before verify_executable.
Status verify_host_contract(const Executable& executable);

} // namespace ipu::format
