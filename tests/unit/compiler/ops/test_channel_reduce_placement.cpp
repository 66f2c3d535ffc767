// place_channel_reduce: a per-channel reduction (batch norm's statistics and their gradients)
// reduces each block on the tile that holds it when its input lies in a grid of blocks, as
// poplibs reduces first where the input lives; otherwise it keeps the planned grid.
#include <doctest/doctest.h>

#include <vector>

#include "compiler/ops/channel_reduce_plan.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::ops {
namespace {

// An 8-tile IPU with x [N 2, C 8, S 4096] that a first compute set wrote: large enough that
// receiving a block costs more than the step that combines partials.
struct Fixture {
  ir::Graph graph;
  target::TargetSpec target;
  format::Executable exe;
  lowering::LowerContext ctx;
  ChannelReduceWork work;
  uint32_t x = 0;

  Fixture() : target(small_target()), ctx(graph, target, exe) {
    work.N = 2;
    work.C = 8;
    work.S = 4096;
    work.ops_per_element = 3.0;
    work.values_per_part = 3;
    ctx.begin_compute_set("produce", 0);
    ctx.begin_op("producer");
    x = ctx.add_temporary("x", {work.N, work.C, work.S});
  }

  static target::TargetSpec small_target() {
    target::TargetSpec t = *target::target_preset("mk2");
    t.tiles_per_ipu = 8;
    t.num_ipus = 1;
    return t;
  }

  // Writes `block` of x on `tile`.
  void write(const ChannelBlock& block, uint32_t tile) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kUnary;
    v.writes = reads(block);
    ctx.emit(tile, std::move(v));
  }

  std::vector<lowering::Region> reads(const ChannelBlock& b) const {
    return channel_block_regions(x, work, b.cb, b.ce, b.nb, b.ne, b.sb, b.se);
  }

  PlacedChannelReduce place() {
    REQUIRE(ctx.end_compute_set().has_value());
    ctx.begin_compute_set("reduce", 0);
    ctx.begin_op("statistics");
    return place_channel_reduce(ctx, work, {x}, [&](const ChannelBlock& b) { return reads(b); });
  }
};

TEST_CASE("place_channel_reduce reduces each block of a grid on the tile holding it") {
  Fixture f;
  // Samples one by one, channels in halves, positions in halves: 8 blocks, on tiles 7 down to 0
  // (not the order take_tiles would give).
  const ChannelReducePlan grid{{2, 4}, {2, 1}, {2, 2048}};
  const std::vector<ChannelBlock> written = channel_blocks(grid, f.work);
  REQUIRE(written.size() == 8);
  for (size_t i = 0; i < written.size(); ++i)
    f.write(written[i], static_cast<uint32_t>(7 - i));
  const PlacedChannelReduce placed = f.place();
  CHECK(placed.plan.channels.chunk == 4);
  CHECK(placed.plan.samples.chunk == 1);
  CHECK(placed.plan.positions.chunk == 2048);
  REQUIRE(placed.blocks.size() == 8);
  for (size_t i = 0; i < placed.blocks.size(); ++i) {
    CHECK(placed.tiles[i] == 7 - i);
    for (const lowering::Region& r : f.reads(placed.blocks[i]))
      CHECK(f.ctx.bytes_off_tile(r, placed.tiles[i]) == 0);
  }
  // It took no tiles from the cursor: the next op still starts at tile 0.
  CHECK(f.ctx.peek_tiles(1) == std::vector<uint32_t>{0});
}

TEST_CASE("place_channel_reduce keeps the planned grid when the input lies on one tile") {
  Fixture f;
  f.write({0, 8, 0, 2, 0, 4096, 0}, 5);
  const PlacedChannelReduce placed = f.place();
  // Spread over several tiles, receiving x, beats one vertex reducing all of it on tile 5.
  CHECK(placed.blocks.size() > 1);
  CHECK(placed.distinct_tiles().size() == placed.blocks.size());
  CHECK(placed.tiles.front() == 0);
}

} // namespace
} // namespace ipu::ops
