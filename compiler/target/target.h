// Simulated targets: IPU presets and the cycle model parameters that go with them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::target {

// Parameters of the cycle estimate. Sources and reasoning: docs/cycle_model.md.
struct CycleModel {
  double vertex_overhead_cycles = 100;   // launching a vertex and reading its state
  // Charged once per vertex to the whole step, not to its tile: every vertex adds descriptors
  // and exchange code that the IPU runs and stores each step. Without it a plan would spread a
  // few hundred elements over a thousand tiles to save a handful of cycles.
  double vertex_spread_cycles = 10;
  double macs_per_cycle = 16;            // fp32 multiply-accumulates per tile per cycle (AMP)
  double vector_flops_per_cycle = 2;     // fp32 elementwise ops per tile per cycle (64-bit SIMD)
  double transcendental_cycles = 10;     // extra cycles per exp/log/tanh
  double exchange_bytes_per_cycle = 8;   // per tile, received over the exchange
  double sync_cycles = 150;              // one BSP sync across the IPU
  double host_bytes_per_cycle = 12;      // host link bandwidth in bytes per IPU cycle
  double ipu_link_bytes_per_cycle = 48;  // IPU-Link: 64 GB/s between IPUs at 1.33 GHz
  uint64_t vertex_state_bytes = 32;      // tile memory per vertex descriptor
  uint64_t codelet_code_bytes = 1024;    // tile memory per distinct codelet used on a tile
};

struct TargetSpec {
  std::string arch;  // the preset ("mk2", "mk1"), also when tiles or memory are overridden
  uint32_t num_ipus = 1;
  uint32_t tiles_per_ipu = 1472;
  uint64_t bytes_per_tile = 638976;
  uint32_t worker_threads_per_tile = 6;
  double clock_hz = 1.33e9;
  CycleModel cycles;

  uint32_t total_tiles() const { return num_ipus * tiles_per_ipu; }
  format::Target to_format() const;
};

// "mk2" (GC200) or "mk1" (GC2); InvalidArgument names the accepted values otherwise.
StatusOr<TargetSpec> target_preset(const std::string& arch);

// Applies explicit overrides (for small test targets); validates ranges. The arch keeps the
// preset's name: its cycle parameters still apply.
Status override_target(TargetSpec& target, std::optional<uint32_t> tiles_per_ipu, std::optional<uint64_t> bytes_per_tile);

}  // namespace ipu::target
