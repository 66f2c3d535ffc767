// UnaryGrad (codelet 91) against central differences of each kind's forward function in double,
// away from its kinks; at the kinks, against PyTorch's autograd (values printed by torch 1.13's
// backward of relu6, hardtanh, hardsigmoid, hardswish, leaky_relu, elu, selu and celu); and its
// validator.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include "runtime/format/tensor_kinds.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using ipu::format::UnaryKind;
using namespace ipu::kernels::testing;

// Each kind's forward function in double, of x, alpha and beta.
double gelu(double t, double, double) {
  return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0)));
}
double gelu_tanh(double t, double, double) {
  return 0.5 * t * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (t + 0.044715 * t * t * t)));
}
double elu(double t, double a, double) {
  return t > 0 ? t : a * (std::exp(t) - 1);
}
double selu(double t, double a, double g) {
  return g * elu(t, a, 0);
}
double leaky_relu(double t, double a, double) {
  return t >= 0 ? t : a * t;
}
double hard_sigmoid(double t, double a, double b) {
  return std::clamp(a * t + b, 0.0, 1.0);
}
double clip(double t, double lo, double hi) {
  return std::min(std::max(t, lo), hi);
}
double hard_swish(double t, double a, double b) {
  return t * hard_sigmoid(t, a, b);
}
double celu(double t, double a, double) {
  return t > 0 ? t : a * (std::exp(t / a) - 1);
}

struct UnaryGradCase {
  UnaryKind kind;
  float alpha, beta;
  double (*f)(double, double, double);
  std::vector<double> kinks;
};

std::vector<UnaryGradCase> cases() {
  return {
      {UnaryKind::kGelu, 0, 0, gelu, {}},
      {UnaryKind::kGeluTanh, 0, 0, gelu_tanh, {}},
      {UnaryKind::kElu, 0.7f, 0, elu, {0}},
      {UnaryKind::kSelu, 1.5f, 1.1f, selu, {0}},
      {UnaryKind::kLeakyRelu, 0.1f, 0, leaky_relu, {0}},
      {UnaryKind::kHardSigmoid, 0.4f, 0.5f, hard_sigmoid, {-1.25, 1.25}},
      {UnaryKind::kClip, -0.5f, 1.0f, clip, {-0.5, 1.0}},
      {UnaryKind::kHardSwish, 0.4f, 0.5f, hard_swish, {-1.25, 1.25}},
      {UnaryKind::kCelu, 0.8f, 0, celu, {0}},
  };
}

TEST_CASE("kernels: UnaryGrad is dY times each kind's derivative, over two ranges") {
  std::vector<float> x = values(64, 3), dy = values(64, 4);
  for (const UnaryGradCase& c : cases()) {
    CAPTURE(static_cast<int>(c.kind));
    REQUIRE(ipu::format::has_unary_grad_kernel(c.kind));
    std::vector<float> dx(x.size(), -99.0f);
    for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 23}, {23, 64}}) {
      run(Codelet::kUnaryGrad, {x.data(), dy.data(), dx.data()}, {static_cast<int64_t>(c.kind), b, e},
          {c.alpha, c.beta});
    }
    const double h = 1e-5;
    for (size_t i = 0; i < x.size(); ++i) {
      const double t = x[i];
      if (std::any_of(c.kinks.begin(), c.kinks.end(), [&](double k) { return std::abs(t - k) < 2 * h; }))
        continue;
      const double slope = (c.f(t + h, c.alpha, c.beta) - c.f(t - h, c.alpha, c.beta)) / (2 * h);
      const double want = static_cast<double>(dy[i]) * slope;
      INFO("x " << t << ": got " << dx[i] << ", want " << want);
      CHECK(std::abs(dx[i] - want) <= 1e-5 * (1 + std::abs(want)));
    }
    CHECK(
        validate(Codelet::kUnaryGrad, {64, 64, 64}, {static_cast<int64_t>(c.kind), 0, 64}, {c.alpha, c.beta})
            .ok());
  }
}

// torch: relu6 and hardtanh pass nothing at either bound (torch.clamp would pass both); hardsigmoid
// nothing at ±3, hardswish x/3 + ½ at both; leaky_relu the slope at 0; elu alpha, selu
// scale·alpha and celu 1 at 0.
TEST_CASE("kernels: UnaryGrad takes PyTorch's derivative at each kink") {
  struct Kink {
    UnaryKind kind;
    float alpha, beta, x, derivative;
  };
  const float selu_alpha = 1.67326319217681884765625f, selu_gamma = 1.05070102214813232421875f;
  const Kink kinks[] = {
      {UnaryKind::kClip, 0, 6, 0, 0},
      {UnaryKind::kClip, 0, 6, 6, 0},
      {UnaryKind::kClip, 0, 6, 3, 1},
      {UnaryKind::kHardSigmoid, 1.0f / 6, 0.5f, -3, 0},
      {UnaryKind::kHardSigmoid, 1.0f / 6, 0.5f, 3, 0},
      {UnaryKind::kHardSigmoid, 1.0f / 6, 0.5f, 0, 1.0f / 6},
      {UnaryKind::kLeakyRelu, 0.1f, 0, 0, 0.1f},
      {UnaryKind::kElu, 0.7f, 0, 0, 0.7f},
      {UnaryKind::kSelu, selu_alpha, selu_gamma, 0, selu_alpha * selu_gamma},
      {UnaryKind::kHardSwish, 1.0f / 6, 0.5f, -3, -0.5f},
      {UnaryKind::kHardSwish, 1.0f / 6, 0.5f, 3, 1.5f},
      {UnaryKind::kHardSwish, 1.0f / 6, 0.5f, -3.5f, 0},
      {UnaryKind::kHardSwish, 1.0f / 6, 0.5f, 3.5f, 1},
      {UnaryKind::kCelu, 0.8f, 0, 0, 1},
  };
  for (const Kink& k : kinks) {
    CAPTURE(static_cast<int>(k.kind));
    CAPTURE(k.x);
    float x = k.x, dy = 2.0f, dx = -99.0f;
    run(Codelet::kUnaryGrad, {&x, &dy, &dx}, {static_cast<int64_t>(k.kind), 0, 1}, {k.alpha, k.beta});
    CHECK(dx == doctest::Approx(2.0 * k.derivative).epsilon(1e-6));
  }
}

TEST_CASE("kernels: UnaryGrad's validator refuses kinds without a gradient kernel, ranges and sizes") {
  const auto clip = static_cast<int64_t>(UnaryKind::kClip);
  CHECK(validate(Codelet::kUnaryGrad, {8, 8, 8}, {clip, 0, 8}, {0, 6}).ok());
  CHECK(
      !validate(Codelet::kUnaryGrad, {8, 8, 8}, {static_cast<int64_t>(UnaryKind::kExp), 0, 8}, {0, 0}).ok());
  CHECK(!validate(Codelet::kUnaryGrad, {8, 8, 8}, {ipu::format::kUnaryKindCount, 0, 8}, {0, 0}).ok());
  CHECK(!validate(Codelet::kUnaryGrad, {8, 8, 8}, {-1, 0, 8}, {0, 0}).ok());
  CHECK(!validate(Codelet::kUnaryGrad, {8, 8, 8}, {clip, 0, 9}, {0, 6}).ok()); // past the end
  CHECK(!validate(Codelet::kUnaryGrad, {8, 7, 8}, {clip, 0, 8}, {0, 6}).ok()); // dY too small
  CHECK(!validate(Codelet::kUnaryGrad, {8, 8, 7}, {clip, 0, 7}, {0, 6}).ok()); // dX too small
  CHECK(!validate(Codelet::kUnaryGrad, {8, 8, 8}, {clip, 0, 8}, {0}).ok());    // one fparam
}

} // namespace
