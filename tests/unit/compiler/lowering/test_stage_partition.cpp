#include <doctest/doctest.h>

#include "compiler/lowering/stage_partition.h"

namespace ipu::lowering {
namespace {

// What a unit holds on each of `tiles` tiles: nothing.
UnitMemory empty_memory(size_t tiles) {
  UnitMemory m;
  m.resident.assign(tiles, 0);
  m.carried.assign(tiles, 0);
  m.held_for_update.assign(tiles, 0);
  m.transient.assign(tiles, 0);
  m.codelets.resize(tiles);
  return m;
}

// A chain of units named a, b, c, ... with these cycles and resident bytes on a one-tile IPU,
// free cuts and room enough.
StagePartitionProblem chain(const std::vector<double>& cycles, const std::vector<uint64_t>& bytes = {}) {
  StagePartitionProblem p;
  for (size_t i = 0; i < cycles.size(); ++i) {
    UnitMemory m = empty_memory(1);
    m.resident[0] = bytes.empty() ? 0 : bytes[i];
    p.units.push_back({std::string(1, static_cast<char>('a' + i)), cycles[i], 0, std::move(m)});
  }
  p.forward_cut_cycles.assign(cycles.size() - 1, 0);
  p.backward_cut_cycles = p.forward_cut_cycles;
  p.bytes_per_tile = 1000;
  return p;
}

StagePartition split(StagePartitionProblem p, int stages) {
  p.stages = stages;
  StatusOr<StagePartition> out = partition_stages(p);
  REQUIRE(out.ok());
  return *out;
}

TEST_CASE("lowering::partition_stages minimises the slowest stage") {
  SUBCASE("equal units split evenly") {
    const StagePartition s = split(chain({1, 1, 1, 1}), 2);
    CHECK(s.first_unit == std::vector<int>{0, 2});
    CHECK(s.stage_cycles == std::vector<double>{2, 2});
  }
  SUBCASE("one heavy unit takes a stage to itself") {
    const StagePartition s = split(chain({4, 1, 1, 1, 1}), 2);
    CHECK(s.first_unit == std::vector<int>{0, 1});
    CHECK(s.stage_cycles == std::vector<double>{4, 4});
  }
  SUBCASE("four stages of a long chain, not equal unit counts") {
    // 20 cycles in four stages of exactly 5: the only split with no stage slower than 5.
    const StagePartition s = split(chain({5, 1, 1, 1, 1, 1, 2, 3, 4, 1}), 4);
    CHECK(s.first_unit == std::vector<int>{0, 1, 6, 8});
    CHECK(s.stage_cycles == std::vector<double>{5, 5, 5, 5});
  }
  SUBCASE("one stage holds everything") {
    const StagePartition s = split(chain({1, 2, 3}), 1);
    CHECK(s.first_unit == std::vector<int>{0});
    CHECK(s.stage_cycles == std::vector<double>{6});
  }
}

TEST_CASE("lowering::partition_stages charges a cut's transfers to the stages sending them") {
  StagePartitionProblem p = chain({2, 2, 2, 2});
  SUBCASE("a costly cut in the middle moves the split") {
    p.forward_cut_cycles = p.backward_cut_cycles = {0, 5, 0};
    // Cutting in the middle costs 4 + 5 on each side; after a or after c, 6 on the larger side.
    // Both reach 6 and move nothing: the earlier cut wins.
    const StagePartition s = split(p, 2);
    CHECK(s.first_unit == std::vector<int>{0, 1});
    CHECK(s.stage_cycles == std::vector<double>{2, 6});
  }
  SUBCASE("among equally fast splits, the one moving less data") {
    p.forward_cut_cycles = p.backward_cut_cycles = {1, 0, 1};
    // {a}{bcd}: 3 and 7; {ab}{cd}: 4 and 4; {abc}{d}: 7 and 3.
    CHECK(split(p, 2).first_unit == std::vector<int>{0, 2});
    p.units[3].cycles = 3;
    p.forward_cut_cycles = p.backward_cut_cycles = {0, 1, 0};
    // {ab}{cd}: 5 and 6; {abc}{d}: 6 and 3, the same bottleneck and no data moved.
    const StagePartition s = split(p, 2);
    CHECK(s.first_unit == std::vector<int>{0, 3});
    CHECK(s.stage_cycles == std::vector<double>{6, 3});
  }
  SUBCASE("inference sends forward only: the stage before a cut pays for it") {
    p.forward_cut_cycles = {3, 3, 3};
    p.backward_cut_cycles = {0, 0, 0};
    // {a}{bcd}: 5 and 6; {ab}{cd}: 7 and 4; {abc}{d}: 9 and 2.
    const StagePartition s = split(p, 2);
    CHECK(s.first_unit == std::vector<int>{0, 1});
    CHECK(s.stage_cycles == std::vector<double>{5, 6});
  }
}

TEST_CASE("lowering::partition_stages keeps each stage within one IPU's tile memory") {
  SUBCASE("memory pushes the cut off the balance") {
    StagePartitionProblem p = chain({1, 1, 1, 1}, {30, 10, 5, 5});
    p.bytes_per_tile = 35;
    const StagePartition s = split(p, 2);
    CHECK(s.first_unit == std::vector<int>{0, 1});
    CHECK(s.stage_cycles == std::vector<double>{1, 3});
    CHECK(s.stage_tile_bytes == std::vector<uint64_t>{30, 20});
  }
  SUBCASE("no split fits: the error names the fullest stage of the closest split") {
    StagePartitionProblem p = chain({1, 1, 1, 1}, {10, 10, 10, 10});
    p.bytes_per_tile = 15;
    p.stages = 3;
    const StatusOr<StagePartition> out = partition_stages(p);
    REQUIRE(!out.ok());
    CHECK(out.status().code() == StatusCode::kResourceExhausted);
    CHECK(out.status().message() ==
          "no split into 3 pipeline stages fits one IPU each: in the best, stage 2 (layers 'c' to 'd') needs "
          "about 20 bytes on its fullest tile, more than 15 (its layers' resident data and activations kept "
          "for the backward pass added up per tile, the largest of their short-lived peaks, and its stash "
          "slots); give more stages or a smaller --batch-size");
  }
  SUBCASE("a unit too big for an IPU is named alone") {
    StagePartitionProblem p = chain({1, 1}, {5, 2000});
    p.unit_kind = "node";
    p.stages = 2;
    const StatusOr<StagePartition> out = partition_stages(p);
    REQUIRE(!out.ok());
    CHECK(out.status().message().find("in the best, node 'b' alone needs about 2,000 bytes") !=
          std::string::npos);
  }
}

TEST_CASE("lowering::partition_stages bounds a stage's memory tile by tile") {
  // Two units on a two-tile IPU; a stage of both must fit 100 bytes a tile.
  StagePartitionProblem p = chain({1, 1});
  p.units[0].memory = p.units[1].memory = empty_memory(2);
  p.bytes_per_tile = 100;
  p.code_bytes_per_codelet = 10;
  UnitMemory &a = p.units[0].memory, &b = p.units[1].memory;
  auto one_stage_bytes = [&]() -> uint64_t {
    const StatusOr<StagePartition> out = partition_stages(p);
    if (!out.ok()) return 0;
    return out->stage_tile_bytes.at(0);
  };
  p.stages = 1;
  SUBCASE("short-lived peaks do not add up: the units run one after the other") {
    a.transient = {70, 0};
    b.transient = {60, 0};
    CHECK(one_stage_bytes() == 70); // the sum of fullest tiles would be 130
  }
  SUBCASE("what lives on adds up on its own tile, not on another's") {
    a.resident = {60, 0};
    b.resident = {0, 60};
    CHECK(one_stage_bytes() == 60);
    b.resident = {50, 0};
    CHECK(one_stage_bytes() == 0); // 110 on tile 0: no single stage fits
  }
  SUBCASE("activations kept for the backward pass add up, and the largest peak comes on top") {
    a.carried = {30, 0};
    b.carried = {30, 0};
    a.transient = {20, 0};
    b.transient = {35, 0};
    CHECK(one_stage_bytes() == 95);
  }
  SUBCASE("weight gradients add up until the update, or peak once with accumulators") {
    a.held_for_update = b.held_for_update = {40, 0};
    a.transient = {15, 0};
    CHECK(one_stage_bytes() == 95);
    p.accumulates = true;
    a.accumulator_tile_bytes = b.accumulator_tile_bytes = 5;
    CHECK(one_stage_bytes() == 65); // max(40 + 15, 40) and two accumulators of 5
  }
  SUBCASE("a codelet's code is held once per tile") {
    a.codelets = b.codelets = {{3}, {}};
    CHECK(one_stage_bytes() == 10);
    b.codelets = {{3, 70}, {}};
    CHECK(one_stage_bytes() == 20);
  }
  SUBCASE("an activation from an earlier unit counts only when that unit is in an earlier stage") {
    a.carried = {40, 0};
    a.stash_tile_bytes = 10;
    b.arrivals = {{0, 10, {{0, 40}}}}; // b keeps a's activation: a copy of it in the measuring compile
    p.stash_depth = {2};
    CHECK(one_stage_bytes() == 40 + 2 * 10); // one stage: a's own tensor serves b
    p.stages = 2;
    p.stash_depth = {2, 2};
    const StatusOr<StagePartition> out = partition_stages(p);
    REQUIRE(out.ok());
    CHECK(out->stage_tile_bytes == std::vector<uint64_t>{40 + 2 * 10, 40 + 2 * 10});
  }
  SUBCASE("a stage that recomputes stashes only its inputs and what arrives from earlier stages") {
    a.stash_tile_bytes = 10; // of which the model's input
    a.input_stash_tile_bytes = 4;
    b.stash_tile_bytes = 6;
    b.arrivals = {{0, 3, {{0, 12}}}};
    p.stages = 2;
    p.stash_depth = {5, 1};
    auto stage_bytes = [&]() {
      const StatusOr<StagePartition> out = partition_stages(p);
      REQUIRE(out.ok());
      return out->stage_tile_bytes;
    };
    CHECK(stage_bytes() == std::vector<uint64_t>{5 * 10, 12 + 1 * (6 + 3)});
    p.recompute = true;
    CHECK(stage_bytes() == std::vector<uint64_t>{5 * 4, 12 + 1 * 3});
  }
  SUBCASE("stash slots count once per micro-batch in flight, receive buffers once per message") {
    a.stash_tile_bytes = 10;
    b.stash_tile_bytes = 5;
    p.stages = 2;
    p.stash_depth = {4, 1};
    p.forward_depth = {2};
    p.backward_depth = {3};
    p.forward_cut_tile_bytes = {7};
    p.backward_cut_tile_bytes = {1};
    const StatusOr<StagePartition> out = partition_stages(p);
    REQUIRE(out.ok());
    CHECK(out->stage_tile_bytes == std::vector<uint64_t>{4 * 10 + 3 * 1, 1 * 5 + 2 * 7});
  }
}

TEST_CASE("lowering::partition_stages paces a grouped pipeline by its slowest forward and backward passes") {
  // (forward, backward) cycles: a (6, 0), b (0, 6), c (3, 3). Cutting after a or after b, the
  // slowest stage takes 12 cycles either way, and the earlier cut wins the tie. Grouped, a step is
  // a phase of forward passes and then one of backward passes: after a, 6 + 9 cycles; after b, 6 + 6.
  StagePartitionProblem p = chain({6, 6, 6});
  p.units[0].forward_cycles = 6;
  p.units[2].forward_cycles = 3;
  const StagePartition slowest_stage = split(p, 2);
  CHECK(slowest_stage.first_unit == std::vector<int>{0, 1});
  CHECK(slowest_stage.stage_cycles == std::vector<double>{6, 12});
  p.phased = true;
  const StagePartition phases = split(p, 2);
  CHECK(phases.first_unit == std::vector<int>{0, 2});
  CHECK(phases.stage_cycles == std::vector<double>{12, 6});
  // A stage that recomputes runs its forward pass again before its backward pass.
  p.recompute = true;
  CHECK(split(p, 1).stage_cycles == std::vector<double>{18 + 9});
}

TEST_CASE("lowering::partition_stages takes the next best split without a refused stage") {
  StagePartitionProblem p = chain({1, 1, 1, 1});
  p.stages = 2;
  CHECK(split(p, 2).first_unit == std::vector<int>{0, 2});
  // The memory plan found units [0, 2) too big together: no stage may hold both.
  p.refused = {{0, 2}};
  const StagePartition s = split(p, 2);
  CHECK(s.first_unit == std::vector<int>{0, 1});
  CHECK(s.stage_cycles == std::vector<double>{1, 3});
  p.refused.emplace_back(1, 4);
  const StatusOr<StagePartition> none = partition_stages(p);
  REQUIRE(!none.ok());
  CHECK(none.status().code() == StatusCode::kResourceExhausted);
  CHECK(none.status().message().find("memory plan did not refuse") != std::string::npos);
}

TEST_CASE("lowering::partition_stages refuses more stages than units") {
  StagePartitionProblem p = chain({1, 1});
  p.stages = 3;
  const StatusOr<StagePartition> out = partition_stages(p);
  REQUIRE(!out.ok());
  CHECK(out.status().code() == StatusCode::kBadOption);
  CHECK(out.status().message() == "--pipeline-stages 3 needs at least as many layers, the model has 2");
}

TEST_CASE("lowering::stage_imbalance is the slowest stage over the mean") {
  CHECK(stage_imbalance({1, 3}) == doctest::Approx(1.5));
  CHECK(stage_imbalance({2, 2, 2}) == doctest::Approx(1.0));
  CHECK(stage_imbalance({}) == 1.0);
  CHECK(stage_imbalance({0, 0}) == 1.0);
}

} // namespace
} // namespace ipu::lowering
