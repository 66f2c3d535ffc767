// --available-memory-proportion (poplibs' availableMemoryProportion): the share of a tile a
// MatMul's or a convolution's plan may give one vertex's working set.
#include <doctest/doctest.h>

#include <algorithm>

#include "compiler/driver/compile.h"
#include "compiler/lowering/tile_planner.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

// The bytes a vertex of `plan` holds, as plan_matmul counts them: its blocks of A and B, its
// output or partial block, and with K split a reduce vertex's partials and output.
double held_bytes(const lowering::MatMulPlan& plan) {
  const double r = static_cast<double>(plan.grid.rows.chunk), c = static_cast<double>(plan.grid.cols.chunk),
               k = static_cast<double>(plan.k.chunk), shares = static_cast<double>(plan.k.parts);
  double held = 4.0 * (r * k + k * c) + 4.0 * r * c;
  if (plan.k.parts > 1)
    held = std::max(held, 4.0 * r * c + 4.0 * static_cast<double>(plan.reduce.chunk) * (shares + 1));
  return held;
}

target::TargetSpec mk2_with(double proportion) {
  target::TargetSpec t = *target::target_preset("mk2");
  t.available_memory_proportion = proportion;
  return t;
}

// The estimated cycles of C = A · B (A [n, n], B [n, n]) compiled for inference at batch 1 on
// `tiles` tiles with that share: every compute set's.
double matmul_cycles(int64_t n, uint32_t tiles, double proportion) {
  OnnxBuilder b;
  b.input("A", {n}, n).input("B", {n}, n).output("C");
  b.node("MatMul", "product", {"A", "B"}, {"C"});
  compiler::CompileOptions options;
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.batch_size = 1;
  options.tiles_per_ipu = tiles;
  options.available_memory_proportion = proportion;
  auto compiled = compiler::compile_model(b.bytes(), options);
  REQUIRE_MESSAGE(compiled.ok(), compiled.status().message());
  double cycles = 0;
  for (const auto& cs : compiled->executable.compute_sets())
    cycles += static_cast<double>(cs.cycles());
  return cycles;
}

TEST_CASE("available memory proportion: a smaller share bounds a MatMul vertex's working set") {
  const double tile = static_cast<double>(mk2_with(0.6).bytes_per_tile);
  const double by_default = held_bytes(lowering::plan_matmul(512, 512, 512, mk2_with(0.6), 1472));
  // 8 × 32 blocks of 64 rows and 16 columns, K in 5 shares of 103: blocks of fewer rows would
  // give each AMP worker a shorter run (target::amp_cycles).
  CHECK(by_default == 37056);
  for (double proportion : {0.055, 0.05}) {
    CAPTURE(proportion);
    const double held = held_bytes(lowering::plan_matmul(512, 512, 512, mk2_with(proportion), 1472));
    CHECK(held <= proportion * tile);
    CHECK(held < by_default);
  }
}

TEST_CASE("available memory proportion: a larger share lets a faster plan fit") {
  // On 32 tiles the 512³ product's cheapest plan, over the whole K with no reduce, holds 425,984
  // bytes, more than 0.6 of a tile: by default K splits in two and a reduce follows.
  target::TargetSpec few = mk2_with(0.6);
  few.tiles_per_ipu = 32;
  const lowering::MatMulPlan by_default = lowering::plan_matmul(512, 512, 512, few, 32);
  few.available_memory_proportion = 1.0;
  const lowering::MatMulPlan whole_tile = lowering::plan_matmul(512, 512, 512, few, 32);
  CHECK(by_default.k.parts == 2);
  CHECK(whole_tile.k.parts == 1);
  CHECK(held_bytes(whole_tile) > 0.6 * static_cast<double>(few.bytes_per_tile));
  // Measured: 343,705 cycles against 368,946.
  CHECK(matmul_cycles(512, 32, 1.0) < matmul_cycles(512, 32, 0.6));
}

} // namespace
} // namespace ipu::testing
