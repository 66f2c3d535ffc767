#include <doctest/doctest.h>

#include <numeric>

#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

uint64_t split_total(const lowering::TileSplit& s) {
  return s.tensor_bytes + s.exchange_bytes + s.vertex_state_bytes + s.code_bytes;
}

TEST_CASE("memory report: every tile's split adds up to its peak, and the fullest tiles are the plan's") {
  auto options = small_target_options(8);
  compiler::CompileReport report;
  auto result = compiler::compile_model(kWideMlpSpec, options, &report);
  REQUIRE(result.ok());
  const lowering::MemoryReport& m = report.memory;
  CHECK(m.ipus == 1);
  CHECK(m.tiles_per_ipu == 16);
  CHECK(m.bytes_per_tile == options.bytes_per_tile.value());
  CHECK(m.overflowing_tiles == 0);
  REQUIRE(m.peak_per_tile.size() == 16);
  REQUIRE(m.split_per_tile.size() == 16);
  CHECK(m.peak_per_tile == result->memory.peak_per_tile);
  for (size_t t = 0; t < m.peak_per_tile.size(); ++t)
    CHECK(split_total(m.split_per_tile[t]) == m.peak_per_tile[t]);
  CHECK(m.total_bytes == std::accumulate(m.peak_per_tile.begin(), m.peak_per_tile.end(), uint64_t{0}));

  // The first of the IPU's fullest tiles is the plan's fullest, with the same breakdown.
  REQUIRE(m.fullest_per_ipu.size() == lowering::kBrokenDownPerIpu);
  const lowering::TileUsage& first = m.fullest_per_ipu[0];
  CHECK(first.tile == result->memory.fullest.tile);
  CHECK(first.peak_bytes == result->memory.fullest.peak_bytes);
  CHECK(first.largest_tensors == result->memory.fullest.largest_tensors);
  for (size_t i = 0; i < m.fullest_per_ipu.size(); ++i) {
    const lowering::TileUsage& u = m.fullest_per_ipu[i];
    CHECK(u.tensor_bytes + u.exchange_bytes + u.vertex_state_bytes + u.code_bytes == u.peak_bytes);
    CHECK(u.tensor_bytes == m.split_per_tile[u.tile].tensor_bytes);
    CHECK(u.exchange_bytes == m.split_per_tile[u.tile].exchange_bytes);
    if (i > 0) CHECK(u.peak_bytes <= m.fullest_per_ipu[i - 1].peak_bytes);
  }

  // The largest tensor is wide's kernel (64 × 512 floats, as large as its momentum: the kernel
  // comes first in the executable), spread over tiles.
  REQUIRE(!m.largest_tensors.empty());
  CHECK(m.largest_tensors.size() <= lowering::kLargestTensors);
  CHECK(m.largest_tensors[0].name == "wide/kernel");
  CHECK(m.largest_tensors[0].role == "weight");
  CHECK(m.largest_tensors[0].bytes == 64 * 512 * 4);
  CHECK(m.largest_tensors[0].tiles >= 1);
  CHECK(m.largest_tensors[0].largest_part <= m.largest_tensors[0].bytes);
  for (size_t i = 1; i < m.largest_tensors.size(); ++i)
    CHECK(m.largest_tensors[i].bytes <= m.largest_tensors[i - 1].bytes);

  // The report's program is the one compiled, estimates included.
  CHECK(report.executable.compute_sets_size() == result->executable.compute_sets_size());
  CHECK(report.executable.estimates().peak_tile_bytes() == first.peak_bytes);
}

TEST_CASE("memory report: a model that does not fit still gets its report") {
  auto options = small_target_options(8);
  options.tiles_per_ipu = 2;
  options.bytes_per_tile = 16 * 1024;
  compiler::CompileReport report;
  auto result = compiler::compile_model(kWideMlpSpec, options, &report);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kResourceExhausted);
  const lowering::MemoryReport& m = report.memory;
  REQUIRE(m.peak_per_tile.size() == 2);
  uint32_t over = 0;
  for (uint64_t bytes : m.peak_per_tile)
    over += bytes > 16 * 1024 ? 1 : 0;
  CHECK(m.overflowing_tiles == over);
  CHECK(m.overflowing_tiles > 0);
  REQUIRE(!m.fullest_per_ipu.empty());
  // The error's first tile is the report's fullest.
  const std::string first_line = "tile " + std::to_string(m.fullest_per_ipu[0].tile) + " needs ";
  CHECK(result.status().message().find(first_line) != std::string::npos);
  CHECK(report.executable.programs_size() > 0);
  CHECK(report.executable.mode() == "train"); // the driver's metadata, set after lowering
}

TEST_CASE("memory report: without a report to fill, compiling is unchanged") {
  auto options = small_target_options(8);
  compiler::CompileReport report;
  auto with = compiler::compile_model(kWideMlpSpec, options, &report);
  auto without = compiler::compile_model(kWideMlpSpec, options);
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  CHECK(with->executable.SerializeAsString() == without->executable.SerializeAsString());
}

} // namespace
} // namespace ipu::testing
