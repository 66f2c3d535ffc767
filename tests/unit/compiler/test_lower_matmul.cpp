// The order in which a MatMul's output blocks are emitted: the runtime coalesces adjacent
// vertices into host tasks, so the order decides how often each task packs the weights.
#include <doctest/doctest.h>

#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

enum MatMulParam { kM = 0, kRowBegin = 5, kRowEnd = 6, kColBegin = 7, kColEnd = 8 };

TEST_CASE("MatMul lowering emits every row block of a column block before the next column block") {
  const char* spec = R"({"type": "sequential", "input": {"shape": [256]},
    "layers": [{"name": "wide", "type": "Dense", "units": 256}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "optimizer": {"type": "sgd", "learning_rate": 0.1}})";
  auto options = small_target_options(64);
  options.mode = compiler::Mode::kInfer;
  auto result = compiler::compile_model(spec, options);
  INFO(result.status().message());
  REQUIRE(result.ok());
  const format::ComputeSet* matmul = nullptr;
  for (const auto& cs : result->executable.compute_sets()) {
    if (cs.vertices_size() > 0 && cs.vertices(0).codelet() == static_cast<uint32_t>(format::Codelet::kMatMul)) matmul = &cs;
  }
  REQUIRE(matmul != nullptr);
  int column_blocks = 1;
  for (int i = 1; i < matmul->vertices_size(); ++i) {
    const auto& prev = matmul->vertices(i - 1).params();
    const auto& next = matmul->vertices(i).params();
    if (next[kColBegin] == prev[kColBegin]) {
      CHECK(next[kRowBegin] == prev[kRowEnd]);  // the next row block of the same columns
    } else {
      CHECK(prev[kRowEnd] == prev[kM]);  // the column block was complete
      CHECK(next[kRowBegin] == 0);
      CHECK(next[kColBegin] == prev[kColEnd]);
      ++column_blocks;
    }
  }
  // The test means something only for a grid split both ways.
  CHECK(column_blocks > 1);
  CHECK(matmul->vertices_size() > column_blocks);
}

}  // namespace
}  // namespace ipu::testing
