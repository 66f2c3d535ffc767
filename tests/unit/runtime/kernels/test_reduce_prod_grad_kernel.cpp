// ReduceProdGrad (codelet 90) against the product of the other elements of each row, computed
// directly, on rows with no zero, one zero and two zeros; and its validator.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using namespace ipu::kernels::testing;

TEST_CASE("kernels: ReduceProdGrad is dY times the product of the other elements, exact with zeros") {
  const int64_t rows = 4, n = 5;
  std::vector<float> x = values(rows * n, 7), dy = {0.5f, -2.0f, 1.5f, 3.0f};
  x[5 + 2] = 0.0f;              // row 1: one zero
  x[10 + 0] = x[10 + 4] = 0.0f; // row 2: two zeros
  x[15 + 3] = 0.0f;             // row 3: one zero, its dY the largest
  std::vector<float> dx(x.size(), 99.0f);
  // Two vertices, as a split over tiles gives.
  run(Codelet::kReduceProdGrad, {x.data(), dy.data(), dx.data()}, {rows, n, 0, 1});
  run(Codelet::kReduceProdGrad, {x.data(), dy.data(), dx.data()}, {rows, n, 1, rows});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      double others = dy[static_cast<size_t>(r)];
      for (int64_t j = 0; j < n; ++j) {
        if (j != i) others *= x[static_cast<size_t>(r * n + j)];
      }
      CAPTURE(r);
      CAPTURE(i);
      CHECK(dx[static_cast<size_t>(r * n + i)] == doctest::Approx(others).epsilon(1e-6));
    }
  }
  CHECK(dx[5 + 2] != 0.0f); // the zero's gradient is the product of the rest
  CHECK(dx[5 + 1] == 0.0f);
  for (int64_t i = 0; i < n; ++i)
    CHECK(dx[static_cast<size_t>(10 + i)] == 0.0f);

  CHECK(validate(Codelet::kReduceProdGrad, {20, 4, 20}, {rows, n, 0, rows}).ok());
  CHECK(!validate(Codelet::kReduceProdGrad, {20, 4, 20}, {rows, n, 0, rows + 1}).ok()); // past the rows
  CHECK(!validate(Codelet::kReduceProdGrad, {20, 3, 20}, {rows, n, 0, rows}).ok());     // dY too small
  CHECK(!validate(Codelet::kReduceProdGrad, {20, 4, 19}, {rows, n, 0, rows}).ok());     // dX too small
  CHECK(!validate(Codelet::kReduceProdGrad, {20, 4, 20}, {rows, n, 0}).ok());
}

} // namespace
