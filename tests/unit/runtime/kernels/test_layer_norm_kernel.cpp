// LayerNorm against the nine kernels it replaces (compiler/passes/fuse_layer_norm.h), bit for bit,
// and its validator.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "runtime/format/tensor_kinds.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::BinaryKind;
using ipu::format::Codelet;
using ipu::format::ReduceKind;
using ipu::format::UnaryKind;
using namespace ipu::kernels::testing;

constexpr int64_t kRows = 19, kN = 48; // 19 rows: groups of eight and a short one

// y = a ∘ b over [kRows, kN], with b's strides (0 where it broadcasts).
void binary(BinaryKind kind, std::vector<float>& a, float* b, int64_t b_row_stride, int64_t b_col_stride,
            std::vector<float>& y) {
  run(vertex(Codelet::kBinary, {a.data(), b, y.data()},
             {static_cast<int64_t>(kind), 2, 0, kRows * kN, kRows, kN, kN, 1, b_row_stride, b_col_stride}));
}

// The mean of each row of [kRows, kN], as the Reduce kernel takes it.
std::vector<float> row_means(std::vector<float>& x) {
  std::vector<float> means(kRows);
  run(vertex(Codelet::kReduce, {x.data(), means.data()},
             {static_cast<int64_t>(ReduceKind::kMean), 1, 1, 0, kRows, kRows, kN, kN, 1}));
  return means;
}

TEST_CASE("kernels: LayerNorm is bitwise the ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add it "
          "replaces") {
  auto x = values(static_cast<size_t>(kRows * kN), 21);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = x[i] * 3.0f + static_cast<float>(i % kN) * 0.25f; // rows with an offset
  auto gamma = values(kN, 22), beta = values(kN, 23);
  float two = 2.0f, epsilon = 1e-5f;

  std::vector<float> mean = row_means(x), d(x.size()), p(x.size()), n(x.size()), m(x.size()), chain(x.size());
  binary(BinaryKind::kSub, x, mean.data(), 1, 0, d);
  binary(BinaryKind::kPow, d, &two, 0, 0, p);
  std::vector<float> variance = row_means(p), shifted(kRows), s(kRows);
  run(vertex(Codelet::kBinary, {variance.data(), &epsilon, shifted.data()},
             {static_cast<int64_t>(BinaryKind::kAdd), 1, 0, kRows, kRows, 1, 0}));
  run(vertex(Codelet::kUnary, {shifted.data(), s.data()}, {static_cast<int64_t>(UnaryKind::kSqrt), 0, kRows},
             {0, 0}));
  binary(BinaryKind::kDiv, d, s.data(), 1, 0, n);
  binary(BinaryKind::kMul, n, gamma.data(), 0, 1, m);
  binary(BinaryKind::kAdd, m, beta.data(), 0, 1, chain);

  std::vector<float> fused(x.size(), -7.0f);
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 3}, {3, kRows}}) {
    run(vertex(Codelet::kLayerNorm, {x.data(), gamma.data(), beta.data(), fused.data()}, {kRows, kN, b, e},
               {epsilon}));
  }
  CHECK(std::memcmp(chain.data(), fused.data(), chain.size() * sizeof(float)) == 0);
  // In place (Y = X), as the engine may alias them.
  run(vertex(Codelet::kLayerNorm, {x.data(), gamma.data(), beta.data(), x.data()}, {kRows, kN, 0, kRows},
             {epsilon}));
  CHECK(std::memcmp(chain.data(), x.data(), chain.size() * sizeof(float)) == 0);
}

TEST_CASE("kernels: the LayerNorm validator checks sizes, rows and aliasing") {
  const std::vector<int64_t> ok{4, 8, 0, 4};
  CHECK(validate(Codelet::kLayerNorm, {32, 8, 8, 32}, ok, {1e-5f}).ok());
  CHECK(!validate(Codelet::kLayerNorm, {32, 8, 8, 32}, {4, 8, 0, 5}, {1e-5f}).ok()); // rows past the end
  CHECK(!validate(Codelet::kLayerNorm, {32, 7, 8, 32}, ok, {1e-5f}).ok());           // γ too short
  CHECK(!validate(Codelet::kLayerNorm, {32, 8, 8, 31}, ok, {1e-5f}).ok());           // Y too short
  CHECK(!validate(Codelet::kLayerNorm, {32, 8, 8, 32}, ok, {}).ok());                // no ε
  CHECK(!validate(Codelet::kLayerNorm, {0, 0, 0, 0}, {4, 0, 0, 4}, {1e-5f}).ok());   // empty rows
}

} // namespace
