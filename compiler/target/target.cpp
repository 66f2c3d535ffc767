#include "compiler/target/target.h"

#include <algorithm>
#include <cmath>

namespace ipu::target {

double sync_cycles(const TargetSpec& target, uint32_t ipus) {
  const uint32_t hops = 1 + ipus / 4; // whole hops: 1 for 1 to 3 IPUs, 2 for 4 to 7
  return std::ceil(target.cycles.sync_ns_per_hop * target.clock_hz / 1e9 * hops * 2);
}

CycleModel at_half_rates(CycleModel model) {
  model.macs_per_cycle = model.half_macs_per_cycle;
  model.vector_flops_per_cycle = model.half_vector_flops_per_cycle;
  model.amp_run_overhead_outputs = model.half_amp_run_overhead_outputs;
  return model;
}

double amp_cycles(const TargetSpec& target, double macs, double outputs, double runs) {
  const double peak = macs / target.cycles.macs_per_cycle;
  if (outputs <= 0) return peak;
  const double workers = target.worker_threads_per_tile;
  const double slowest = std::ceil(outputs / workers) +
                         target.cycles.amp_run_overhead_outputs * std::ceil(std::max(runs, 1.0) / workers);
  return peak * workers * slowest / outputs;
}

double exchange_cycles(const CycleModel& model, double bytes, double shared) {
  return (bytes - shared) / model.exchange_bytes_per_cycle + shared / (2 * model.exchange_bytes_per_cycle);
}

AllReduceCost all_reduce_cost(const TargetSpec& target, double bytes, uint32_t replicas,
                              uint32_t ipus_per_replica) {
  AllReduceCost cost;
  if (replicas <= 1) return cost;
  const uint32_t stages = std::max<uint32_t>(1, ipus_per_replica);
  cost.replicas_per_pod = std::min(replicas, std::max<uint32_t>(1, target.ipus_per_pod / stages));
  cost.pods = (replicas + cost.replicas_per_pod - 1) / cost.replicas_per_pod;
  const double r = cost.replicas_per_pod;
  if (cost.replicas_per_pod > 1)
    cost.ipu_link_cycles = sync_cycles(target, cost.replicas_per_pod * stages) +
                           bytes * 2.0 * (r - 1.0) / r / target.cycles.ipu_link_bytes_per_cycle;
  if (cost.pods > 1) {
    const double g = cost.pods;
    const uint32_t m2000s =
        (cost.replicas_per_pod * stages + target.ipus_per_m2000 - 1) / target.ipus_per_m2000;
    const double gateway_bytes_per_cycle =
        target.cycles.gw_links_per_m2000 * target.cycles.gw_link_bytes_per_cycle;
    cost.gw_link_cycles = 2.0 * (g - 1.0) / g * (bytes / m2000s) / gateway_bytes_per_cycle +
                          2.0 * (g - 1.0) * sync_cycles(target, replicas * stages);
  }
  return cost;
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
    t.cycles.half_macs_per_cycle = 32; // 124.5 TFLOPS fp16.32
    t.cycles.ipu_link_bytes_per_cycle = 0.85 * 128e9 / 8 / t.clock_hz;
    t.cycles.gw_link_bytes_per_cycle =
        0.85 * 100e9 / 8 / t.clock_hz; // the Mk2 system's links, at mk1's clock
    return t;
  }
  return invalid_argument("unknown --arch '" + arch + "' (expected mk2 or mk1)");
}

StatusOr<TargetSpec> target_of(const format::Target& compiled, uint32_t replicas) {
  IPU_ASSIGN_OR_RETURN(TargetSpec target, target_preset(compiled.arch()));
  if (replicas == 0 || compiled.num_ipus() == 0 || compiled.num_ipus() % replicas != 0) {
    return invalid_argument("the executable's " + std::to_string(compiled.num_ipus()) + " IPUs are not " +
                            std::to_string(replicas) + " replicas of equal size");
  }
  target.num_ipus = compiled.num_ipus() / replicas;
  target.tiles_per_ipu = compiled.tiles_per_ipu();
  target.bytes_per_tile = compiled.bytes_per_tile();
  target.worker_threads_per_tile = compiled.worker_threads_per_tile();
  target.clock_hz = compiled.clock_hz();
  return target;
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
