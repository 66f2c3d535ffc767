// A pool with fewer planes than half the tiles (a stem pool at batch 1) splits each plane into
// bands of rows, one band of one plane per vertex, covering every output row once; with enough
// planes its vertices own whole planes and carry no row range, as executables always did.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/format/codelet_params.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

using format::params::MaxPool;

// MaxPool 3×3, stride 2, pads 1 over [1, planes, side, side].
std::string pool_model(int64_t planes, int64_t side) {
  OnnxBuilder b;
  b.input("x", {planes, side, side}, 1).output("y");
  auto& pool = b.node("MaxPool", "pool", {"x"}, {"y"});
  OnnxBuilder::ints_attr(pool, "kernel_shape", {3, 3});
  OnnxBuilder::ints_attr(pool, "strides", {2, 2});
  OnnxBuilder::ints_attr(pool, "pads", {1, 1, 1, 1});
  return b.bytes();
}

StatusOr<compiler::CompileResult> compile_pool(int64_t planes, int64_t side) {
  compiler::CompileOptions options;
  options.model_path = "pool.onnx";
  options.mode = compiler::Mode::kInfer;
  options.batch_size = 1;
  return compiler::compile_model(pool_model(planes, side), options);
}

const format::ComputeSet& pool_set(const format::Executable& exe) {
  REQUIRE(exe.compute_sets_size() == 1);
  return exe.compute_sets(0);
}

TEST_CASE("MaxPool at batch 1: bands of rows, one per vertex, covering each plane once, same result") {
  constexpr int64_t kPlanes = 8, kSide = 32, kOut = 16;
  auto compiled = compile_pool(kPlanes, kSide);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  const format::ComputeSet& cs = pool_set(compiled->executable);
  CHECK(cs.vertices_size() > kPlanes);
  std::vector<int> covered(kPlanes * kOut, 0);
  for (const format::Vertex& v : cs.vertices()) {
    REQUIRE(v.params_size() == MaxPool::kCount);
    CHECK(v.params(MaxPool::kPlaneEnd) == v.params(MaxPool::kPlaneBegin) + 1);
    for (int64_t r = v.params(MaxPool::kRowBegin); r < v.params(MaxPool::kRowEnd); ++r)
      ++covered[static_cast<size_t>(v.params(MaxPool::kPlaneBegin) * kOut + r)];
  }
  CHECK(std::count(covered.begin(), covered.end(), 1) == kPlanes * kOut);

  std::vector<float> x(kPlanes * kSide * kSide);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.731f * static_cast<float>(i));
  auto engine = engine::Engine::create(compiled->executable, {});
  REQUIRE(engine.ok());
  const std::vector<float> y = run_step(**engine, "predict", x, std::vector<int32_t>{}).predictions;
  REQUIRE(y.size() == static_cast<size_t>(kPlanes * kOut * kOut));
  int64_t wrong = 0;
  for (int64_t p = 0; p < kPlanes; ++p) {
    for (int64_t oy = 0; oy < kOut; ++oy) {
      for (int64_t ox = 0; ox < kOut; ++ox) {
        float want = -std::numeric_limits<float>::infinity();
        for (int64_t iy = 2 * oy - 1; iy <= 2 * oy + 1; ++iy) {
          for (int64_t ix = 2 * ox - 1; ix <= 2 * ox + 1; ++ix) {
            if (iy >= 0 && iy < kSide && ix >= 0 && ix < kSide)
              want = std::max(want, x[static_cast<size_t>((p * kSide + iy) * kSide + ix)]);
          }
        }
        wrong += y[static_cast<size_t>((p * kOut + oy) * kOut + ox)] != want;
      }
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("MaxPool with as many planes as half the tiles keeps whole planes and no row range") {
  const int64_t planes = target::target_preset("mk2")->tiles_per_ipu / 2;
  auto compiled = compile_pool(planes, 4);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  for (const format::Vertex& v : pool_set(compiled->executable).vertices())
    CHECK(v.params_size() == MaxPool::kRowBegin);
}

} // namespace
} // namespace ipu::testing
