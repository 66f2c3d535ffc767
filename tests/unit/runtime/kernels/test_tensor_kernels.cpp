// The generic tensor codelets (ids 20-28) against plain reference loops, and their validators
// against parameters that would read or write out of range.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <utility>
#include <vector>

#include "runtime/format/tensor_kinds.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::BinaryKind;
using ipu::format::Codelet;
using ipu::format::ReduceKind;
using ipu::format::UnaryKind;
using ipu::kernels::find_kernel;
using namespace ipu::kernels::testing;

void check_tensor_close(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
    }
  }
}

TEST_CASE("tensor kernels: every generic codelet is registered") {
  for (uint32_t id = 20; id <= 29; ++id) {
    CAPTURE(id);
    REQUIRE(find_kernel(id) != nullptr);
    CHECK(static_cast<uint32_t>(find_kernel(id)->codelet) == id);
  }
}

TEST_CASE("tensor kernels: Unary kinds match the reference on two ranges") {
  const auto x = values(40, 1);
  struct Case {
    UnaryKind kind;
    float alpha, beta;
    double (*f)(double, double, double);
  };
  const Case cases[] = {
      {UnaryKind::kAbs, 0, 0, [](double t, double, double) { return std::fabs(t); }},
      {UnaryKind::kNeg, 0, 0, [](double t, double, double) { return -t; }},
      {UnaryKind::kExp, 0, 0, [](double t, double, double) { return std::exp(t); }},
      {UnaryKind::kSqrt, 0, 0, [](double t, double, double) { return t < 0 ? NAN : std::sqrt(t); }},
      {UnaryKind::kErf, 0, 0, [](double t, double, double) { return std::erf(t); }},
      {UnaryKind::kGelu, 0, 0,
       [](double t, double, double) { return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0))); }},
      {UnaryKind::kSoftplus, 0, 0, [](double t, double, double) { return std::log(1 + std::exp(t)); }},
      {UnaryKind::kElu, 0.7f, 0,
       [](double t, double a, double) { return t > 0 ? t : a * (std::exp(t) - 1); }},
      {UnaryKind::kSelu, 1.5f, 1.1f,
       [](double t, double a, double g) { return g * (t > 0 ? t : a * (std::exp(t) - 1)); }},
      {UnaryKind::kLeakyRelu, 0.1f, 0, [](double t, double a, double) { return t >= 0 ? t : a * t; }},
      {UnaryKind::kHardSigmoid, 0.2f, 0.5f,
       [](double t, double a, double b) { return std::clamp(a * t + b, 0.0, 1.0); }},
      {UnaryKind::kSoftsign, 0, 0, [](double t, double, double) { return t / (1 + std::abs(t)); }},
      {UnaryKind::kClip, -0.5f, 1.0f,
       [](double t, double a, double b) { return std::min(std::max(t, a), b); }},
      {UnaryKind::kTrunc, 0, 0, [](double t, double, double) { return std::trunc(t); }},
      {UnaryKind::kAffine, 3, -1, [](double t, double a, double b) { return a * t + b; }},
      {UnaryKind::kSign, 0, 0, [](double t, double, double) { return t > 0 ? 1.0 : (t < 0 ? -1.0 : 0.0); }},
      {UnaryKind::kHardSwish, 1.0f / 6, 0.5f,
       [](double t, double a, double b) { return t * std::clamp(a * t + b, 0.0, 1.0); }},
      {UnaryKind::kCelu, 0.8f, 0,
       [](double t, double a, double) {
         return std::max(0.0, t) + std::min(0.0, a * (std::exp(t / a) - 1));
       }},
  };
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.kind));
    std::vector<float> y(x.size(), -99.0f);
    auto in = x;
    for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 17}, {17, 40}}) {
      run(vertex(Codelet::kUnary, {in.data(), y.data()}, {static_cast<int64_t>(c.kind), b, e},
                 {c.alpha, c.beta}));
    }
    std::vector<double> want;
    for (float t : x)
      want.push_back(c.f(t, c.alpha, c.beta));
    check_tensor_close(y, want, 2e-6);
    CHECK(validate(Codelet::kUnary, {40, 40}, {static_cast<int64_t>(c.kind), 0, 40}, {c.alpha, c.beta}).ok());
  }
  CHECK(!validate(Codelet::kUnary, {40, 40}, {0, 0, 41}, {0, 0}).ok());
  CHECK(!validate(Codelet::kUnary, {40, 40}, {ipu::format::kUnaryKindCount, 0, 4}, {0, 0}).ok());
  CHECK(!validate(Codelet::kUnary, {40, 39}, {0, 0, 4}, {0, 0}).ok());
}

// The compiler replaces PyTorch's exported GELU, five ops, by one Unary Gelu
// (compiler/passes/fuse_gelu.h): the kernel must give bitwise what those ops' kernels give.
TEST_CASE("tensor kernels: Unary Gelu is bitwise the Div, Erf, Add, Mul, Mul it replaces") {
  auto x = values(600, 5);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] *= static_cast<float>(i % 7); // up to ±6: both tails
  x.insert(x.end(), {0.0f, -0.0f, 1e-30f, -9.5f, 9.5f, INFINITY, -INFINITY});
  const auto n = static_cast<int64_t>(x.size());
  auto binary_by = [&](BinaryKind kind, std::vector<float>& a, float scalar, std::vector<float>& y) {
    float b = scalar;
    run(vertex(Codelet::kBinary, {a.data(), &b, y.data()}, {static_cast<int64_t>(kind), 1, 0, n, n, 1, 0}));
  };
  std::vector<float> t(x.size()), e(x.size()), a(x.size()), m(x.size()), chain(x.size()), fused(x.size());
  binary_by(BinaryKind::kDiv, x, std::numbers::sqrt2_v<float>, t);
  run(vertex(Codelet::kUnary, {t.data(), e.data()}, {static_cast<int64_t>(UnaryKind::kErf), 0, n}, {0, 0}));
  binary_by(BinaryKind::kAdd, e, 1.0f, a);
  run(vertex(Codelet::kBinary, {x.data(), a.data(), m.data()},
             {static_cast<int64_t>(BinaryKind::kMul), 1, 0, n, n, 1, 1}));
  binary_by(BinaryKind::kMul, m, 0.5f, chain);
  for (auto [b, end] : {std::pair<int64_t, int64_t>{0, 300}, {300, n}}) {
    run(vertex(Codelet::kUnary, {x.data(), fused.data()}, {static_cast<int64_t>(UnaryKind::kGelu), b, end},
               {0, 0}));
  }
  CHECK(std::memcmp(chain.data(), fused.data(), chain.size() * sizeof(float)) == 0);
}

// The compiler replaces PyTorch's exported SiLU, Sigmoid (an Activation) and Mul, by one Unary Silu
// (compiler/passes/fuse_silu.h): bitwise what those two ops' kernels give, across the sigmoid's
// range (both tails, where expf saturates and underflows), its edges and the kernel's chunks,
// computed in place too. A NaN input gives a NaN whose sign is not compared: x·s with x and s both
// NaN keeps one operand's, and a compiler may order a product's operands either way (clang's
// TSan build did, in one kernel and not the other).
void check_same_bits_or_both_nan(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]));
    }
  }
}

TEST_CASE("tensor kernels: Unary Silu is bitwise the Sigmoid and Mul it replaces") {
  auto x = values(700, 6);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] *= static_cast<float>(i % 23); // up to ±22, and a few beyond the last sure exponent
  x.insert(x.end(), {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-42f, -89.0f, 89.0f, -104.0f, 120.0f, INFINITY,
                     -INFINITY, std::numeric_limits<float>::quiet_NaN()});
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> sigmoid(x.size()), chain(x.size()), fused(x.size());
  run(vertex(Codelet::kActivation, {x.data(), sigmoid.data()},
             {static_cast<int64_t>(ipu::format::ActivationKind::kSigmoid), 0, n}));
  run(vertex(Codelet::kBinary, {x.data(), sigmoid.data(), chain.data()},
             {static_cast<int64_t>(BinaryKind::kMul), 1, 0, n, n, 1, 1}));
  for (auto [b, end] : {std::pair<int64_t, int64_t>{0, 301}, {301, n}}) {
    run(vertex(Codelet::kUnary, {x.data(), fused.data()}, {static_cast<int64_t>(UnaryKind::kSilu), b, end},
               {0, 0}));
  }
  check_same_bits_or_both_nan(fused, chain);
  std::vector<float> in_place = x;
  run(vertex(Codelet::kUnary, {in_place.data(), in_place.data()},
             {static_cast<int64_t>(UnaryKind::kSilu), 0, n}, {0, 0}));
  check_same_bits_or_both_nan(in_place, chain);
}

TEST_CASE("tensor kernels: Binary broadcasts [2,1,4] against [3,1] like numpy") {
  auto a = values(8, 2), b = values(3, 3);
  const std::vector<int64_t> dims{2, 3, 4}, sa{4, 0, 1}, sb{0, 1, 0};
  for (BinaryKind kind :
       {BinaryKind::kAdd, BinaryKind::kSub, BinaryKind::kDiv, BinaryKind::kMax, BinaryKind::kLess}) {
    CAPTURE(static_cast<int>(kind));
    std::vector<float> y(24, -99.0f);
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 5}, {5, 24}}) {
      std::vector<int64_t> p{static_cast<int64_t>(kind), 3, begin, end};
      for (const auto* l : {&dims, &sa, &sb})
        p.insert(p.end(), l->begin(), l->end());
      run(vertex(Codelet::kBinary, {a.data(), b.data(), y.data()}, p));
    }
    std::vector<double> want;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 4; ++k) {
          const double x = a[static_cast<size_t>(i * 4 + k)], z = b[static_cast<size_t>(j)];
          switch (kind) {
          case BinaryKind::kAdd:
            want.push_back(x + z);
            break;
          case BinaryKind::kSub:
            want.push_back(x - z);
            break;
          case BinaryKind::kDiv:
            want.push_back(x / z);
            break;
          case BinaryKind::kMax:
            want.push_back(std::max(x, z));
            break;
          default:
            want.push_back(static_cast<float>(x) < static_cast<float>(z) ? 1 : 0);
            break;
          }
        }
      }
    }
    check_tensor_close(y, want);
  }
  std::vector<int64_t> ok{0, 3, 0, 24, 2, 3, 4, 4, 0, 1, 0, 1, 0};
  CHECK(validate(Codelet::kBinary, {8, 3, 24}, ok).ok());
  auto bad = ok;
  bad[8] = 5; // A's stride 5 on axis 1 reaches element 4 + 2·5 + 3 = 17 of 8
  CHECK(!validate(Codelet::kBinary, {8, 3, 24}, bad).ok());
  bad = ok;
  bad[11] = 2; // B's stride 2 on an axis of 3 reads element 4 of 3
  CHECK(!validate(Codelet::kBinary, {8, 3, 24}, bad).ok());
  bad = ok;
  bad[1] = 9; // rank beyond the limit
  CHECK(!validate(Codelet::kBinary, {8, 3, 24}, bad).ok());
  bad = ok;
  bad[3] = 25;
  CHECK(!validate(Codelet::kBinary, {8, 3, 24}, bad).ok());
}

// Binary walks rows of the innermost axis with a loop per stride form: both contiguous, either
// operand broadcast along the row, and a transposed read; over ranges that start and end
// mid-row. Each must give what the element-by-element definition gives.
TEST_CASE("tensor kernels: Binary rows of every innermost stride form, over ranges that split rows") {
  const std::vector<int64_t> dims{3, 5};
  const std::vector<float> full = values(15, 4), other = values(15, 7), column = values(3, 5);
  struct Form {
    const char* name;
    const std::vector<float>* a;
    std::vector<int64_t> sa;
    const std::vector<float>* b;
    std::vector<int64_t> sb;
  };
  const std::vector<Form> forms = {{"contiguous", &full, {5, 1}, &other, {5, 1}},
                                   {"b broadcast", &full, {5, 1}, &column, {1, 0}},
                                   {"a broadcast", &column, {1, 0}, &full, {5, 1}},
                                   {"transposed", &full, {1, 3}, &full, {5, 1}}};
  for (const Form& f : forms) {
    CAPTURE(f.name);
    std::vector<float> y(15, -99.0f);
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 3}, {3, 12}, {12, 15}}) {
      std::vector<int64_t> p{static_cast<int64_t>(BinaryKind::kSub), 2, begin, end};
      for (const auto* l : {&dims, &f.sa, &f.sb})
        p.insert(p.end(), l->begin(), l->end());
      run(vertex(Codelet::kBinary,
                 {const_cast<float*>(f.a->data()), const_cast<float*>(f.b->data()), y.data()}, p));
    }
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        const float want = (*f.a)[static_cast<size_t>(i * f.sa[0] + j * f.sa[1])] -
                           (*f.b)[static_cast<size_t>(i * f.sb[0] + j * f.sb[1])];
        CHECK(y[static_cast<size_t>(i * 5 + j)] == want);
      }
    }
  }
}

TEST_CASE("tensor kernels: Pow by 2 is the exact square, in Binary and Unary") {
  auto a = values(15, 6);
  std::vector<float> two{2.0f}, y(15), u(15);
  std::vector<int64_t> p{static_cast<int64_t>(BinaryKind::kPow), 2, 0, 15, 3, 5, 5, 1, 0, 0};
  run(vertex(Codelet::kBinary, {a.data(), two.data(), y.data()}, p));
  run(vertex(Codelet::kUnary, {a.data(), u.data()}, {static_cast<int64_t>(UnaryKind::kPowScalar), 0, 15},
             {2.0f, 0.0f}));
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(y[i] == a[i] * a[i]);
    CHECK(u[i] == a[i] * a[i]);
  }
}

TEST_CASE("tensor kernels: Where selects per broadcast element") {
  std::vector<float> c{1, 0, 1}, a{10, 20, 30, 40, 50, 60}, b{-1};
  std::vector<float> y(6);
  run(vertex(Codelet::kWhere, {c.data(), a.data(), b.data(), y.data()}, {2, 0, 6, 2, 3, 0, 1, 3, 1, 0, 0}));
  CHECK(y == std::vector<float>{10, -1, 30, 40, -1, 60});
  CHECK(validate(Codelet::kWhere, {3, 6, 1, 6}, {2, 0, 6, 2, 3, 0, 1, 3, 1, 0, 0}).ok());
  CHECK(!validate(Codelet::kWhere, {3, 6, 1, 6}, {2, 0, 6, 2, 3, 0, 1, 3, 1, 0, 1}).ok());
}

TEST_CASE("tensor kernels: StridedCopy transposes, reverses and pads") {
  auto x = values(6, 4); // [2,3]
  std::vector<float> t(6);
  run(vertex(Codelet::kStridedCopy, {x.data(), t.data()}, {2, 0, 0, 6, 3, 2, 1, 3, 0, 0, 3, 2}, {0}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j)
      CHECK(t[static_cast<size_t>(i * 2 + j)] == x[static_cast<size_t>(j * 3 + i)]);
  }
  // Row 1 reversed: offset 5, stride -1.
  std::vector<float> r(3);
  run(vertex(Codelet::kStridedCopy, {x.data(), r.data()}, {1, 5, 0, 3, 3, -1, 0, 3}, {0}));
  CHECK(r == std::vector<float>{x[5], x[4], x[3]});
  // Pad [2,3] by one on each side of axis 1 with 7: output [2,5], box [1,4).
  std::vector<float> p(10);
  const std::vector<int64_t> pad{2, -1, 0, 10, 2, 5, 3, 1, 0, 1, 2, 4};
  run(vertex(Codelet::kStridedCopy, {x.data(), p.data()}, pad, {7}));
  CHECK(p == std::vector<float>{7, x[0], x[1], x[2], 7, 7, x[3], x[4], x[5], 7});
  CHECK(validate(Codelet::kStridedCopy, {6, 10}, pad, {7}).ok());
  auto bad = pad;
  bad[11] = 5; // the box reaches the padding column, which would read x[-1 + 4·1 + 3] = x[6]
  CHECK(!validate(Codelet::kStridedCopy, {6, 10}, bad, {7}).ok());
  CHECK(!validate(Codelet::kStridedCopy, {6, 3}, {1, 5, 0, 3, 3, 1, 0, 3}, {0}).ok());
}

TEST_CASE("tensor kernels: StridedCopy over ranges that split rows, with the innermost axis kept or moved") {
  // X [3,4,5] to [4,3,5] (innermost kept: contiguous runs) and to [5,4,3] (reversed axes).
  const auto x = values(60, 9);
  struct Layout {
    std::vector<int64_t> dims, strides;
  };
  for (const Layout& l : {Layout{{4, 3, 5}, {5, 20, 1}}, Layout{{5, 4, 3}, {1, 5, 20}}}) {
    std::vector<float> whole(60), split(60);
    auto params = [&](int64_t begin, int64_t end) {
      std::vector<int64_t> p{3, 0, begin, end};
      p.insert(p.end(), l.dims.begin(), l.dims.end());
      p.insert(p.end(), l.strides.begin(), l.strides.end());
      p.insert(p.end(), {0, 0, 0});
      p.insert(p.end(), l.dims.begin(), l.dims.end());
      return p;
    };
    run(vertex(Codelet::kStridedCopy, {const_cast<float*>(x.data()), whole.data()}, params(0, 60), {0}));
    for (int64_t begin = 0; begin < 60; begin += 7) {
      const int64_t end = std::min<int64_t>(60, begin + 7);
      run(vertex(Codelet::kStridedCopy, {const_cast<float*>(x.data()), split.data()}, params(begin, end),
                 {0}));
    }
    for (int64_t i = 0; i < 60; ++i) {
      const int64_t a = i / (l.dims[1] * l.dims[2]), b = i / l.dims[2] % l.dims[1], c = i % l.dims[2];
      CHECK(whole[static_cast<size_t>(i)] ==
            x[static_cast<size_t>(a * l.strides[0] + b * l.strides[1] + c * l.strides[2])]);
    }
    CHECK(split == whole);
  }
}

// A Pad in every axis, with the innermost axis kept and moved (a transpose and a pad), run over
// ranges that start and end inside rows: each output is X's element inside the box, fill outside.
TEST_CASE("tensor kernels: StridedCopy pads every axis, over ranges that split rows") {
  const auto x = values(60, 10); // [3,4,5]
  struct Layout {
    std::vector<int64_t> dims, strides, lo, hi;
  };
  // [3,4,5] padded to [5,6,9]; and its transpose [5,4,3] padded to [8,5,4].
  for (const Layout& l : {Layout{{5, 6, 9}, {20, 5, 1}, {1, 1, 2}, {4, 5, 7}},
                          Layout{{8, 5, 4}, {1, 5, 20}, {2, 0, 1}, {7, 4, 4}}}) {
    const int64_t n = l.dims[0] * l.dims[1] * l.dims[2];
    int64_t offset = 0; // the box's first element reads X[0]
    for (size_t k = 0; k < 3; ++k)
      offset -= l.lo[k] * l.strides[k];
    auto params = [&](int64_t begin, int64_t end) {
      std::vector<int64_t> p{3, offset, begin, end};
      for (const auto* list : {&l.dims, &l.strides, &l.lo, &l.hi})
        p.insert(p.end(), list->begin(), list->end());
      return p;
    };
    std::vector<float> split(static_cast<size_t>(n), -1.0f);
    for (int64_t begin = 0; begin < n; begin += 7) {
      run(vertex(Codelet::kStridedCopy, {const_cast<float*>(x.data()), split.data()},
                 params(begin, std::min(n, begin + 7)), {-5.0f}));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t idx[] = {i / (l.dims[1] * l.dims[2]), i / l.dims[2] % l.dims[1], i % l.dims[2]};
      bool inside = true;
      int64_t at = offset;
      for (size_t k = 0; k < 3; ++k) {
        inside = inside && idx[k] >= l.lo[k] && idx[k] < l.hi[k];
        at += idx[k] * l.strides[k];
      }
      CAPTURE(i);
      CHECK(split[static_cast<size_t>(i)] == (inside ? x[static_cast<size_t>(at)] : -5.0f));
    }
  }
}

TEST_CASE("tensor kernels: BlockCopy places a Concat input into its columns") {
  std::vector<float> x{1, 2, 3, 4}, y(6, 0);
  run(vertex(Codelet::kBlockCopy, {x.data(), y.data()}, {2, 2, 3, 1, 0, 4}));
  CHECK(y == std::vector<float>{0, 1, 2, 0, 3, 4});
  CHECK(!validate(Codelet::kBlockCopy, {4, 6}, {2, 2, 3, 2, 0, 4}).ok());
  CHECK(!validate(Codelet::kBlockCopy, {4, 6}, {2, 2, 3, INT64_MAX, 0, 4}).ok());
  CHECK(!validate(Codelet::kBlockCopy, {4, 6}, {2, 2, 3, 1, 0, 5}).ok());
}

TEST_CASE("tensor kernels: BlockCopy copies a range of X that starts and ends inside rows") {
  // X [3, 3] into columns 1..3 of Y [3, 5]: elements 2..7 span the end of row 0, row 1 and the
  // start of row 2.
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, y(15, 0);
  run(vertex(Codelet::kBlockCopy, {x.data(), y.data()}, {3, 3, 5, 1, 2, 7}));
  CHECK(y == std::vector<float>{0, 0, 0, 3, 0, 0, 4, 5, 6, 0, 0, 7, 0, 0, 0});
}

TEST_CASE("tensor kernels: Reduce sums, averages and finds arg extremes over strided axes") {
  auto x = values(24, 5); // [2,3,4]
  // Reduce axes 0 and 2: output [3] with stride 4; reduced dims [2,4] strides [12,1].
  std::vector<float> y(3);
  for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMean, ReduceKind::kMax, ReduceKind::kMin}) {
    run(vertex(Codelet::kReduce, {x.data(), y.data()},
               {static_cast<int64_t>(kind), 1, 2, 0, 3, 3, 4, 2, 4, 12, 1}));
    std::vector<double> want;
    for (int j = 0; j < 3; ++j) {
      double sum = 0, mx = -1e9, mn = 1e9;
      for (int i = 0; i < 2; ++i) {
        for (int k = 0; k < 4; ++k) {
          const double t = x[static_cast<size_t>(i * 12 + j * 4 + k)];
          sum += t;
          mx = std::max(mx, t);
          mn = std::min(mn, t);
        }
      }
      want.push_back(kind == ReduceKind::kSum    ? sum
                     : kind == ReduceKind::kMean ? sum / 8
                     : kind == ReduceKind::kMax  ? mx
                                                 : mn);
    }
    check_tensor_close(y, want);
  }
  std::vector<float> ties{1, 3, 3, 0}, idx(1);
  run(vertex(Codelet::kReduce, {ties.data(), idx.data()},
             {static_cast<int64_t>(ReduceKind::kArgMax), 1, 1, 0, 1, 1, 0, 4, 1}));
  CHECK(idx[0] == 1);
  run(vertex(Codelet::kReduce, {ties.data(), idx.data()},
             {static_cast<int64_t>(ReduceKind::kArgMaxLast), 1, 1, 0, 1, 1, 0, 4, 1}));
  CHECK(idx[0] == 2);
  CHECK(validate(Codelet::kReduce, {24, 3}, {0, 1, 2, 0, 3, 3, 4, 2, 4, 12, 1}).ok());
  CHECK(!validate(Codelet::kReduce, {24, 3}, {0, 1, 2, 0, 3, 3, 4, 2, 4, 13, 1}).ok());
  CHECK(!validate(Codelet::kReduce, {24, 3}, {5, 1, 2, 0, 3, 3, 4, 2, 4, 12, 1}).ok());
}

// Sum and Mean over one axis take their own loop: axis 1 of [2,3,4], over two output ranges.
TEST_CASE("tensor kernels: Reduce sums and averages over a single strided axis") {
  auto x = values(24, 9);
  for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMean}) {
    CAPTURE(static_cast<int>(kind));
    std::vector<float> y(8, -99.0f);
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 3}, {3, 8}}) {
      run(vertex(Codelet::kReduce, {x.data(), y.data()},
                 {static_cast<int64_t>(kind), 2, 1, begin, end, 2, 4, 12, 1, 3, 4}));
    }
    std::vector<double> want;
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 4; ++k) {
        double sum = 0;
        for (int j = 0; j < 3; ++j)
          sum += x[static_cast<size_t>(i * 12 + j * 4 + k)];
        want.push_back(kind == ReduceKind::kSum ? sum : sum / 3);
      }
    }
    check_tensor_close(y, want);
  }
}

// A split sum's shares [5, 3, 600] summed into [3, 600]: its rows are longer than the loop's
// chunk of outputs, a range may start and end inside rows, and the output may be read through a
// transposed view (an inner stride that is not 1). Each output is the shares added in order in
// double, bitwise.
TEST_CASE("tensor kernels: Reduce over one axis adds each output's items in order, in chunks of a row") {
  const int64_t parts = 5, rows = 3, cols = 600;
  auto x = values(static_cast<size_t>(parts * rows * cols), 11);
  const auto sum_of = [&](int64_t offset) {
    double acc = 0;
    for (int64_t j = 0; j < parts; ++j)
      acc += x[static_cast<size_t>(offset + j * rows * cols)];
    return static_cast<float>(acc);
  };
  const auto kSum = static_cast<int64_t>(ReduceKind::kSum);
  SUBCASE("rows as they lie, over two ranges that split rows") {
    std::vector<float> y(static_cast<size_t>(rows * cols), -99.0f), want(y.size());
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 700}, {700, rows * cols}}) {
      run(vertex(Codelet::kReduce, {x.data(), y.data()},
                 {kSum, 2, 1, begin, end, rows, cols, cols, 1, parts, rows * cols}));
    }
    for (int64_t i = 0; i < rows * cols; ++i)
      want[static_cast<size_t>(i)] = sum_of(i);
    CHECK(y == want);
  }
  SUBCASE("the transpose: output [600, 3] reads the shares with strides [1, 600]") {
    std::vector<float> y(static_cast<size_t>(rows * cols), -99.0f), want(y.size());
    run(vertex(Codelet::kReduce, {x.data(), y.data()},
               {kSum, 2, 1, 0, rows * cols, cols, rows, 1, cols, parts, rows * cols}));
    for (int64_t c = 0; c < cols; ++c) {
      for (int64_t r = 0; r < rows; ++r)
        want[static_cast<size_t>(c * rows + r)] = sum_of(r * cols + c);
    }
    CHECK(y == want);
  }
}

// The one-axis path turns each chunk's double sums into floats a vector at a time: bit for bit what
// the scalar `float(sum)`, `float(sum / count)` and `sum > 0 ? float(sum) : 0` gave, at the edges
// too (NaN, infinities, a sum beyond float's range, -0, the least subnormal, sums between floats),
// over a row longer than the chunk and ranges that end off the vector width.
TEST_CASE("tensor kernels: Reduce's one-axis Sum, Mean and SumRelu give the scalar conversion's bits") {
  const int64_t parts = 2, cols = 300;
  auto x = values(static_cast<size_t>(parts * cols), 12);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max(), least = std::numeric_limits<float>::denorm_min();
  const std::vector<std::pair<float, float>> edges = {
      {nan, 1.0f},   {inf, 1.0f},     {-inf, 1.0f},  {big, big},           {-big, -big},     {-0.0f, -0.0f},
      {0.0f, -0.0f}, {-least, 0.0f},  {least, 0.0f}, {1.0f, 1e-30f},       {-1.0f, -1e-30f}, {1e-30f, -1.0f},
      {3.0f, -3.0f}, {least, -least}, {-2.5f, 2.0f}, {1.0f, 5.9604645e-8f}};
  for (size_t e = 0; e < edges.size(); ++e) {
    x[e * 7] = edges[e].first;
    x[static_cast<size_t>(cols) + e * 7] = edges[e].second;
  }
  for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMean, ReduceKind::kSumRelu}) {
    CAPTURE(static_cast<int>(kind));
    std::vector<float> y(static_cast<size_t>(cols), -99.0f), want(y.size());
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 3}, {3, 261}, {261, cols}}) {
      run(vertex(Codelet::kReduce, {x.data(), y.data()},
                 {static_cast<int64_t>(kind), 1, 1, begin, end, cols, 1, parts, cols}));
    }
    for (int64_t c = 0; c < cols; ++c) {
      double sum = 0.0; // the shares added in order from 0.0, as the kernel adds them
      sum += x[static_cast<size_t>(c)];
      sum += x[static_cast<size_t>(cols + c)];
      want[static_cast<size_t>(c)] = kind == ReduceKind::kMean ? static_cast<float>(sum / parts)
                                     : kind == ReduceKind::kSumRelu
                                         ? (sum > 0.0 ? static_cast<float>(sum) : 0.0f)
                                         : static_cast<float>(sum);
    }
    CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("tensor kernels: AxisSoftmax over a middle axis, and its log form") {
  auto x = values(24, 6); // [2,3,4] over axis 1
  std::vector<float> y(24), l(24);
  run(vertex(Codelet::kAxisSoftmax, {x.data(), y.data()}, {0, 2, 3, 4, 0, 8}));
  run(vertex(Codelet::kAxisSoftmax, {x.data(), l.data()}, {1, 2, 3, 4, 0, 8}));
  std::vector<double> want(24), want_log(24);
  for (int o = 0; o < 2; ++o) {
    for (int i = 0; i < 4; ++i) {
      double sum = 0;
      for (int j = 0; j < 3; ++j)
        sum += std::exp(x[static_cast<size_t>(o * 12 + j * 4 + i)]);
      for (int j = 0; j < 3; ++j) {
        const size_t at = static_cast<size_t>(o * 12 + j * 4 + i);
        want[at] = std::exp(x[at]) / sum;
        want_log[at] = x[at] - std::log(sum);
      }
    }
  }
  check_tensor_close(y, want);
  check_tensor_close(l, want_log);
  CHECK(!validate(Codelet::kAxisSoftmax, {24, 24}, {0, 2, 3, 4, 0, 9}).ok());
}

TEST_CASE("tensor kernels: AxisSoftmax on the last axis, of lengths off the vector width, in place") {
  for (int64_t n : {1, 3, 4, 7, 33}) {
    // Two lines of spread values (large ones would overflow an unshifted exp), the second with a
    // -inf when it has other elements (a line of only -inf has no softmax).
    std::vector<float> x(static_cast<size_t>(2 * n));
    for (int64_t j = 0; j < 2 * n; ++j)
      x[static_cast<size_t>(j)] = 95.0f - 7.3f * static_cast<float>(j % 29);
    if (n > 1) x[static_cast<size_t>(n)] = -INFINITY;
    for (int64_t kind : {0, 1}) {
      INFO("n = " << n << ", kind " << kind);
      std::vector<float> y = x;
      run(vertex(Codelet::kAxisSoftmax, {y.data(), y.data()}, {kind, 2, n, 1, 0, 2}));
      std::vector<double> want(x.size());
      for (int64_t line = 0; line < 2; ++line) {
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j)
          max = std::max(max, static_cast<double>(x[static_cast<size_t>(line * n + j)]));
        for (int64_t j = 0; j < n; ++j)
          sum += std::exp(x[static_cast<size_t>(line * n + j)] - max);
        for (int64_t j = 0; j < n; ++j) {
          const double t = x[static_cast<size_t>(line * n + j)] - max;
          want[static_cast<size_t>(line * n + j)] = kind == 0 ? std::exp(t) / sum : t - std::log(sum);
        }
      }
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isinf(want[i])) {
          CHECK(y[i] == want[i]);
        } else {
          CHECK(std::abs(y[i] - want[i]) <= 1e-6 * (1 + std::abs(want[i])));
        }
      }
    }
  }
}

// The kernel takes its lines eight at a time: however vertices split 19 lines (groups of eight,
// short groups, single lines), each line's results are bitwise those of one vertex over them all.
TEST_CASE("tensor kernels: AxisSoftmax gives bitwise the same lines however vertices split them") {
  for (int64_t inner : {1, 3}) {
    const int64_t n = 37, lines = 19, outer = lines / inner + 1;
    const auto x = values(static_cast<size_t>(outer * n * inner), 41);
    for (int64_t kind : {0, 1}) {
      CAPTURE(inner);
      CAPTURE(kind);
      std::vector<float> whole = x;
      run(vertex(Codelet::kAxisSoftmax, {whole.data(), whole.data()}, {kind, outer, n, inner, 0, lines}));
      for (const std::vector<int64_t>& cuts :
           {std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19},
            std::vector<int64_t>{0, 5, 6, 19}, std::vector<int64_t>{0, 8, 16, 19}}) {
        std::vector<float> split = x;
        for (size_t c = 0; c + 1 < cuts.size(); ++c)
          run(vertex(Codelet::kAxisSoftmax, {split.data(), split.data()},
                     {kind, outer, n, inner, cuts[c], cuts[c + 1]}));
        CHECK(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)) == 0);
      }
      CHECK(whole != x); // every line the vertices cover was written
    }
  }
}

TEST_CASE("tensor kernels: BatchMatMul broadcasts a [1,2] batch of A against [3,1] of B") {
  const int64_t M = 2, N = 3, K = 4;
  auto a = values(2 * M * K, 7), b = values(3 * K * N, 8);
  std::vector<float> c(6 * M * N);
  const std::vector<int64_t> p{M, N, K, 2, 0, 6, 3, 2, 0, M * K, K * N, 0};
  run(vertex(Codelet::kBatchMatMul, {a.data(), b.data(), c.data()}, p));
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int r = 0; r < M; ++r) {
        for (int s = 0; s < N; ++s) {
          double sum = 0;
          for (int k = 0; k < K; ++k)
            sum +=
                a[static_cast<size_t>(j * M * K + r * K + k)] * b[static_cast<size_t>(i * K * N + k * N + s)];
          want.push_back(sum);
        }
      }
    }
  }
  check_tensor_close(c, want);
  CHECK(validate(Codelet::kBatchMatMul, {16, 36, 36}, p).ok());
  auto bad = p;
  bad[10] = K * N + 1; // the last B matrix would end past B
  CHECK(!validate(Codelet::kBatchMatMul, {16, 36, 36}, bad).ok());
}

TEST_CASE("tensor kernels: Gather with negative indices") {
  std::vector<float> x{0, 1, 2, 3, 4, 5}, idx{-1, 0, -3}, y(6); // [2,3] along axis 1
  run(vertex(Codelet::kGather, {x.data(), idx.data(), y.data()}, {2, 3, 1, 3, 0, 6, 0, 1}));
  CHECK(y == std::vector<float>{2, 0, 0, 5, 3, 3});
  CHECK(!validate(Codelet::kGather, {6, 3, 6}, {2, 3, 1, 3, 0, 7, 0, 1}).ok()); // past Y's rows
  CHECK(!validate(Codelet::kGather, {6, 3, 6}, {2, 3, 1, 3, 0, 6, 0, 2}).ok()); // past its columns
  CHECK(!validate(Codelet::kGather, {6, 3, 6}, {2, 3, 1, 3, 0, 6}).ok());       // the old layout
  CHECK(validate(Codelet::kGather, {6, 3, 6}, {2, 3, 1, 3, 0, 6, 0, 1}).ok());
}

TEST_CASE("tensor kernels: Gather and GatherGrad report the first index outside [-n, n)") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {3.0f, -4.0f, 1e30f, -1e30f, nan}) {
    CAPTURE(bad);
    std::vector<float> x{0, 1, 2, 3, 4, 5}, idx{-1, bad, 0, 7}, y(8), dy(8, 1.0f),
        dx(6); // [2,3] along axis 1
    const ipu::kernels::KernelFault fault =
        run_for_fault(vertex(Codelet::kGather, {x.data(), idx.data(), y.data()}, {2, 3, 1, 4, 0, 8, 0, 1}));
    REQUIRE(fault);
    CHECK(fault.element == 1);
    CHECK((fault.value == static_cast<double>(bad) || (std::isnan(bad) && std::isnan(fault.value))));
    CHECK(fault.low == -3);
    CHECK(fault.high == 3);
    // Every GatherGrad vertex reads every index, so each reports the same one.
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 3}, {3, 6}}) {
      const ipu::kernels::KernelFault grad = run_for_fault(
          vertex(Codelet::kGatherGrad, {dy.data(), idx.data(), dx.data()}, {2, 3, 1, 4, begin, end, 0, 1}));
      REQUIRE(grad);
      CHECK(grad.element == 1);
    }
  }
  // The message names the value as the model gave it: integers as integers, anything else as a float.
  std::vector<float> x{0, 1, 2, 3, 4, 5}, idx{-1, 17, 0}, y(6);
  auto message = [&] {
    return describe(
        run_for_fault(vertex(Codelet::kGather, {x.data(), idx.data(), y.data()}, {2, 3, 1, 3, 0, 6, 0, 1})));
  };
  CHECK(message() == "index 17 at indices[1] is outside [-3, 3)");
  idx[1] = -1e30f;
  CHECK(message() == "index -1e+30 at indices[1] is outside [-3, 3)");
  idx[1] = nan;
  CHECK(message() == "index nan at indices[1] is outside [-3, 3)");
}

TEST_CASE("tensor kernels: GatherGrad sums dY into the rows its indices read") {
  // X [2, 3] gathered along axis 1 with indices {-1, 0, 2, 1}: dX row r gets every dY column j
  // whose index names r (2 twice, as -1 and 2).
  std::vector<float> idx{-1, 0, 2, 1}, dy{1, 2, 3, 4, 10, 20, 30, 40}; // [2, 4]
  auto reference = [&](int64_t o, int64_t r) {
    float sum = 0;
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t i = static_cast<int64_t>(idx[static_cast<size_t>(j)]);
      if ((i < 0 ? i + 3 : i) == r) sum += dy[static_cast<size_t>(o * 4 + j)];
    }
    return sum;
  };
  // Two vertices owning [0, 4) and [4, 6) of dX, each from stale memory: they must overwrite.
  std::vector<float> dx(6, 99.0f);
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 4}, {4, 6}}) {
    run(vertex(Codelet::kGatherGrad, {dy.data(), idx.data(), dx.data()}, {2, 3, 1, 4, begin, end, 0, 1}));
  }
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t r = 0; r < 3; ++r)
      CHECK(dx[static_cast<size_t>(o * 3 + r)] == reference(o, r));
  }
  CHECK(dx[2] == 1 + 3);
  CHECK(validate(Codelet::kGatherGrad, {8, 4, 6}, {2, 3, 1, 4, 0, 6, 0, 1}).ok());
  CHECK(!validate(Codelet::kGatherGrad, {8, 4, 6}, {2, 3, 1, 4, 0, 7, 0, 1}).ok()); // past dX
  CHECK(!validate(Codelet::kGatherGrad, {8, 4, 6}, {2, 3, 1, 4, 0, 6, 1, 2}).ok()); // past its columns
  CHECK(!validate(Codelet::kGatherGrad, {6, 4, 6}, {2, 3, 1, 4, 0, 6, 0, 1}).ok()); // dY too small
}

// Blocks of rows × columns of one [outer, n, inner] table, in every split, give bitwise what one
// vertex gives: Gather copies the same floats, GatherGrad sums each element in index order.
TEST_CASE("tensor kernels: Gather and GatherGrad give the same result in any block split") {
  const int64_t outer = 2, n = 5, inner = 7, count = 6;
  std::vector<float> table(static_cast<size_t>(outer * n * inner)),
      dy(static_cast<size_t>(outer * count * inner));
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = 0.37f * static_cast<float>(i) - 3.1f;
  for (size_t i = 0; i < dy.size(); ++i)
    dy[i] = 0.1f / (1.0f + static_cast<float>(i % 11)) - 0.02f * static_cast<float>(i % 5);
  std::vector<float> idx{4, -1, 0, 2, 4, -5}; // row 4 three times (4, -1, 4), row 0 twice (0, -5)
  auto split = [&](Codelet codelet, int64_t rows, int64_t row_chunk, int64_t col_chunk) {
    const bool grad = codelet == Codelet::kGatherGrad;
    std::vector<float> out(static_cast<size_t>(rows * inner), 99.0f);
    for (int64_t rb = 0; rb < rows; rb += row_chunk) {
      for (int64_t cb = 0; cb < inner; cb += col_chunk) {
        run(vertex(codelet, {grad ? dy.data() : table.data(), idx.data(), out.data()},
                   {outer, n, inner, count, rb, std::min(rows, rb + row_chunk), cb,
                    std::min(inner, cb + col_chunk)}));
      }
    }
    return out;
  };
  for (Codelet codelet : {Codelet::kGather, Codelet::kGatherGrad}) {
    const int64_t rows = outer * (codelet == Codelet::kGather ? count : n);
    const std::vector<float> whole = split(codelet, rows, rows, inner);
    for (int64_t row_chunk : {1, 2, 3, 7}) {
      for (int64_t col_chunk : {1, 3, 7}) {
        CAPTURE(row_chunk);
        CAPTURE(col_chunk);
        const std::vector<float> got = split(codelet, rows, row_chunk, col_chunk);
        CHECK(std::memcmp(got.data(), whole.data(), got.size() * sizeof(float)) == 0);
      }
    }
    if (codelet == Codelet::kGather) {
      CHECK(whole[static_cast<size_t>((1 * count + 1) * inner + 2)] ==
            table[static_cast<size_t>((1 * n + 4) * inner + 2)]);
    } else {
      // dX[1, 4, 3]: dY rows 0, 1 and 4 of outer slice 1, summed in that order.
      const auto at = [&](int64_t j) { return dy[static_cast<size_t>((1 * count + j) * inner + 3)]; };
      CHECK(whole[static_cast<size_t>((1 * n + 4) * inner + 3)] == ((0.0f + at(0)) + at(1)) + at(4));
      CHECK(whole[static_cast<size_t>((0 * n + 1) * inner + 0)] == 0.0f); // a row no index names
    }
  }
}

} // namespace
