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
