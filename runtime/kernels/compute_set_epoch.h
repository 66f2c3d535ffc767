// A counter the engine advances before every compute set it runs. Inputs of a compute set do
// not change while it runs (its vertices write disjoint outputs, never what another reads), so
// a kernel may reuse scratch derived from its inputs, such as the convolution's converted weights,
// for as long as the epoch it was built in lasts.
#pragma once

#include <atomic>
#include <cstdint>

namespace ipu::kernels {

namespace detail {
inline std::atomic<uint64_t> compute_set_epoch{0};
}  // namespace detail

// Relaxed is enough: TBB's task spawn orders the engine's advance before the vertices' reads.
inline void advance_compute_set_epoch() { detail::compute_set_epoch.fetch_add(1, std::memory_order_relaxed); }
inline uint64_t compute_set_epoch() { return detail::compute_set_epoch.load(std::memory_order_relaxed); }

}  // namespace ipu::kernels
