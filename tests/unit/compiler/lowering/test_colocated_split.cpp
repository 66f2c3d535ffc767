// lowering::place_elementwise: an elementwise op's vertices go where its operand lives when that
// costs less than the 1-D split, so the operand is read without the exchange; and an update's
// optimizer state lies beside its weight.
#include <doctest/doctest.h>

#include <vector>

#include "compiler/lowering/colocated_split.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::lowering {
namespace {

// An 8-tile IPU with a [4096] tensor `x` that a first compute set wrote: `pieces` of it, in order,
// piece p on tiles[p].
struct Fixture {
  ir::Graph graph;
  target::TargetSpec target;
  format::Executable exe;
  LowerContext ctx;
  uint32_t x = 0, y = 0;

  explicit Fixture(const std::vector<uint32_t>& tiles) : target(small_target()), ctx(graph, target, exe) {
    ctx.begin_compute_set("produce", 0);
    ctx.begin_op("producer");
    x = ctx.add_temporary("x", {4096});
    y = ctx.add_temporary("y", {4096});
    const int64_t piece = 4096 / static_cast<int64_t>(tiles.size());
    for (size_t p = 0; p < tiles.size(); ++p) {
      VertexSpec v;
      v.codelet = format::Codelet::kUnary;
      v.writes = {flat_region(x, static_cast<int64_t>(p) * piece, static_cast<int64_t>(p + 1) * piece)};
      ctx.emit(tiles[p], std::move(v));
    }
    REQUIRE(ctx.end_compute_set().has_value());
    ctx.begin_compute_set("consume", 0);
    ctx.begin_op("consumer");
  }

  static target::TargetSpec small_target() {
    target::TargetSpec t = *target::target_preset("mk2");
    t.tiles_per_ipu = 8;
    t.num_ipus = 1;
    return t;
  }

  // y = f(x) costing `cycles_per_element`, as Unary lowers it.
  std::vector<PlacedChunk> place(double cycles_per_element) {
    const ElementwiseWork work{4096, 1, cycles_per_element, 4.0, {x}};
    return place_elementwise(ctx, work, [&](int64_t begin, int64_t end) {
      VertexSpec v;
      v.compute_cycles = cycles_per_element * static_cast<double>(end - begin);
      v.reads = {flat_region(x, begin, end)};
      v.writes = {flat_region(y, begin, end)};
      return v;
    });
  }
};

TEST_CASE("lowering::place_elementwise puts a cheap op's vertices where its operand lives") {
  // x lies on tiles 4-7; the 1-D split would take tiles 0-7 and receive all of it.
  Fixture f({4, 5, 6, 7});
  const std::vector<PlacedChunk> chunks = f.place(0.25);
  CHECK(chunks == std::vector<PlacedChunk>{{4, 0, 1024}, {5, 1024, 2048}, {6, 2048, 3072}, {7, 3072, 4096}});
  // It took no tiles from the 1-D cursor: the next op still starts at tile 0.
  CHECK(f.ctx.peek_tiles(1) == std::vector<uint32_t>{0});
  for (const PlacedChunk& c : chunks)
    CHECK(f.ctx.bytes_off_tile(flat_region(f.x, c.begin, c.end), c.tile) == 0);
}

TEST_CASE("lowering::place_elementwise keeps the 1-D split when the operand's tiles are too few") {
  // x on one tile: an op costing 10 cycles an element is faster on all 8 tiles, its input
  // received.
  Fixture f({3});
  const std::vector<PlacedChunk> chunks = f.place(10);
  REQUIRE(chunks.size() == 8);
  for (size_t p = 0; p < chunks.size(); ++p)
    CHECK(chunks[p] == PlacedChunk{static_cast<uint32_t>(p), static_cast<int64_t>(p) * 512,
                                   static_cast<int64_t>(p + 1) * 512});
}

TEST_CASE("lowering::place_elementwise costs no more than the 1-D split and places every item once") {
  // x in 64 pieces of 64 elements, neighbours on tiles 4 apart: no placement reads all of it
  // locally, and what is taken must not cost more than the 1-D split by the planner's measure.
  std::vector<uint32_t> tiles;
  for (uint32_t p = 0; p < 64; ++p)
    tiles.push_back((p / 8 + 4 * (p % 2)) % 8);
  Fixture f(tiles);
  const MakeVertex make = [&](int64_t begin, int64_t end) {
    VertexSpec v;
    v.compute_cycles = 0.25 * static_cast<double>(end - begin);
    v.reads = {flat_region(f.x, begin, end)};
    v.writes = {flat_region(f.y, begin, end)};
    return v;
  };
  const PlacementCost one_d = placement_cycles(f.ctx, split_chunks(f.ctx, 4096, 8, 512), make);
  const std::vector<PlacedChunk> chunks = f.place(0.25);
  const PlacementCost chosen = placement_cycles(f.ctx, chunks, make);
  CHECK(chosen.total() <= one_d.total());
  CHECK(chosen.busiest_tile <= one_d.busiest_tile);
  int64_t next = 0;
  for (const PlacedChunk& c : chunks) {
    CHECK(c.begin == next);
    next = c.end;
  }
  CHECK(next == 4096);
}

TEST_CASE("lowering::merge_chunks puts each run on the tile of its largest chunk") {
  const std::vector<PlacedChunk> chunks{{1, 0, 10}, {2, 10, 40}, {3, 40, 45}};
  CHECK(merge_chunks(chunks, 2) == std::vector<PlacedChunk>{{2, 0, 40}, {3, 40, 45}});
  CHECK(merge_chunks(chunks, 4) == std::vector<PlacedChunk>{{2, 0, 45}});
}

} // namespace
} // namespace ipu::lowering

namespace ipu::testing {
namespace {

// SGD with momentum: the momentum buffer takes its weight's tile mapping, so the update reads
// weight and momentum on the same tiles and receives only the gradient.
TEST_CASE("lowering: optimizer state is mapped like its weight") {
  const char* spec = R"({"type": "sequential", "input": {"shape": [64]},
    "layers": [{"name": "wide", "type": "Dense", "units": 512, "activation": "relu"},
               {"name": "out", "type": "Dense", "units": 10}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9}})";
  auto result = compiler::compile_model(spec, small_target_options(8));
  REQUIRE(result.ok());
  const format::Executable& exe = result->executable;
  int weights = 0;
  for (const format::Tensor& weight : exe.tensors()) {
    if (weight.role() != format::WEIGHT) continue;
    ++weights;
    const format::Tensor* momentum = nullptr;
    for (const format::Tensor& t : exe.tensors()) {
      if (t.role() == format::OPTIMIZER_STATE && t.name().rfind(weight.name() + "/", 0) == 0) momentum = &t;
    }
    INFO(weight.name());
    REQUIRE(momentum != nullptr);
    REQUIRE(momentum->mapping_size() == weight.mapping_size());
    for (int i = 0; i < weight.mapping_size(); ++i) {
      CHECK(momentum->mapping(i).tile() == weight.mapping(i).tile());
      CHECK(momentum->mapping(i).begin() == weight.mapping(i).begin());
      CHECK(momentum->mapping(i).end() == weight.mapping(i).end());
    }
  }
  CHECK(weights == 4);
}

} // namespace
} // namespace ipu::testing
