// A BatchMatMul with fewer products than tiles (attention's heads) splits each product's rows
// into blocks, one more batch axis for the codelet: more tiles busy, fewer cycles, the same
// result.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

constexpr int64_t kHeads = 12, kRows = 64, kDepth = 16, kCols = 48;

std::string scores_model() {
  OnnxBuilder b;
  b.input("q", {kHeads, kRows, kDepth}, 1).input("k", {kHeads, kDepth, kCols}, 1).output("s");
  b.node("MatMul", "scores", {"q", "k"}, {"s"});
  return b.bytes();
}

std::vector<float> filled(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return v;
}

TEST_CASE("BatchMatMul: attention's 12 products spread their rows over many tiles and compute the same") {
  compiler::CompileOptions options;
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.batch_size = 1;
  auto compiled = compiler::compile_model(scores_model(), options);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  const format::Executable& exe = compiled->executable;
  REQUIRE(exe.compute_sets_size() == 1);
  // One vertex per product (12 tiles) would be the split over products alone.
  const auto& cs = exe.compute_sets(0);
  CHECK(cs.vertices_size() > kHeads);
  // Each vertex computes at most a product's share of rows: its compute is below a product's.
  const double product_cycles =
      static_cast<double>(kRows * kCols * kDepth) / target::target_preset("mk2")->cycles.macs_per_cycle;
  CHECK(cs.compute_cycles() < product_cycles);

  const std::vector<float> q = filled(kHeads * kRows * kDepth, 0.5f),
                           k = filled(kHeads * kDepth * kCols, 0.25f);
  auto engine = engine::Engine::create(compiled->executable, {});
  REQUIRE(engine.ok());
  std::vector<float> s;
  engine::HostStreams streams;
  // The first input is the features stream (runtime/format/host_contract.h), the second its own.
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> dst) -> Status {
    const std::vector<float>& src = exe.streams(static_cast<int>(stream)).name() == "features" ? q : k;
    REQUIRE(dst.size() == src.size() * sizeof(float));
    std::memcpy(dst.data(), src.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t, std::span<const std::byte> src) -> Status {
    const float* f = reinterpret_cast<const float*>(src.data());
    s.insert(s.end(), f, f + src.size() / sizeof(float));
    return Status();
  };
  REQUIRE((*engine)->run(*(*engine)->find_program("predict"), streams).ok());
  REQUIRE(s.size() == static_cast<size_t>(kHeads * kRows * kCols));
  double worst = 0;
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        double want = 0;
        for (int64_t d = 0; d < kDepth; ++d)
          want += static_cast<double>(q[static_cast<size_t>((h * kRows + i) * kDepth + d)]) *
                  k[static_cast<size_t>((h * kDepth + d) * kCols + j)];
        worst = std::max(worst, std::abs(want - s[static_cast<size_t>((h * kRows + i) * kCols + j)]));
      }
    }
  }
  CHECK(worst < 1e-5);
}

} // namespace
} // namespace ipu::testing
