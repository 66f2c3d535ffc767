#include "compiler/target/target.h"

#include <cmath>

namespace ipu::target {

double sync_cycles(const TargetSpec& target, uint32_t ipus) {
  const uint32_t hops = 1 + ipus / 4; // whole hops: 1 for 1 to 3 IPUs, 2 for 4 to 7
  return std::ceil(target.cycles.sync_ns_per_hop * target.clock_hz / 1e9 * hops * 2);
}

double exchange_cycles(const CycleModel& model, double bytes, double shared) {
  return (bytes - shared) / model.exchange_bytes_per_cycle + shared / (2 * model.exchange_bytes_per_cycle);
}

format::Target TargetSpec::to_format() const {
  format::Target t;
  t.set_arch(arch);
  t.set_num_ipus(num_ipus);
  t.set_tiles_per_ipu(tiles_per_ipu);
  t.set_bytes_per_tile(bytes_per_tile);
  t.set_worker_threads_per_tile(worker_threads_per_tile);
  t.set_clock_hz(clock_hz);
  return t;
}

StatusOr<TargetSpec> target_preset(const std::string& arch) {
  TargetSpec t;
  t.arch = arch;
  if (arch == "mk2") {
    // GC200: 1472 tiles, 624 KiB each, 1.33 GHz, 62.5 TFLOPS fp32 = 16 MAC/tile/cycle.
    t.tiles_per_ipu = 1472;
    t.bytes_per_tile = 638976;
    t.clock_hz = 1.33e9;
    t.cycles.macs_per_cycle = 16;
    return t;
  }
  if (arch == "mk1") {
    // GC2: 1216 tiles, 256 KiB each, 1.6 GHz, 31.1 TFLOPS fp32 = 8 MAC/tile/cycle.
    t.tiles_per_ipu = 1216;
    t.bytes_per_tile = 262144;
    t.clock_hz = 1.6e9;
    t.cycles.macs_per_cycle = 8;
    t.cycles.ipu_link_bytes_per_cycle = 0.85 * 128e9 / 8 / t.clock_hz;
    return t;
  }
  return invalid_argument("unknown --arch '" + arch + "' (expected mk2 or mk1)");
}

Status override_target(TargetSpec& target, std::optional<uint32_t> tiles_per_ipu,
                       std::optional<uint64_t> bytes_per_tile) {
  if (tiles_per_ipu) {
    if (*tiles_per_ipu == 0 || *tiles_per_ipu > 65536)
      return invalid_argument("--tiles-per-ipu must be in [1, 65536]");
    target.tiles_per_ipu = *tiles_per_ipu;
  }
  if (bytes_per_tile) {
    if (*bytes_per_tile < 1024) return invalid_argument("--bytes-per-tile must be at least 1024");
    target.bytes_per_tile = *bytes_per_tile;
  }
  return Status();
}

} // namespace ipu::target
