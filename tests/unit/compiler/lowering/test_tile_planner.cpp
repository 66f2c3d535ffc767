#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "compiler/lowering/tile_planner.h"

namespace ipu::lowering {
namespace {

target::TargetSpec mk2() {
  return *target::target_preset("mk2");
}

TEST_CASE("tile planner: the part counts tried, and even splits") {
  using Counts = std::vector<int64_t>;
  CHECK(candidate_part_counts(1, 1472) == Counts{1});
  CHECK(candidate_part_counts(8, 1472) == Counts{1, 2, 4, 8});
  CHECK(candidate_part_counts(12, 1472) == Counts{1, 2, 4, 8, 12});
  // More items than parts allowed: every part allowed is the last candidate.
  CHECK(candidate_part_counts(5000, 1472) == Counts{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1472});
  CHECK(candidate_part_counts(5000, 1024).back() == 1024);
  // 10 items in 4 parts: chunks of 3, the last of 1. In 6: chunks of 2 fill only 5 parts.
  CHECK(even_split(10, 4).parts == 4);
  CHECK(even_split(10, 4).chunk == 3);
  CHECK(even_split(10, 6).parts == 5);
  CHECK(even_split(10, 6).chunk == 2);
  CHECK(even_split(10, 1).chunk == 10);
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

TEST_CASE("tile planner: a split that needs more than a power of two of tiles takes them all") {
  // VGG-11's first classifier layer at batch 1: [1, 25088] x [25088, 4096], unsplit over K. Each
  // column of the weight is 100,352 bytes; 1,024 columns of blocks hold four each (401,408 bytes,
  // more than a 0.6 share of a tile); 1,472 tiles allowed hold three (301,056).
  const MatMulPlan plan = plan_matmul(1, 4096, 25088, mk2(), 1472, /*split_k=*/false);
  CHECK(plan.grid.cols.chunk == 3);
  CHECK(plan.grid.cols.parts == 1366);
  // Within the item count, the item count itself stays the last candidate.
  CHECK(plan_split(1000, 1e5, 4.0, 8.0, mk2(), 1472).parts == 1000);
}

TEST_CASE("tile planner: a reduce of partial sums costs its sync and its own split") {
  const target::TargetSpec t = mk2();
  const Split reduce = plan_reduce_of_shares(4, 100000, t, 1472);
  CHECK(reduce.parts > 1);
  CHECK(reduce.parts * reduce.chunk >= 100000);
  const double per_element = 4.0 / t.cycles.partial_sum_flops_per_cycle;
  CHECK(reduce_of_shares_cycles(4, 100000, t, 1472) ==
        doctest::Approx(target::sync_cycles(t, 1) + split_cycles(reduce, per_element, 16.0, t)));
  // One element: one vertex, and still a sync and a launch more than no reduce at all.
  CHECK(plan_reduce_of_shares(4, 1, t, 1472).parts == 1);
  CHECK(reduce_of_shares_cycles(4, 1, t, 1472) > target::sync_cycles(t, 1) + t.cycles.vertex_overhead_cycles);
}

} // namespace
} // namespace ipu::lowering
