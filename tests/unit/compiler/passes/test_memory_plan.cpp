#include <doctest/doctest.h>

#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

const char* kSpec = R"({"type": "sequential", "input": {"shape": [64]},
  "layers": [{"name": "wide", "type": "Dense", "units": 512, "activation": "relu"},
             {"name": "out", "type": "Dense", "units": 10}],
  "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
  "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9}})";

TEST_CASE("memory plan: a model that overflows names the tile, the bytes and the tensors") {
  auto options = small_target_options(8);
  options.tiles_per_ipu = 2;
  options.bytes_per_tile = 16 * 1024;
  auto result = compiler::compile_model(kSpec, options);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kResourceExhausted);
  const std::string m = result.status().message();
  CHECK(m.rfind("test.json: ", 0) == 0);
  CHECK(m.find("out of memory") != std::string::npos);
  CHECK(m.find("tile ") != std::string::npos);
  CHECK(m.find("bytes of 16,384") != std::string::npos);
  CHECK(m.find("wide/kernel") != std::string::npos);  // 128 KiB of weights, the largest tensor
}

TEST_CASE("memory plan: the same model fits a larger target and reports its fullest tile") {
  auto options = small_target_options(8);
  auto result = compiler::compile_model(kSpec, options);
  REQUIRE(result.ok());
  const auto& plan = result->memory;
  CHECK(plan.overflowing.empty());
  CHECK(plan.fullest.peak_bytes > 0);
  CHECK(plan.fullest.peak_bytes <= options.bytes_per_tile.value());
  // Weights and momentum (2 × (64·512 + 512 + 512·10 + 10) floats) are always resident.
  const uint64_t resident = 2 * 4 * (64 * 512 + 512 + 512 * 10 + 10);
  CHECK(plan.total_bytes >= resident);
  CHECK(result->executable.estimates().peak_tile_bytes() == plan.fullest.peak_bytes);
}

// Attention-shaped products of two activations: x [8, 4, 32, 32] · x. Each operand holds
// 128 KiB; a tile that received all of both (as BatchMatMul vertices once did) would need
// 256 KiB and overflow, while the matrices of its own batches fit easily.
TEST_CASE("memory plan: a BatchMatMul vertex receives only the matrices of its batches") {
  OnnxBuilder b;
  b.input("x", {4, 32, 32}).output("y");
  b.node("MatMul", "scores", {"x", "x"}, {"y"});
  auto options = small_target_options(8);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.bytes_per_tile = 128 * 1024;
  auto result = compiler::compile_model(b.bytes(), options);
  INFO(result.status().message());
  REQUIRE(result.ok());
  CHECK(result->memory.overflowing.empty());
  CHECK(result->memory.fullest.peak_bytes < 64 * 1024);
}

}  // namespace
}  // namespace ipu::testing
