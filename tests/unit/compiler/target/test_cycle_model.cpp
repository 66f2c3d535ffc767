// The cycle model's formulas on hand-computed cases, and its parameters against the published
// figures they were derived from (docs/cycle_model.md).
#include <doctest/doctest.h>

#include "compiler/ir/graph.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/target/target.h"

namespace ipu::testing {
namespace {

target::TargetSpec preset(const std::string& arch) {
  auto t = target::target_preset(arch);
  REQUIRE(t.ok());
  return *t;
}

TEST_CASE("cycle model: fp16 rates are the AMP unit's fp16.32 peak and twice the fp32 vector rate") {
  const target::TargetSpec mk2 = preset("mk2"), mk1 = preset("mk1");
  // GC200: 250 TFLOPS fp16.32 (AMP); GC2: 124.5 TFLOPS.
  CHECK(2 * mk2.cycles.half_macs_per_cycle * mk2.tiles_per_ipu * mk2.clock_hz ==
        doctest::Approx(250e12).epsilon(0.01));
  CHECK(2 * mk1.cycles.half_macs_per_cycle * mk1.tiles_per_ipu * mk1.clock_hz ==
        doctest::Approx(124.5e12).epsilon(0.01));
  const target::CycleModel half = target::at_half_rates(mk2.cycles);
  CHECK(half.macs_per_cycle == 64);
  CHECK(half.vector_flops_per_cycle == doctest::Approx(4.0 / 3.0));
  CHECK(half.functions.exp == mk2.cycles.functions.exp);
  // A 64 × 64 × 64 block on one tile: 262,144 MACs, 16,384 cycles in fp32, 4,096 in fp16; 3,000
  // elementwise results: 4,500 cycles in fp32 (f32v2 every 3 cycles), 2,250 in fp16 (f16v4).
  CHECK(64.0 * 64 * 64 / mk2.cycles.macs_per_cycle == 16384);
  CHECK(64.0 * 64 * 64 / half.macs_per_cycle == 4096);
  CHECK(3000 / mk2.cycles.vector_flops_per_cycle == doctest::Approx(4500));
  CHECK(3000 / half.vector_flops_per_cycle == doctest::Approx(2250));
  // Partial sums stay fp32 under AMP: adding them runs at the fp32 rate in either model.
  CHECK(mk2.cycles.partial_sum_flops_per_cycle == mk2.cycles.vector_flops_per_cycle);
  CHECK(half.partial_sum_flops_per_cycle == mk2.cycles.vector_flops_per_cycle);
}

// poplibs' ConvPartialnx1 worker (getConvPartialnx1WorkerCycles): 3 + 34 + 4 (n − 3) worker
// cycles for a run of n fp16 outputs, 3 + 45 + 8 (n − 3) for fp32; six workers, one run each,
// take six times the slowest worker's cycles. An output position is 16 × 16 channels in fp16
// (256 MACs, 4 tile cycles at the peak of 64) and 16 × 8 in fp32 (128 MACs, 8 cycles at 16).
TEST_CASE("cycle model: an AMP vertex's short runs cost what poplibs' worker estimate says") {
  target::TargetSpec mk2 = preset("mk2");
  target::TargetSpec half = mk2;
  half.cycles = target::at_half_rates(mk2.cycles);
  const auto nx1_half = [](double n) { return 6 * (3 + 34 + 4 * (n - 3)); };
  const auto nx1_float = [](double n) { return 6 * (3 + 45 + 8 * (n - 3)); };
  // ResNet-50's layer4 rows of 7 run at 53 % of the peak, layer1's rows of 56 at 90 %.
  CHECK(target::amp_cycles(half, 6 * 7 * 256, 6 * 7, 6) == doctest::Approx(nx1_half(7)));
  CHECK(target::amp_cycles(half, 6 * 56 * 256, 6 * 56, 6) == doctest::Approx(nx1_half(56)));
  CHECK(6 * 7 * 256 / half.cycles.macs_per_cycle / nx1_half(7) == doctest::Approx(0.53).epsilon(0.01));
  CHECK(target::amp_cycles(mk2, 6 * 14 * 128, 6 * 14, 6) == doctest::Approx(nx1_float(14)));
  // Twelve runs on six workers: each worker takes two, one after the other (the worker's start,
  // 17 cycles, is the vertex overhead's).
  CHECK(target::amp_cycles(mk2, 12 * 14 * 128, 12 * 14, 12) == doctest::Approx(2 * nx1_float(14)));
  // Without outputs there is nothing to run below the peak.
  CHECK(target::amp_cycles(mk2, 0, 0, 0) == 0);
}

TEST_CASE("cycle model: presets give the published peaks") {
  const target::TargetSpec mk2 = preset("mk2"), mk1 = preset("mk1");
  // GC200: 62.5 TFLOPS fp32 (AMP), 8 TB/s IPU-Exchange; GC2: 31.1 TFLOPS fp32.
  const double mk2_flops = 2 * mk2.cycles.macs_per_cycle * mk2.tiles_per_ipu * mk2.clock_hz;
  CHECK(mk2_flops == doctest::Approx(62.5e12).epsilon(0.01));
  CHECK(2 * mk1.cycles.macs_per_cycle * mk1.tiles_per_ipu * mk1.clock_hz ==
        doctest::Approx(31.1e12).epsilon(0.01));
  CHECK(mk2.cycles.exchange_bytes_per_cycle * mk2.tiles_per_ipu * mk2.clock_hz ==
        doctest::Approx(8e12).epsilon(0.03));
  // One IPU-Link direction: 0.85 × 128 Gbit/s.
  CHECK(mk2.cycles.ipu_link_bytes_per_cycle * mk2.clock_hz == doctest::Approx(0.85 * 16e9));
  CHECK(mk1.cycles.ipu_link_bytes_per_cycle * mk1.clock_hz == doctest::Approx(0.85 * 16e9));
  // A supervisor's 11 cycles and six workers' 17-cycle prologue.
  CHECK(mk2.cycles.vertex_overhead_cycles == 113);
}

TEST_CASE("cycle model: a sync takes ceil(15 ns × clock × (1 + N/4) × 2)") {
  const target::TargetSpec mk2 = preset("mk2"), mk1 = preset("mk1");
  CHECK(target::sync_cycles(mk2, 1) == 40); // 39.9
  CHECK(target::sync_cycles(mk2, 3) == 40);
  CHECK(target::sync_cycles(mk2, 4) == 80);  // 79.8
  CHECK(target::sync_cycles(mk2, 8) == 120); // 119.7
  CHECK(target::sync_cycles(mk2, 16) == 200);
  CHECK(target::sync_cycles(mk1, 1) == 48);
}

// mk2: an IPU-Link direction carries 13.6e9 / 1.33e9 = 10.2256 bytes per cycle, an M2000's two
// GW-Links 2 × 0.85 × 12.5e9 / 1.33e9 = 15.9774; 1 MB is reduced in each case below.
TEST_CASE("cycle model: the gradient all-reduce rings over IPU-Links within a POD64, over GW-Links beyond") {
  const target::TargetSpec mk2 = preset("mk2");
  // Two 100 GbE GW-Links per M2000, at 85 %.
  CHECK(mk2.cycles.gw_links_per_m2000 * mk2.cycles.gw_link_bytes_per_cycle * mk2.clock_hz ==
        doctest::Approx(2 * 0.85 * 12.5e9));

  const target::AllReduceCost one = target::all_reduce_cost(mk2, 1e6, 1, 1);
  CHECK(one.total() == 0);

  // 4 replicas in one M2000: sync(4) 80 + 2·3/4 × 1e6 / 10.2256.
  const target::AllReduceCost m2000 = target::all_reduce_cost(mk2, 1e6, 4, 1);
  CHECK(m2000.pods == 1);
  CHECK(m2000.replicas_per_pod == 4);
  CHECK(m2000.ipu_link_cycles == doctest::Approx(80 + 146691.18));
  CHECK(m2000.gw_link_cycles == 0);

  // A POD256 of one-IPU replicas: 64 per POD64 over IPU-Links, sync(64) 679 (17 hops) +
  // 2·63/64 × 1e6 / 10.2256; across 4 PODs each POD's 16 M2000s send 2·3/4 × 1e6/16 bytes through
  // their gateways, 93,750 / 15.9774, and the ring's 6 steps each sync the 256 IPUs (65 hops: 2,594).
  const target::AllReduceCost pod256 = target::all_reduce_cost(mk2, 1e6, 256, 1);
  CHECK(pod256.replicas_per_pod == 64);
  CHECK(pod256.pods == 4);
  CHECK(pod256.ipu_link_cycles == doctest::Approx(679 + 192532.17));
  CHECK(pod256.gw_link_cycles == doctest::Approx(5867.65 + 6 * 2594));

  // Two-stage replicas: 32 per POD64, 2 PODs; sync(128) is 33 hops, 1,317 cycles.
  const target::AllReduceCost pipelined = target::all_reduce_cost(mk2, 1e6, 64, 2);
  CHECK(pipelined.replicas_per_pod == 32);
  CHECK(pipelined.pods == 2);
  CHECK(pipelined.ipu_link_cycles == doctest::Approx(679 + 189476.10));
  CHECK(pipelined.gw_link_cycles == doctest::Approx(3911.76 + 2 * 1317));

  // A 33-IPU replica leaves no room for a second in its POD: only the GW-Links reduce, from its 9
  // M2000s (sync(66): 17 hops, 679 cycles).
  const target::AllReduceCost wide = target::all_reduce_cost(mk2, 1e6, 2, 33);
  CHECK(wide.replicas_per_pod == 1);
  CHECK(wide.pods == 2);
  CHECK(wide.ipu_link_cycles == 0);
  CHECK(wide.gw_link_cycles == doctest::Approx(6954.25 + 2 * 679));
}

TEST_CASE("cycle model: data a tile's bus partner receives too arrives at twice the rate") {
  const target::CycleModel m = preset("mk2").cycles;
  CHECK(target::exchange_cycles(m, 4096, 0) == 1024);
  CHECK(target::exchange_cycles(m, 4096, 4096) == 512);
  CHECK(target::exchange_cycles(m, 4096, 1024) == 768 + 128);
}

// One compute set costs sync + the slowest tile's exchange + the slowest tile's compute; two
// tiles on one exchange bus that read the same region receive it at twice the rate.
TEST_CASE("cycle model: a compute set's estimate, with and without a shared exchange bus") {
  target::TargetSpec t = preset("mk2");
  t.tiles_per_ipu = 4;
  ir::Graph graph;
  const int w = graph.add_value("w", ir::TensorType{ir::DType::kFloat32, {4096}}, ir::Role::kWeight);
  const int y = graph.add_value("y", ir::TensorType{ir::DType::kFloat32, {4}}, ir::Role::kActivation);
  auto estimate = [&](uint32_t first_tile, uint32_t second_tile, double compute) {
    format::Executable exe;
    exe.mutable_target()->set_num_ipus(1);
    lowering::LowerContext ctx(graph, t, exe);
    ctx.map_linearly(w); // 1,024 elements on each tile
    ctx.begin_compute_set("cs", 0);
    ctx.begin_op("reader");
    for (uint32_t tile : {first_tile, second_tile}) {
      lowering::VertexSpec v;
      v.codelet = format::Codelet::kAccumulate;
      v.operands = {ctx.tensor(w), ctx.tensor(y)};
      v.compute_cycles = compute;
      v.reads = {lowering::flat_region(ctx.tensor(w), 0, 4096)};
      v.writes = {lowering::flat_region(ctx.tensor(y), tile, tile + 1)};
      ctx.emit(tile, std::move(v));
    }
    const auto index = ctx.end_compute_set();
    REQUIRE(index.has_value());
    return exe.compute_sets(static_cast<int>(*index)).cycles();
  };
  // Each tile receives the 3,072 elements held elsewhere: 12,288 bytes at 4 per cycle.
  CHECK(estimate(0, 2, 0) == 40 + 3072 + 113);
  CHECK(estimate(0, 2, 500) == 40 + 3072 + 113 + 500);
  // Tiles 0 and 1 share a bus and both fetch that region: twice the rate.
  CHECK(estimate(0, 1, 0) == 40 + 1536 + 113);
}

} // namespace
} // namespace ipu::testing
