// Where work and weights land on the tiles for the shapes real models have at batch 1: a Concat on
// the channel axis spreads its one row over many tiles, a Gemm's weight lies where its MatMul reads
// it, and a LayerNorm's Pow by a constant 2 is a square, not the generic power.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

compiler::CompileOptions mk2_inference(uint32_t batch) {
  compiler::CompileOptions options;
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.batch_size = batch;
  return options;
}

const format::Tensor& tensor_named(const format::Executable& exe, const std::string& name) {
  for (const auto& t : exe.tensors()) {
    if (t.name() == name) return t;
  }
  FAIL("no tensor " << name);
  return exe.tensors(0);
}

// Concat of two [1, C, 32, 32] inputs (each first through a Relu, so each lies spread over tiles
// as a producer leaves it) along the channel axis: SqueezeNet's fire modules and DenseNet's dense
// blocks at batch 1.
std::string channel_concat_model(int64_t channels) {
  OnnxBuilder b;
  b.input("a", {channels, 32, 32}, 1).input("b", {channels, 32, 32}, 1).output("y");
  b.node("Relu", "relu_a", {"a"}, {"ra"});
  b.node("Relu", "relu_b", {"b"}, {"rb"});
  OnnxBuilder::int_attr(b.node("Concat", "concat", {"ra", "rb"}, {"y"}), "axis", 1);
  return b.bytes();
}

TEST_CASE("a Concat at batch 1 on the channel axis splits each input's row over many tiles") {
  // Each input is 4 MiB: on one tile it would overflow an mk2 tile six times over.
  const int64_t channels = 1024;
  auto compiled = compiler::compile_model(channel_concat_model(channels), mk2_inference(1));
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  const format::Executable& exe = compiled->executable;
  CHECK(compiled->memory.overflowing.empty());
  std::set<uint32_t> tiles;
  int copies = 0;
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices()) {
      if (v.codelet() != static_cast<uint32_t>(format::Codelet::kBlockCopy)) continue;
      ++copies;
      tiles.insert(v.tile());
    }
  }
  CHECK(copies > 100);
  CHECK(tiles.size() > 100);
}

TEST_CASE("a Concat split inside rows places every input element where torch's concatenation does") {
  // Batch 3, so the inputs have several rows and a vertex's range starts and ends inside them; on
  // 16 small tiles the copies split finely.
  OnnxBuilder b;
  b.input("a", {5, 7}, 3).input("b", {2, 7}, 3).output("y");
  OnnxBuilder::int_attr(b.node("Concat", "concat", {"a", "b"}, {"y"}), "axis", 1);
  compiler::CompileOptions options = small_target_options(3);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.bytes_per_tile = 4096;
  auto engine = compile_and_load(b.bytes(), options);
  std::vector<float> a(3 * 5 * 7), bb(3 * 2 * 7);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i);
  for (size_t i = 0; i < bb.size(); ++i)
    bb[i] = -1.0f - static_cast<float>(i);
  std::vector<float> y;
  engine::HostStreams streams;
  const auto& exe = engine->executable();
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> dst) -> Status {
    const std::vector<float>& src = exe.streams(static_cast<int>(stream)).name() == "features" ? a : bb;
    REQUIRE(dst.size() == src.size() * sizeof(float));
    std::memcpy(dst.data(), src.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t, std::span<const std::byte> src) -> Status {
    const float* f = reinterpret_cast<const float*>(src.data());
    y.assign(f, f + src.size() / sizeof(float));
    return Status();
  };
  REQUIRE(engine->run(*engine->find_program("predict"), streams).ok());
  REQUIRE(y.size() == 3 * 7 * 7);
  for (int64_t n = 0; n < 3; ++n) {
    for (int64_t c = 0; c < 7; ++c) {
      for (int64_t k = 0; k < 7; ++k) {
        const float want = c < 5 ? a[static_cast<size_t>((n * 5 + c) * 7 + k)]
                                 : bb[static_cast<size_t>((n * 2 + c - 5) * 7 + k)];
        CHECK(y[static_cast<size_t>((n * 7 + c) * 7 + k)] == want);
      }
    }
  }
}

// A Gemm at batch 1 with a [N, K] weight (transB, as torch's Linear exports): VGG's classifier.
std::string linear_gemm_model(int64_t K, int64_t N) {
  OnnxBuilder b;
  b.input("x", {K}).output("y");
  b.floats("w", {N, K}, std::vector<float>(static_cast<size_t>(N * K), 0.01f));
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"x", "w"}, {"y"}), "transB", 1);
  return b.bytes();
}

TEST_CASE("a large Gemm weight lies where its MatMul's vertices read it, so none receives it") {
  const int64_t K = 8192, N = 2048; // 64 MiB of weight: 45 KB of every mk2 tile if spread
  auto compiled = compiler::compile_model(linear_gemm_model(K, N), mk2_inference(1));
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  const format::Executable& exe = compiled->executable;
  CHECK(compiled->memory.overflowing.empty());
  const format::Tensor& w = tensor_named(exe, "w");
  std::set<uint32_t> weight_tiles;
  for (const auto& iv : w.mapping())
    weight_tiles.insert(iv.tile());
  std::set<uint32_t> matmul_tiles;
  double exchange = 0;
  for (const auto& cs : exe.compute_sets()) {
    bool matmul = false;
    for (const auto& v : cs.vertices()) {
      const auto codelet = static_cast<format::Codelet>(v.codelet());
      if (codelet != format::Codelet::kMatMul && codelet != format::Codelet::kMatMulPartial) continue;
      matmul = true;
      matmul_tiles.insert(v.tile());
    }
    if (matmul) exchange += static_cast<double>(cs.exchange_cycles());
  }
  CHECK(weight_tiles == matmul_tiles);
  CHECK(weight_tiles.size() > 500);
  // A vertex receives at most x's row (32 KiB), less than its block of the weight would take.
  const double weight_share_cycles = 4.0 * static_cast<double>(K * N) /
                                     static_cast<double>(weight_tiles.size()) /
                                     target::target_preset("mk2")->cycles.exchange_bytes_per_cycle;
  CHECK(exchange < weight_share_cycles);
}

TEST_CASE("a small Gemm weight keeps its linear spread over the tiles") {
  const int64_t K = 512, N = 256; // 512 KiB: 356 bytes of every mk2 tile
  auto compiled = compiler::compile_model(linear_gemm_model(K, N), mk2_inference(1));
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  std::set<uint32_t> weight_tiles;
  for (const auto& iv : tensor_named(compiled->executable, "w").mapping())
    weight_tiles.insert(iv.tile());
  // Spread linearly, 90 floats a tile, rather than over the MatMul's few vertices.
  CHECK(weight_tiles.size() > 1400);
}

TEST_CASE("Pow by a constant 2 imports as the scalar square and is charged a multiply") {
  OnnxBuilder b;
  b.input("x", {64}).output("y");
  OnnxBuilder::float_attr(b.node("Constant", "two", {}, {"two"}), "value_float", 2.0f);
  b.node("Pow", "square", {"x", "two"}, {"y"});
  auto compiled = compiler::compile_model(b.bytes(), mk2_inference(4));
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  int unary = 0, binary = 0;
  double compute = 0;
  for (const auto& cs : compiled->executable.compute_sets()) {
    for (const auto& v : cs.vertices()) {
      unary += v.codelet() == static_cast<uint32_t>(format::Codelet::kUnary);
      binary += v.codelet() == static_cast<uint32_t>(format::Codelet::kBinary);
    }
    compute += cs.compute_cycles();
  }
  CHECK(unary > 0);
  CHECK(binary == 0);
  // 256 elements at the vector rate (the generic power costs hundreds of cycles per element).
  CHECK(compute < 256.0);
}

} // namespace
} // namespace ipu::testing
