// LowerContext::take_tiles: ops sharing a compute set spread their vertices over the tiles where
// the set's earlier ops receive least, so their exchange receive buffers do not stack.
#include <doctest/doctest.h>

#include <vector>

#include "compiler/lowering/lower_context.h"

namespace ipu::lowering {
namespace {

// A vertex that receives `elements` floats of `tensor` (which no tile holds yet).
VertexSpec receiving(uint32_t tensor, int64_t elements) {
  VertexSpec v;
  v.codelet = format::Codelet::kActivation;
  if (elements > 0) v.reads = {flat_region(tensor, 0, elements)};
  return v;
}

TEST_CASE("lowering::LowerContext::take_tiles avoids the tiles the compute set's earlier ops receive on") {
  ir::Graph graph;
  target::TargetSpec target = *target::target_preset("mk2");
  target.tiles_per_ipu = 8;
  target.num_ipus = 1;
  format::Executable exe;
  LowerContext ctx(graph, target, exe);
  ctx.begin_compute_set("set", 0);
  const uint32_t data = ctx.add_temporary("data", {16384});

  // An op alone so far starts at tile 0.
  ctx.begin_op("a");
  const std::vector<uint32_t> a = ctx.take_tiles(6);
  CHECK(a == std::vector<uint32_t>{0, 1, 2, 3, 4, 5});
  // Its vertices on tiles 0 and 1 receive 64 KB each (more than a grain, 1/16 of the 0.6 of a
  // tile an op's working set may use), the others 1 KB.
  for (uint32_t tile : a)
    ctx.emit(tile, receiving(data, tile < 2 ? 16384 : 256));

  // Round robin would give the next op tiles 6, 7, 0 and 1, stacking its receive buffers on a's
  // largest; it takes the lightest window instead, the nearest to where a ended.
  ctx.begin_op("b");
  CHECK(ctx.take_tiles(4) == std::vector<uint32_t>{2, 3, 4, 5});

  // A new compute set starts at tile 0 again; differences within a grain leave round robin.
  REQUIRE(ctx.end_compute_set().has_value());
  ctx.begin_compute_set("next", 0);
  ctx.begin_op("c");
  const std::vector<uint32_t> c = ctx.take_tiles(6);
  CHECK(c == std::vector<uint32_t>{0, 1, 2, 3, 4, 5});
  for (uint32_t tile : c)
    ctx.emit(tile, receiving(data, tile < 2 ? 1024 : 0));
  ctx.begin_op("d");
  CHECK(ctx.take_tiles(4) == std::vector<uint32_t>{6, 7, 0, 1});
}

} // namespace
} // namespace ipu::lowering
