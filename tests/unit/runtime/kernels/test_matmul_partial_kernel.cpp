// MatMulPartial (codelet 13): the shares of a MatMul split over K, summed, give the product, with
// and without transposed operands, and with a bias the first share adds; and its validator.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using namespace ipu::kernels::testing;

TEST_CASE("kernels: MatMulPartial shares over K sum to the product") {
  const int64_t M = 5, N = 4, K = 7, parts = 3;
  const std::vector<float> a = values(M * K, 3), b = values(K * N, 4);
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = trans & 1, tb = trans & 2;
    CAPTURE(trans);
    // op(A)[i, k] and op(B)[k, j] over the stored layouts.
    std::vector<float> at(a.size()), bt(b.size());
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t k = 0; k < K; ++k)
        at[static_cast<size_t>(ta ? k * M + i : i * K + k)] = a[static_cast<size_t>(i * K + k)];
    }
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < N; ++j)
        bt[static_cast<size_t>(tb ? j * K + k : k * N + j)] = b[static_cast<size_t>(k * N + j)];
    }
    std::vector<float> partials(static_cast<size_t>(parts * M * N), 99.0f);
    const int64_t k_cuts[] = {0, 3, 6, K};
    for (int64_t part = 0; part < parts; ++part) {
      // Two output blocks per share, as a split over tiles gives.
      for (auto [rb, re] : {std::pair<int64_t, int64_t>{0, 2}, {2, M}}) {
        run(Codelet::kMatMulPartial, {at.data(), bt.data(), partials.data()},
            {M, N, K, ta, tb, rb, re, 0, N, k_cuts[part], k_cuts[part + 1], parts, part});
      }
    }
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double expected = 0, sum = 0;
        for (int64_t k = 0; k < K; ++k)
          expected += a[static_cast<size_t>(i * K + k)] * b[static_cast<size_t>(k * N + j)];
        for (int64_t part = 0; part < parts; ++part)
          sum += partials[static_cast<size_t>(part * M * N + i * N + j)];
        CHECK(sum == doctest::Approx(expected).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("kernels: a MatMulPartial share with a bias adds it to its block") {
  const int64_t M = 3, N = 4, K = 6, parts = 2;
  std::vector<float> a = values(M * K, 5), b = values(K * N, 6), bias = values(N, 7);
  std::vector<float> with_bias(static_cast<size_t>(parts * M * N), 99.0f), without = with_bias;
  run(Codelet::kMatMulPartial, {a.data(), b.data(), bias.data(), with_bias.data()},
      {M, N, K, 0, 0, 0, M, 1, N, 0, 3, parts, 0});
  run(Codelet::kMatMulPartial, {a.data(), b.data(), without.data()},
      {M, N, K, 0, 0, 0, M, 1, N, 0, 3, parts, 0});
  for (int64_t i = 0; i < M; ++i) {
    // Column 0 is outside the block: untouched by either.
    CHECK(with_bias[static_cast<size_t>(i * N)] == 99.0f);
    for (int64_t j = 1; j < N; ++j) {
      const auto at = static_cast<size_t>(i * N + j);
      CHECK(with_bias[at] == without[at] + bias[static_cast<size_t>(j)]);
    }
  }
  // The bias is [N] floats.
  const std::vector<int64_t> params = {M, N, K, 0, 0, 0, M, 0, N, 0, K, parts, 0};
  CHECK(validate(Codelet::kMatMulPartial, {M * K, K * N, N, parts * M * N}, params).ok());
  CHECK(!validate(Codelet::kMatMulPartial, {M * K, K * N, N - 1, parts * M * N}, params).ok());
}

TEST_CASE("kernels: MatMulPartial's validator rejects bad params") {
  const int64_t M = 5, N = 4, K = 7, parts = 3;
  const std::vector<uint64_t> sizes = {M * K, K * N, parts * M * N};
  const std::vector<int64_t> good = {M, N, K, 0, 0, 0, M, 0, N, 0, K, parts, 2};
  CHECK(validate(Codelet::kMatMulPartial, sizes, good).ok());
  auto with = [&](size_t index, int64_t value) {
    std::vector<int64_t> p = good;
    p[index] = value;
    return p;
  };
  using Q = ipu::format::params::MatMulPartial;
  CHECK(!validate(Codelet::kMatMulPartial, sizes, with(Q::kPart, parts)).ok()); // no such share
  CHECK(!validate(Codelet::kMatMulPartial, sizes, with(Q::kPart, -1)).ok());
  CHECK(!validate(Codelet::kMatMulPartial, sizes, with(Q::kParts, parts + 1)).ok()); // partials too small
  CHECK(!validate(Codelet::kMatMulPartial, sizes, with(Q::kKEnd, K + 1)).ok());      // past K
  CHECK(!validate(Codelet::kMatMulPartial, sizes, {M, N, K, 0, 0, 0, M, 0, N, 5, 3, parts, 2})
             .ok()); // K range reversed
  CHECK(!validate(Codelet::kMatMulPartial, sizes, with(Q::kRowEnd, M + 1)).ok());
  CHECK(!validate(Codelet::kMatMulPartial, sizes, with(Q::kColBegin, N + 1)).ok());
  CHECK(!validate(Codelet::kMatMulPartial, {M * K, K * N - 1, parts * M * N}, good).ok()); // B too small
  CHECK(!validate(Codelet::kMatMulPartial, sizes, {M, N, K, 0, 0, 0, M, 0, N, 0, K, parts})
             .ok()); // a param short
}

} // namespace
