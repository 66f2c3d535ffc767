#include <doctest/doctest.h>

#include "compiler/lowering/tile_planner.h"

namespace ipu::lowering {
namespace {

target::TargetSpec mk2() {
  return *target::target_preset("mk2");
}

TEST_CASE("tile planner: tiny elementwise ops stay on few tiles") {
  // A relu over a [32,256] activation: 8192 elements at half a cycle each.
  Split s = plan_split(8192, 0.5, 4.0, 8.0, mk2(), 1472);
  CHECK(s.parts <= 64);
  CHECK(s.parts * s.chunk >= 8192);
  // Ten elements never leave one tile.
  CHECK(plan_split(10, 0.5, 4.0, 8.0, mk2(), 1472).parts == 1);
}

TEST_CASE("tile planner: large matmuls spread, bounded by the tiles") {
  const MatMulPlan plan = plan_matmul(32, 256, 784, mk2(), 1472);
  const BlockGrid& g = plan.grid;
  const int64_t vertices = g.rows.parts * g.cols.parts * plan.k.parts;
  CHECK(vertices > 100);
  CHECK(vertices <= 1472);
  CHECK(g.rows.parts * g.rows.chunk >= 32);
  CHECK(g.cols.parts * g.cols.chunk >= 256);
  // A 1x1 product is one vertex.
  BlockGrid tiny = plan_matmul(1, 1, 4, mk2(), 1472).grid;
  CHECK(tiny.rows.parts * tiny.cols.parts == 1);
}

TEST_CASE("tile planner: splits respect tile memory") {
  target::TargetSpec small = mk2();
  small.bytes_per_tile = 64 * 1024;
  // 1M elements of 8 bytes each cannot sit on one 64 KiB tile: at most 16 KiB of work per vertex.
  Split s = plan_split(1 << 20, 0.5, 0.0, 8.0, small, 1472);
  CHECK(static_cast<double>(s.chunk) * 8.0 <= 0.5 * 64 * 1024);
  BlockGrid g = plan_matmul(256, 256, 256, small, 1472).grid;
  const double in_bytes =
      4.0 * (static_cast<double>(g.rows.chunk) * 256 + 256.0 * static_cast<double>(g.cols.chunk));
  CHECK(in_bytes <= 0.5 * 64 * 1024);
}

TEST_CASE("tile planner: when no split fits, the smallest working set is chosen") {
  target::TargetSpec small = mk2();
  small.bytes_per_tile = 64 * 1024;
  // K = 4096: even one row and one column of blocks need more than half a tile on 1472 tiles.
  BlockGrid g = plan_matmul(256, 256, 4096, small, 1472).grid;
  CHECK(g.rows.parts * g.cols.parts > 1);
  CHECK(g.rows.parts * g.cols.parts <= 1472);
}

} // namespace
} // namespace ipu::lowering
