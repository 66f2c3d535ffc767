// Every kernel of runtime/kernels run directly on PreparedVertex values and compared with a
// plain double-precision reference written here; and try_merge, which the engine uses to
// coalesce adjacent vertices into one host task.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "runtime/format/host_contract.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::ActivationKind;
using ipu::format::Codelet;
using ipu::kernels::find_kernel;
using ipu::kernels::KernelDef;
using ipu::kernels::PreparedVertex;
using namespace ipu::kernels::testing;
using ipu::kernels::try_merge;

bool close(double got, double want, double rel = 1e-5, double abs = 1e-6) {
  return std::abs(got - want) <= abs + rel * std::abs(want);
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double rel = 1e-5,
                 double abs = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(close(got[i], want[i], rel, abs));
  }
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

constexpr float kSentinel = -12345.0f;

// ---------------------------------------------------------------------------------------------
// MatMul

struct MatMulCase {
  int64_t M, N, K;
  bool trans_a, trans_b;
};

// op(A)[i,k] for A stored row-major as [M,K] or, transposed, [K,M].
double op_a(const std::vector<float>& a, const MatMulCase& c, int64_t i, int64_t k) {
  return c.trans_a ? a[static_cast<size_t>(k * c.M + i)] : a[static_cast<size_t>(i * c.K + k)];
}
double op_b(const std::vector<float>& b, const MatMulCase& c, int64_t k, int64_t j) {
  return c.trans_b ? b[static_cast<size_t>(j * c.K + k)] : b[static_cast<size_t>(k * c.N + j)];
}

TEST_CASE("kernels: MatMul on blocks, all transpose combinations, with and without accumulate") {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (bool accumulate : {false, true}) {
        const MatMulCase c{5, 7, 3, trans_a, trans_b};
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        CAPTURE(accumulate);
        const auto a = values(static_cast<size_t>(c.M * c.K), 1);
        const auto b = values(static_cast<size_t>(c.K * c.N), 2);
        const auto c0 = values(static_cast<size_t>(c.M * c.N), 3);
        std::vector<float> out = c0;
        // Four blocks that tile the output unevenly, plus an empty one.
        const int64_t blocks[][4] = {{0, 2, 0, 3}, {0, 2, 3, 7}, {2, 5, 0, 4}, {2, 5, 4, 7}, {1, 1, 0, 7}};
        for (const auto& blk : blocks) {
          run(vertex(Codelet::kMatMul,
                     {const_cast<float*>(a.data()), const_cast<float*>(b.data()), out.data()},
                     {c.M, c.N, c.K, trans_a, trans_b, blk[0], blk[1], blk[2], blk[3], accumulate}));
        }
        std::vector<double> want(out.size());
        for (int64_t i = 0; i < c.M; ++i) {
          for (int64_t j = 0; j < c.N; ++j) {
            double sum = accumulate ? c0[static_cast<size_t>(i * c.N + j)] : 0.0;
            for (int64_t k = 0; k < c.K; ++k)
              sum += op_a(a, c, i, k) * op_b(b, c, k, j);
            want[static_cast<size_t>(i * c.N + j)] = sum;
          }
        }
        check_close(out, want);
      }
    }
  }
}

TEST_CASE("kernels: MatMul touches only its block and overwrites stale values without accumulate") {
  const MatMulCase c{4, 6, 5, false, true};
  const auto a = values(static_cast<size_t>(c.M * c.K), 4);
  const auto b = values(static_cast<size_t>(c.K * c.N), 5);
  std::vector<float> out(static_cast<size_t>(c.M * c.N), kSentinel);
  // The block is rows [1,3), columns [2,5); its elements start as NaN to prove beta = 0 ignores them.
  for (int64_t i = 1; i < 3; ++i) {
    for (int64_t j = 2; j < 5; ++j)
      out[static_cast<size_t>(i * c.N + j)] = std::numeric_limits<float>::quiet_NaN();
  }
  run(vertex(Codelet::kMatMul, {const_cast<float*>(a.data()), const_cast<float*>(b.data()), out.data()},
             {c.M, c.N, c.K, 0, 1, 1, 3, 2, 5, 0}));
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      const float got = out[static_cast<size_t>(i * c.N + j)];
      if (i >= 1 && i < 3 && j >= 2 && j < 5) {
        double want = 0.0;
        for (int64_t k = 0; k < c.K; ++k)
          want += op_a(a, c, i, k) * op_b(b, c, k, j);
        CHECK(close(got, want));
      } else {
        CHECK(got == kSentinel);
      }
    }
  }
}

// A folded bias and Relu (compiler/passes/fuse_epilogues.h): C = max(0, op(A)·op(B) + bias) on
// uneven blocks, single-row ones (SGEMV) among them, over stale NaNs the bias must replace.
TEST_CASE("kernels: MatMul with a folded bias and Relu, all transpose combinations") {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (bool relu : {false, true}) {
        const MatMulCase c{4, 7, 3, trans_a, trans_b};
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        CAPTURE(relu);
        const auto a = values(static_cast<size_t>(c.M * c.K), 11);
        const auto b = values(static_cast<size_t>(c.K * c.N), 12);
        const auto bias = values(static_cast<size_t>(c.N), 13);
        std::vector<float> out(static_cast<size_t>(c.M * c.N), std::numeric_limits<float>::quiet_NaN());
        const int64_t blocks[][4] = {{0, 1, 0, 7}, {1, 3, 0, 4}, {1, 3, 4, 7}, {3, 4, 2, 7}, {3, 4, 0, 2}};
        for (const auto& blk : blocks) {
          run(vertex(Codelet::kMatMul,
                     {const_cast<float*>(a.data()), const_cast<float*>(b.data()),
                      const_cast<float*>(bias.data()), out.data()},
                     {c.M, c.N, c.K, trans_a, trans_b, blk[0], blk[1], blk[2], blk[3], 0, relu}));
        }
        std::vector<double> want(out.size());
        for (int64_t i = 0; i < c.M; ++i) {
          for (int64_t j = 0; j < c.N; ++j) {
            double sum = bias[static_cast<size_t>(j)];
            for (int64_t k = 0; k < c.K; ++k)
              sum += op_a(a, c, i, k) * op_b(b, c, k, j);
            want[static_cast<size_t>(i * c.N + j)] = relu ? std::max(sum, 0.0) : sum;
          }
        }
        check_close(out, want);
      }
    }
  }
}

// Blocks of one row take SGEMV (batch 1): every transpose form, a column block that starts
// inside the row, accumulate, and stale NaNs that beta = 0 must ignore.
TEST_CASE("kernels: MatMul on single-row blocks, all transpose combinations, with and without accumulate") {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (bool accumulate : {false, true}) {
        const MatMulCase c{3, 6, 5, trans_a, trans_b};
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        CAPTURE(accumulate);
        const auto a = values(static_cast<size_t>(c.M * c.K), 6);
        const auto b = values(static_cast<size_t>(c.K * c.N), 7);
        std::vector<float> c0 = values(static_cast<size_t>(c.M * c.N), 8);
        if (!accumulate) std::fill(c0.begin(), c0.end(), std::numeric_limits<float>::quiet_NaN());
        std::vector<float> out = c0;
        for (int64_t i = 0; i < c.M; ++i) {
          for (const auto& cols : {std::pair<int64_t, int64_t>{0, 2}, {2, 6}}) {
            run(vertex(Codelet::kMatMul,
                       {const_cast<float*>(a.data()), const_cast<float*>(b.data()), out.data()},
                       {c.M, c.N, c.K, trans_a, trans_b, i, i + 1, cols.first, cols.second, accumulate}));
          }
        }
        std::vector<double> want(out.size());
        for (int64_t i = 0; i < c.M; ++i) {
          for (int64_t j = 0; j < c.N; ++j) {
            double sum = accumulate ? c0[static_cast<size_t>(i * c.N + j)] : 0.0;
            for (int64_t k = 0; k < c.K; ++k)
              sum += op_a(a, c, i, k) * op_b(b, c, k, j);
            want[static_cast<size_t>(i * c.N + j)] = sum;
          }
        }
        check_close(out, want);
      }
    }
  }
}

TEST_CASE("kernels: MatMul with a 1x1 inner dimension and a single row") {
  std::vector<float> a = {2.0f}, b = {1.0f, -2.0f, 0.5f}, out(3, 7.0f);
  run(vertex(Codelet::kMatMul, {a.data(), b.data(), out.data()}, {1, 3, 1, 0, 0, 0, 1, 0, 3, 1}));
  check_close(out, {9.0, 3.0, 8.0});
}

// ---------------------------------------------------------------------------------------------
// Elementwise

TEST_CASE("kernels: BiasAdd on a row range, in place and out of place") {
  const int64_t M = 4, N = 3;
  const auto x = values(M * N, 6);
  const auto bias = values(N, 7);
  std::vector<float> y(M * N, kSentinel);
  run(vertex(Codelet::kBiasAdd, {const_cast<float*>(x.data()), const_cast<float*>(bias.data()), y.data()},
             {M, N, 1, 3}));
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t c = 0; c < N; ++c) {
      const size_t i = static_cast<size_t>(r * N + c);
      if (r >= 1 && r < 3) {
        CHECK(close(y[i], static_cast<double>(x[i]) + bias[static_cast<size_t>(c)]));
      } else {
        CHECK(y[i] == kSentinel);
      }
    }
  }
  std::vector<float> inplace = x;
  run(vertex(Codelet::kBiasAdd, {inplace.data(), const_cast<float*>(bias.data()), inplace.data()},
             {M, N, 0, M}));
  for (size_t i = 0; i < inplace.size(); ++i)
    CHECK(close(inplace[i], static_cast<double>(x[i]) + bias[i % N]));
}

double activate(ActivationKind kind, double x) {
  switch (kind) {
  case ActivationKind::kRelu:
    return x > 0 ? x : 0;
  case ActivationKind::kSigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case ActivationKind::kTanh:
    return std::tanh(x);
  }
  return NAN;
}

double derivative(ActivationKind kind, double x) {
  switch (kind) {
  case ActivationKind::kRelu:
    return x > 0 ? 1 : 0;
  case ActivationKind::kSigmoid: {
    const double s = activate(kind, x);
    return s * (1 - s);
  }
  case ActivationKind::kTanh: {
    const double t = std::tanh(x);
    return 1 - t * t;
  }
  }
  return NAN;
}

const char* kind_name(ActivationKind kind) {
  return kind == ActivationKind::kRelu ? "relu" : kind == ActivationKind::kSigmoid ? "sigmoid" : "tanh";
}

TEST_CASE("kernels: Activation and ActivationGrad for relu, sigmoid and tanh") {
  std::vector<float> x = values(40, 8);
  // Edges: zero, large magnitudes (saturation, exp overflow), tiny values.
  for (float e : {0.0f, -0.0f, 30.0f, -30.0f, 100.0f, -100.0f, 1e-6f, -1e-6f})
    x.push_back(e);
  const int64_t n = static_cast<int64_t>(x.size());
  const auto dy = values(x.size(), 9);
  for (ActivationKind kind : {ActivationKind::kRelu, ActivationKind::kSigmoid, ActivationKind::kTanh}) {
    CAPTURE(kind_name(kind));
    std::vector<float> y(x.size(), kSentinel);
    // Two vertices split the range; the elements after `end` stay untouched.
    const int64_t end = n - 1;
    run(vertex(Codelet::kActivation, {x.data(), y.data()}, {static_cast<int64_t>(kind), 0, 10}));
    run(vertex(Codelet::kActivation, {x.data(), y.data()}, {static_cast<int64_t>(kind), 10, end}));
    CHECK(y.back() == kSentinel);
    for (int64_t i = 0; i < end; ++i) {
      INFO("x = " << x[static_cast<size_t>(i)]);
      CHECK(close(y[static_cast<size_t>(i)], activate(kind, x[static_cast<size_t>(i)]), 1e-6, 1e-7));
    }
    y.back() = static_cast<float>(activate(kind, x.back()));

    std::vector<float> dx(x.size(), kSentinel);
    run(vertex(Codelet::kActivationGrad, {y.data(), const_cast<float*>(dy.data()), dx.data()},
               {static_cast<int64_t>(kind), 0, n}));
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      INFO("x = " << x[k]);
      CHECK(close(dx[k], dy[k] * derivative(kind, x[k]), 1e-5, 1e-6));
    }

    // In place: y = f(y).
    std::vector<float> inplace = x;
    run(vertex(Codelet::kActivation, {inplace.data(), inplace.data()}, {static_cast<int64_t>(kind), 0, n}));
    for (size_t k = 0; k < x.size(); ++k)
      CHECK(close(inplace[k], activate(kind, x[k]), 1e-6, 1e-7));
  }
}

// torch.optim.Adam / AdamW's step in double, the oracle of the Adam codelet (docs/training.md).
void adam_reference(std::vector<double>& w, const std::vector<float>& g, double scale, std::vector<double>& m,
                    std::vector<double>& v, double t, double lr, double beta1, double beta2, double eps,
                    double decay, bool decoupled) {
  for (size_t i = 0; i < w.size(); ++i) {
    double grad = scale * g[i];
    if (decoupled) {
      w[i] -= lr * decay * w[i];
    } else {
      grad += decay * w[i];
    }
    m[i] = beta1 * m[i] + (1 - beta1) * grad;
    v[i] = beta2 * v[i] + (1 - beta2) * grad * grad;
    const double m_hat = m[i] / (1 - std::pow(beta1, t)), v_hat = v[i] / (1 - std::pow(beta2, t));
    w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

TEST_CASE("kernels: Adam and AdamW follow torch's equations, and StepCount advances the step") {
  const size_t n = 12;
  const auto w0 = values(n, 20), g = values(n, 21);
  const float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-7f, decay = 0.05f;
  auto h = hyper({{H::kLearningRate, lr},
                  {H::kBeta1, beta1},
                  {H::kBeta2, beta2},
                  {H::kEpsilon, eps},
                  {H::kWeightDecay, decay}});
  for (int decoupled = 0; decoupled < 2; ++decoupled) {
    CAPTURE(decoupled);
    std::vector<float> w = w0, m(n, 0.0f), v(n, 0.0f), step = {0.0f};
    std::vector<double> want_w(w0.begin(), w0.end()), want_m(n, 0.0), want_v(n, 0.0);
    // Three updates, each split over two vertices that read the same step, then StepCount.
    for (int t = 1; t <= 3; ++t) {
      for (int64_t half = 0; half < 2; ++half) {
        run(vertex(Codelet::kAdam,
                   {w.data(), const_cast<float*>(g.data()), m.data(), v.data(), step.data(), h.data()},
                   {half * 6, half * 6 + 6, 0, decoupled}, {1.0f}));
      }
      run(vertex(Codelet::kStepCount, {step.data()}, {1}));
      adam_reference(want_w, g, 1.0, want_m, want_v, t, lr, beta1, beta2, eps, decay, decoupled != 0);
    }
    CHECK(step[0] == 3.0f);
    check_close(m, want_m);
    check_close(v, want_v);
    check_close(w, want_w);
  }
  SUBCASE("from an accumulator: the gradient is scaled, then cleared on the vertex's range") {
    std::vector<float> w = w0, acc = g, m(n, 0.0f), v(n, 0.0f), step = {4.0f};
    h[H::kWeightDecay] = 0.0f;
    run(vertex(Codelet::kAdam, {w.data(), acc.data(), m.data(), v.data(), step.data(), h.data()},
               {3, 7, 1, 0}, {0.25f}));
    std::vector<double> want_w(w0.begin(), w0.end()), want_m(n, 0.0), want_v(n, 0.0);
    adam_reference(want_w, g, 0.25, want_m, want_v, 5, lr, beta1, beta2, eps, 0.0, false);
    for (size_t i = 0; i < n; ++i) {
      const bool in_range = i >= 3 && i < 7;
      CHECK(close(w[i], in_range ? want_w[i] : w0[i]));
      CHECK(acc[i] == (in_range ? 0.0f : g[i]));
    }
  }
}

// torch.optim.SGD's step in double (buffer b; the kernel keeps V = −lr·b), the oracle of Sgd.
void sgd_reference(std::vector<double>& w, const std::vector<float>& g, std::vector<double>& b, int t,
                   double lr, double momentum, double dampening, double decay, bool nesterov) {
  for (size_t i = 0; i < w.size(); ++i) {
    double grad = g[i] + decay * w[i];
    if (momentum != 0) {
      b[i] = t == 1 ? grad : momentum * b[i] + (1 - dampening) * grad;
      grad = nesterov ? grad + momentum * b[i] : b[i];
    }
    w[i] -= lr * grad;
  }
}

TEST_CASE("kernels: Sgd follows torch.optim.SGD with dampening, Nesterov and weight decay") {
  const size_t n = 12;
  const auto w0 = values(n, 30), g = values(n, 31);
  const float lr = 0.1f, momentum = 0.9f, decay = 0.01f;
  struct Case {
    float dampening;
    int nesterov;
  };
  for (const Case c : {Case{0.0f, 1}, Case{0.5f, 0}, Case{0.0f, 0}}) {
    CAPTURE(c.dampening);
    CAPTURE(c.nesterov);
    std::vector<float> w = w0, velocity(n, 0.0f), step = {0.0f};
    std::vector<double> want_w(w0.begin(), w0.end()), want_b(n, 0.0);
    auto h = hyper({{H::kLearningRate, lr},
                    {H::kMomentum, momentum},
                    {H::kDampening, c.dampening},
                    {H::kWeightDecay, decay}});
    std::vector<void*> operands = {w.data(), const_cast<float*>(g.data()), velocity.data()};
    if (c.dampening != 0.0f) operands.push_back(step.data());
    operands.push_back(h.data());
    for (int t = 1; t <= 3; ++t) {
      for (int64_t half = 0; half < 2; ++half) {
        run(vertex(Codelet::kSgd, operands, {half * 6, half * 6 + 6, 0, c.nesterov}, {1.0f}));
      }
      if (c.dampening != 0.0f) run(vertex(Codelet::kStepCount, {step.data()}, {1}));
      sgd_reference(want_w, g, want_b, t, lr, momentum, c.dampening, decay, c.nesterov != 0);
    }
    check_close(w, want_w);
    std::vector<double> want_v(n);
    for (size_t i = 0; i < n; ++i)
      want_v[i] = -lr * want_b[i];
    check_close(velocity, want_v);
  }
  SUBCASE("without momentum: weight decay alone, no state") {
    std::vector<float> w = w0;
    auto h = hyper({{H::kLearningRate, lr}, {H::kWeightDecay, decay}});
    run(vertex(Codelet::kSgd, {w.data(), const_cast<float*>(g.data()), h.data()}, {0, 12, 0, 0}, {1.0f}));
    std::vector<double> want_w(w0.begin(), w0.end()), unused(n, 0.0);
    sgd_reference(want_w, g, unused, 1, lr, 0.0, 0.0, decay, false);
    check_close(w, want_w);
  }
}

// torch.optim.RMSprop's step in double, the oracle of RmsProp.
void rms_prop_reference(std::vector<double>& w, const std::vector<float>& g, std::vector<double>& square,
                        std::vector<double>& buffer, std::vector<double>& mean, double lr, double rho,
                        double momentum, double eps, double decay, bool centered) {
  for (size_t i = 0; i < w.size(); ++i) {
    const double grad = g[i] + decay * w[i];
    square[i] = rho * square[i] + (1 - rho) * grad * grad;
    double variance = square[i];
    if (centered) {
      mean[i] = rho * mean[i] + (1 - rho) * grad;
      variance -= mean[i] * mean[i];
    }
    const double step = grad / (std::sqrt(variance) + eps);
    if (momentum != 0) {
      buffer[i] = momentum * buffer[i] + step;
      w[i] -= lr * buffer[i];
    } else {
      w[i] -= lr * step;
    }
  }
}

TEST_CASE("kernels: RmsProp follows torch.optim.RMSprop, plain, with momentum and centered") {
  const size_t n = 12;
  const auto w0 = values(n, 40), g = values(n, 41);
  const float lr = 0.01f, rho = 0.9f, eps = 1e-7f, decay = 0.01f;
  for (const float momentum : {0.0f, 0.5f}) {
    for (int centered = 0; centered < 2; ++centered) {
      CAPTURE(momentum);
      CAPTURE(centered);
      std::vector<float> w = w0, square(n, 0.0f), buffer(n, 0.0f), mean(n, 0.0f);
      std::vector<double> want_w(w0.begin(), w0.end()), want_square(n, 0.0), want_buffer(n, 0.0),
          want_mean(n, 0.0);
      std::vector<void*> operands = {w.data(), const_cast<float*>(g.data()), square.data()};
      if (momentum != 0.0f) operands.push_back(buffer.data());
      if (centered != 0) operands.push_back(mean.data());
      auto h = hyper({{H::kLearningRate, lr},
                      {H::kRho, rho},
                      {H::kMomentum, momentum},
                      {H::kEpsilon, eps},
                      {H::kWeightDecay, decay}});
      operands.push_back(h.data());
      for (int t = 1; t <= 3; ++t) {
        run(vertex(Codelet::kRmsProp, operands, {0, 12, 0, centered}, {1.0f}));
        rms_prop_reference(want_w, g, want_square, want_buffer, want_mean, lr, rho, momentum, eps, decay,
                           centered != 0);
      }
      check_close(square, want_square);
      check_close(w, want_w);
    }
  }
}

TEST_CASE("kernels: Adagrad and AdaMax follow torch's equations") {
  const size_t n = 12;
  const auto w0 = values(n, 50), g = values(n, 51);
  const float lr = 0.01f, eps = 1e-7f, decay = 0.01f, beta1 = 0.9f, beta2 = 0.999f;
  auto h = hyper({{H::kLearningRate, lr},
                  {H::kBeta1, beta1},
                  {H::kBeta2, beta2},
                  {H::kEpsilon, eps},
                  {H::kWeightDecay, decay}});
  SUBCASE("Adagrad: a sum of squares from the initial accumulator value") {
    std::vector<float> w = w0, sum(n, 0.1f);
    std::vector<double> want_w(w0.begin(), w0.end()), want_sum(n, 0.1);
    for (int t = 1; t <= 3; ++t) {
      run(vertex(Codelet::kAdagrad, {w.data(), const_cast<float*>(g.data()), sum.data(), h.data()},
                 {0, 12, 0}, {1.0f}));
      for (size_t i = 0; i < n; ++i) {
        const double grad = g[i] + decay * want_w[i];
        want_sum[i] += grad * grad;
        want_w[i] -= lr * grad / (std::sqrt(want_sum[i]) + eps);
      }
    }
    check_close(sum, want_sum);
    check_close(w, want_w);
  }
  SUBCASE("AdaMax: the infinity norm, bias-corrected first moment and the step count") {
    std::vector<float> w = w0, m(n, 0.0f), u(n, 0.0f), step = {0.0f};
    std::vector<double> want_w(w0.begin(), w0.end()), want_m(n, 0.0), want_u(n, 0.0);
    for (int t = 1; t <= 3; ++t) {
      for (int64_t half = 0; half < 2; ++half) {
        run(vertex(Codelet::kAdaMax,
                   {w.data(), const_cast<float*>(g.data()), m.data(), u.data(), step.data(), h.data()},
                   {half * 6, half * 6 + 6, 0}, {1.0f}));
      }
      run(vertex(Codelet::kStepCount, {step.data()}, {1}));
      for (size_t i = 0; i < n; ++i) {
        const double grad = g[i] + decay * want_w[i];
        want_m[i] = beta1 * want_m[i] + (1 - beta1) * grad;
        want_u[i] = std::max(beta2 * want_u[i], std::abs(grad) + eps);
        want_w[i] -= lr / (1 - std::pow(beta1, t)) * want_m[i] / want_u[i];
      }
    }
    CHECK(step[0] == 3.0f);
    check_close(m, want_m);
    check_close(u, want_u);
    check_close(w, want_w);
  }
}

TEST_CASE("kernels: SgdMomentum with and without velocity") {
  const size_t n = 12;
  const auto w0 = values(n, 10), g = values(n, 11), v0 = values(n, 12);
  const float lr = 0.05f, momentum = 0.9f;
  auto h = hyper({{H::kLearningRate, lr}, {H::kMomentum, momentum}});
  SUBCASE("plain SGD: W -= lr * G on its range only") {
    std::vector<float> w = w0;
    run(vertex(Codelet::kSgdMomentum, {w.data(), const_cast<float*>(g.data()), h.data()}, {2, 9, 0}, {1.0f}));
    for (size_t i = 0; i < n; ++i) {
      if (i >= 2 && i < 9) {
        CHECK(close(w[i], static_cast<double>(w0[i]) - static_cast<double>(lr) * g[i]));
      } else {
        CHECK(w[i] == w0[i]);
      }
    }
  }
  SUBCASE("momentum, Keras form: V = m*V - lr*G; W += V, twice") {
    std::vector<float> w = w0, v = v0;
    std::vector<double> want_w(w0.begin(), w0.end()), want_v(v0.begin(), v0.end());
    for (int step = 0; step < 2; ++step) {
      run(vertex(Codelet::kSgdMomentum, {w.data(), const_cast<float*>(g.data()), v.data(), h.data()},
                 {0, 6, 0}, {1.0f}));
      run(vertex(Codelet::kSgdMomentum, {w.data(), const_cast<float*>(g.data()), v.data(), h.data()},
                 {6, 12, 0}, {1.0f}));
      for (size_t i = 0; i < n; ++i) {
        want_v[i] = static_cast<double>(momentum) * want_v[i] - static_cast<double>(lr) * g[i];
        want_w[i] += want_v[i];
      }
    }
    check_close(v, want_v);
    check_close(w, want_w);
  }
  SUBCASE("from an accumulator: the gradient is scaled, then cleared on the vertex's range") {
    std::vector<float> w = w0, acc = g;
    run(vertex(Codelet::kSgdMomentum, {w.data(), acc.data(), h.data()}, {3, 7, 1}, {0.25f}));
    for (size_t i = 0; i < n; ++i) {
      const bool in_range = i >= 3 && i < 7;
      CHECK(
          close(w[i], in_range ? static_cast<double>(w0[i]) - static_cast<double>(lr) * 0.25 * g[i] : w0[i]));
      CHECK(acc[i] == (in_range ? 0.0f : g[i]));
    }
  }
}

TEST_CASE("kernels: Accumulate adds a gradient into its accumulator on its range") {
  const size_t n = 10;
  const auto a0 = values(n, 20), g = values(n, 21);
  std::vector<float> a = a0;
  run(vertex(Codelet::kAccumulate, {a.data(), const_cast<float*>(g.data())}, {1, 8}, {}));
  for (size_t i = 0; i < n; ++i) {
    CHECK(close(a[i], i >= 1 && i < 8 ? static_cast<double>(a0[i]) + g[i] : a0[i]));
  }
}

// ---------------------------------------------------------------------------------------------
// Row kernels

std::vector<double> softmax_ref(const std::vector<float>& x, int64_t M, int64_t C) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < M; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < C; ++c)
      max = std::max(max, static_cast<double>(x[static_cast<size_t>(r * C + c)]));
    for (int64_t c = 0; c < C; ++c)
      sum += std::exp(x[static_cast<size_t>(r * C + c)] - max);
    for (int64_t c = 0; c < C; ++c)
      y[static_cast<size_t>(r * C + c)] = std::exp(x[static_cast<size_t>(r * C + c)] - max) / sum;
  }
  return y;
}

TEST_CASE("kernels: Softmax is stable and SoftmaxGrad matches the Jacobian product") {
  const int64_t M = 4, C = 5;
  std::vector<float> x = values(M * C, 13);
  // Row 2: huge logits that overflow a naive exp; row 3: equal logits.
  for (int64_t c = 0; c < C; ++c)
    x[static_cast<size_t>(2 * C + c)] = 1000.0f + static_cast<float>(c);
  for (int64_t c = 0; c < C; ++c)
    x[static_cast<size_t>(3 * C + c)] = -7.0f;
  std::vector<float> y(x.size(), kSentinel);
  run(vertex(Codelet::kSoftmax, {x.data(), y.data()}, {M, C, 0, 1}));
  run(vertex(Codelet::kSoftmax, {x.data(), y.data()}, {M, C, 1, M}));
  const auto want = softmax_ref(x, M, C);
  check_close(y, want, 1e-5, 1e-7);
  for (int64_t r = 0; r < M; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < C; ++c)
      sum += y[static_cast<size_t>(r * C + c)];
    CHECK(close(sum, 1.0, 1e-5));
  }

  const auto dy = values(x.size(), 14);
  std::vector<float> dx(x.size(), kSentinel);
  run(vertex(Codelet::kSoftmaxGrad, {y.data(), const_cast<float*>(dy.data()), dx.data()}, {M, C, 1, 3}));
  for (int64_t r = 0; r < M; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < C; ++c)
      dot += static_cast<double>(dy[static_cast<size_t>(r * C + c)]) * want[static_cast<size_t>(r * C + c)];
    for (int64_t c = 0; c < C; ++c) {
      const size_t i = static_cast<size_t>(r * C + c);
      CAPTURE(r);
      CAPTURE(c);
      if (r >= 1 && r < 3) {
        CHECK(close(dx[i], want[i] * (dy[i] - dot), 1e-4, 1e-6));
      } else {
        CHECK(dx[i] == kSentinel);
      }
    }
  }
}

constexpr double kEpsilon = 1e-7;

double sce_ref(const std::vector<float>& s, const std::vector<int32_t>& labels, int64_t M, int64_t C,
               bool from_logits) {
  double total = 0;
  const auto p = from_logits ? softmax_ref(s, M, C) : std::vector<double>(s.begin(), s.end());
  for (int64_t r = 0; r < M; ++r) {
    const double q = p[static_cast<size_t>(r * C + labels[static_cast<size_t>(r)])];
    total -= from_logits ? std::log(q) : std::log(std::clamp(q, kEpsilon, 1 - kEpsilon));
  }
  return total / static_cast<double>(M);
}

std::vector<double> sce_grad_ref(const std::vector<float>& s, const std::vector<int32_t>& labels, int64_t M,
                                 int64_t C, bool from_logits) {
  std::vector<double> g(s.size(), 0.0);
  const auto p = softmax_ref(s, M, C);
  for (int64_t r = 0; r < M; ++r) {
    const size_t l = static_cast<size_t>(r * C + labels[static_cast<size_t>(r)]);
    if (from_logits) {
      for (int64_t c = 0; c < C; ++c)
        g[static_cast<size_t>(r * C + c)] = p[static_cast<size_t>(r * C + c)] / M;
      g[l] -= 1.0 / M;
    } else {
      // d/dp of -log(clip(p)): zero where the clip is active.
      const double q = s[l];
      if (q > kEpsilon && q < 1 - kEpsilon) g[l] = -1.0 / (M * q);
    }
  }
  return g;
}

TEST_CASE("kernels: SparseCrossEntropy and its gradient from logits") {
  const int64_t M = 3, C = 4;
  const auto s = values(M * C, 15);
  const std::vector<int32_t> labels = {2, 0, 3};
  float loss = kSentinel;
  run(vertex(Codelet::kSparseCrossEntropy,
             {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), &loss}, {M, C, 1}));
  CHECK(close(loss, sce_ref(s, labels, M, C, true)));

  std::vector<float> ds(s.size(), kSentinel);
  run(vertex(Codelet::kSparseCrossEntropyGrad,
             {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), ds.data()},
             {M, C, 1, 0, 2}));
  run(vertex(Codelet::kSparseCrossEntropyGrad,
             {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), ds.data()},
             {M, C, 1, 2, 3}));
  check_close(ds, sce_grad_ref(s, labels, M, C, true), 1e-5, 1e-7);
  // Each row's gradient sums to zero.
  for (int64_t r = 0; r < M; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < C; ++c)
      sum += ds[static_cast<size_t>(r * C + c)];
    CHECK(std::abs(sum) < 1e-6);
  }
}

TEST_CASE("kernels: SparseCrossEntropy and its gradient from probabilities clip at 1e-7 like Keras") {
  const int64_t M = 4, C = 3;
  // Row 0 ordinary; row 1 puts 0 on the label (clipped to 1e-7); row 2 puts 1 on the label
  // (clipped to 1 - 1e-7); row 3 puts a value below epsilon on the label.
  const std::vector<float> p = {0.2f, 0.5f, 0.3f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.5f, 1e-9f, 0.5f};
  const std::vector<int32_t> labels = {1, 0, 2, 1};
  float loss = kSentinel;
  run(vertex(Codelet::kSparseCrossEntropy,
             {const_cast<float*>(p.data()), const_cast<int32_t*>(labels.data()), &loss}, {M, C, 0}));
  const double want = sce_ref(p, labels, M, C, false);
  CHECK(std::isfinite(loss));
  CHECK(close(loss, want, 1e-5));
  // -log(0.5) - 2 log(1e-7) - log(1 - 1e-7), averaged.
  CHECK(close(want, (-std::log(0.5) - 2 * std::log(1e-7) - std::log(1 - 1e-7)) / 4, 1e-12));

  std::vector<float> dp(p.size(), kSentinel);
  run(vertex(Codelet::kSparseCrossEntropyGrad,
             {const_cast<float*>(p.data()), const_cast<int32_t*>(labels.data()), dp.data()},
             {M, C, 0, 0, M}));
  check_close(dp, sce_grad_ref(p, labels, M, C, false), 1e-5, 1e-7);
  CHECK(close(dp[1], -1.0 / (4 * 0.5)));
  CHECK(dp[3] == 0.0f);  // clipped at 0
  CHECK(dp[8] == 0.0f);  // clipped at 1
  CHECK(dp[10] == 0.0f); // clipped below epsilon
}

TEST_CASE("kernels: SparseCrossEntropy, its gradient and CountCorrect report the first label out of range") {
  const int64_t M = 4, C = 4;
  const auto s = values(M * C, 16);
  // -1 is format::kPaddedRowLabel, not out of range (below).
  for (int32_t bad :
       {-2, 4, 1000000, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}) {
    CAPTURE(bad);
    const std::vector<int32_t> labels = {1, bad, 2, -7};
    auto check = [&](const ipu::kernels::KernelFault& fault) {
      REQUIRE(fault);
      CHECK(fault.element == 1);
      CHECK(fault.value == bad);
      CHECK(fault.low == 0);
      CHECK(fault.high == C);
    };
    auto* scores = const_cast<float*>(s.data());
    auto* label_data = const_cast<int32_t*>(labels.data());
    for (int64_t from_logits : {0, 1}) {
      CAPTURE(from_logits);
      float loss = 0.0f;
      check(run_for_fault(
          vertex(Codelet::kSparseCrossEntropy, {scores, label_data, &loss}, {M, C, from_logits})));
      std::vector<float> ds(s.size());
      check(run_for_fault(vertex(Codelet::kSparseCrossEntropyGrad, {scores, label_data, ds.data()},
                                 {M, C, from_logits, 0, M})));
      // A vertex whose rows hold valid labels computes them.
      run(vertex(Codelet::kSparseCrossEntropyGrad, {scores, label_data, ds.data()},
                 {M, C, from_logits, 2, 3}));
    }
    float correct = 0.0f;
    check(run_for_fault(vertex(Codelet::kCountCorrect, {scores, label_data, &correct}, {M, C})));
  }
  const std::vector<int32_t> labels = {0, 1, 9, 2};
  float loss = 0.0f;
  CHECK(describe(run_for_fault(
            vertex(Codelet::kSparseCrossEntropy,
                   {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), &loss}, {M, C, 1}))) ==
        "label 9 at labels[2] is outside [0, 4)");
}

// The last execution of an evaluation is padded with rows labelled kPaddedRowLabel: they add 0 to
// the loss (whose mean still divides by all M rows), are never correct, and get no gradient.
TEST_CASE("kernels: padded rows add nothing to SparseCrossEntropy, its gradient or CountCorrect") {
  const int64_t M = 4, C = 3;
  const auto s = values(M * C, 17);
  const int32_t pad = ipu::format::kPaddedRowLabel;
  const std::vector<int32_t> labels = {2, pad, 0, pad};
  // The same rows without the padded ones.
  const std::vector<float> real = {s[0], s[1], s[2], s[6], s[7], s[8]};
  const std::vector<int32_t> real_labels = {2, 0};
  for (int64_t from_logits : {0, 1}) {
    CAPTURE(from_logits);
    float loss = kSentinel;
    run(vertex(Codelet::kSparseCrossEntropy,
               {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), &loss},
               {M, C, from_logits}));
    CHECK(close(loss, sce_ref(real, real_labels, 2, C, from_logits != 0) * 2 / M, 1e-5));
    std::vector<float> ds(s.size(), kSentinel);
    run(vertex(Codelet::kSparseCrossEntropyGrad,
               {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), ds.data()},
               {M, C, from_logits, 0, M}));
    for (int64_t c = 0; c < C; ++c) {
      CHECK(ds[static_cast<size_t>(C + c)] == 0.0f);
      CHECK(ds[static_cast<size_t>(3 * C + c)] == 0.0f);
    }
  }
  // Every row's argmax is some class: a padded row is still never correct.
  float correct = kSentinel;
  const std::vector<int32_t> all_pad(static_cast<size_t>(M), pad);
  run(vertex(Codelet::kCountCorrect,
             {const_cast<float*>(s.data()), const_cast<int32_t*>(all_pad.data()), &correct}, {M, C}));
  CHECK(correct == 0.0f);
}

TEST_CASE("kernels: CountCorrect counts rows whose first maximum is the label") {
  const int64_t M = 5, C = 4;
  const std::vector<float> s = {
      0.1f,  0.9f,  0.0f,  0.0f,  // argmax 1
      3.0f,  1.0f,  3.0f,  0.0f,  // tie between 0 and 2: the first (0) wins
      -1.0f, -2.0f, -3.0f, -0.5f, // argmax 3
      2.0f,  2.0f,  2.0f,  2.0f,  // all equal: 0
      0.0f,  5.0f,  5.0f,  1.0f,  // tie between 1 and 2: 1
  };
  auto count = [&](const std::vector<int32_t>& labels) {
    float correct = kSentinel;
    run(vertex(Codelet::kCountCorrect,
               {const_cast<float*>(s.data()), const_cast<int32_t*>(labels.data()), &correct}, {M, C}));
    return correct;
  };
  CHECK(count({1, 0, 3, 0, 1}) == 5.0f);
  CHECK(count({1, 2, 3, 3, 2}) == 2.0f); // the later maxima do not count
  CHECK(count({0, 1, 0, 1, 0}) == 0.0f);
}

TEST_CASE("kernels: ColumnSum over a column range") {
  const int64_t M = 5, N = 6;
  const auto x = values(M * N, 17);
  std::vector<float> y(N, kSentinel);
  run(vertex(Codelet::kColumnSum, {const_cast<float*>(x.data()), y.data()}, {M, N, 1, 4}));
  run(vertex(Codelet::kColumnSum, {const_cast<float*>(x.data()), y.data()}, {M, N, 4, 5}));
  for (int64_t c = 0; c < N; ++c) {
    CAPTURE(c);
    if (c >= 1 && c < 5) {
      double sum = 0;
      for (int64_t r = 0; r < M; ++r)
        sum += x[static_cast<size_t>(r * N + c)];
      CHECK(close(y[static_cast<size_t>(c)], sum));
    } else {
      CHECK(y[static_cast<size_t>(c)] == kSentinel);
    }
  }
}

TEST_CASE("kernels: the registry knows every codelet and nothing else") {
  for (uint32_t id = 1; id <= 19; ++id) {
    CAPTURE(id);
    const KernelDef* def = find_kernel(id);
    REQUIRE(def != nullptr);
    CHECK(static_cast<uint32_t>(def->codelet) == id);
    CHECK(static_cast<bool>(def->validate));
  }
  for (uint32_t id : {0u, 30u, 68u, 69u, 113u, 0xffffffffu})
    CHECK(find_kernel(id) == nullptr);
}

TEST_CASE("kernels: exactly the kernels that read indices or labels can fault") {
  for (Codelet c : {Codelet::kSparseCrossEntropy, Codelet::kSparseCrossEntropyGrad, Codelet::kCountCorrect,
                    Codelet::kGather, Codelet::kGatherGrad, Codelet::kNllLoss, Codelet::kNllLossGrad}) {
    CHECK(kernel(c).run.can_fault());
  }
  for (Codelet c : {Codelet::kMatMul, Codelet::kSoftmax, Codelet::kReduce, Codelet::kStridedCopy,
                    Codelet::kConv, Codelet::kMaxPool, Codelet::kReduceProdGrad}) {
    CHECK_FALSE(kernel(c).run.can_fault());
  }
}

// ---------------------------------------------------------------------------------------------
// try_merge

TEST_CASE("try_merge: adjacent ranges merge; gaps, reversed order and other differences do not") {
  std::vector<float> x(16), y(16);
  const auto& act = kernel(Codelet::kActivation);
  auto relu = [&](int64_t begin, int64_t end, uint64_t cycles = 10) {
    return vertex(Codelet::kActivation, {x.data(), y.data()}, {0, begin, end}, {}, cycles);
  };
  SUBCASE("adjacent") {
    PreparedVertex into = relu(0, 4, 10);
    REQUIRE(try_merge(act, into, relu(4, 9, 7)));
    CHECK(into.params[1] == 0);
    CHECK(into.params[2] == 9);
    CHECK(into.cycles == 17);
    REQUIRE(try_merge(act, into, relu(9, 16)));
    CHECK(into.params[2] == 16);
  }
  SUBCASE("a gap") {
    PreparedVertex into = relu(0, 4);
    CHECK_FALSE(try_merge(act, into, relu(5, 8)));
    CHECK(into.params[2] == 4);
    CHECK(into.cycles == 10);
  }
  SUBCASE("overlap") {
    PreparedVertex into = relu(0, 4);
    CHECK_FALSE(try_merge(act, into, relu(3, 8)));
  }
  SUBCASE("reversed order") {
    PreparedVertex into = relu(4, 8);
    CHECK_FALSE(try_merge(act, into, relu(0, 4)));
  }
  SUBCASE("different parameters") {
    PreparedVertex into = relu(0, 4);
    PreparedVertex sigmoid = relu(4, 8);
    sigmoid.params[0] = static_cast<int64_t>(ActivationKind::kSigmoid);
    CHECK_FALSE(try_merge(act, into, sigmoid));
  }
  SUBCASE("different operands") {
    std::vector<float> z(16);
    PreparedVertex into = relu(0, 4);
    CHECK_FALSE(try_merge(act, into, vertex(Codelet::kActivation, {x.data(), z.data()}, {0, 4, 8})));
    CHECK_FALSE(try_merge(act, into, vertex(Codelet::kActivation, {z.data(), y.data()}, {0, 4, 8})));
  }
  SUBCASE("different codelet") {
    std::vector<float> dx(16);
    PreparedVertex into = relu(0, 4);
    CHECK_FALSE(
        try_merge(act, into, vertex(Codelet::kActivationGrad, {x.data(), y.data(), dx.data()}, {0, 4, 8})));
  }
  SUBCASE("different float parameters") {
    const auto& sgd = kernel(Codelet::kSgdMomentum);
    auto h = hyper({{H::kLearningRate, 0.1f}, {H::kMomentum, 0.9f}});
    PreparedVertex into = vertex(Codelet::kSgdMomentum, {x.data(), y.data(), h.data()}, {0, 4, 0}, {1.0f});
    CHECK_FALSE(try_merge(sgd, into,
                          vertex(Codelet::kSgdMomentum, {x.data(), y.data(), h.data()}, {4, 8, 0}, {0.5f})));
    CHECK(try_merge(sgd, into,
                    vertex(Codelet::kSgdMomentum, {x.data(), y.data(), h.data()}, {4, 8, 0}, {1.0f})));
  }
  SUBCASE("different hyper-parameter tensors") {
    const auto& sgd = kernel(Codelet::kSgdMomentum);
    auto h = hyper({{H::kLearningRate, 0.1f}}), other = h;
    PreparedVertex into = vertex(Codelet::kSgdMomentum, {x.data(), y.data(), h.data()}, {0, 4, 0}, {1.0f});
    CHECK_FALSE(try_merge(
        sgd, into, vertex(Codelet::kSgdMomentum, {x.data(), y.data(), other.data()}, {4, 8, 0}, {1.0f})));
  }
  SUBCASE("with and without velocity") {
    const auto& sgd = kernel(Codelet::kSgdMomentum);
    std::vector<float> v(16);
    auto h = hyper({{H::kLearningRate, 0.1f}, {H::kMomentum, 0.9f}});
    PreparedVertex into = vertex(Codelet::kSgdMomentum, {x.data(), y.data(), h.data()}, {0, 4, 0}, {1.0f});
    CHECK_FALSE(try_merge(
        sgd, into,
        vertex(Codelet::kSgdMomentum, {x.data(), y.data(), v.data(), h.data()}, {4, 8, 0}, {1.0f})));
  }
  SUBCASE("kernels without a work range never merge") {
    int32_t labels[2] = {0, 1};
    float out = 0;
    for (Codelet c : {Codelet::kSparseCrossEntropy, Codelet::kCountCorrect}) {
      const auto& def = kernel(c);
      PreparedVertex into = vertex(c, {x.data(), labels, &out}, {2, 8, 1});
      if (c == Codelet::kCountCorrect) into.num_params = 2; // M, C
      const PreparedVertex next = into;
      CHECK_FALSE(try_merge(def, into, next));
    }
  }
}

TEST_CASE("try_merge: MatMul blocks merge along columns or rows, not diagonally") {
  std::vector<float> a(6 * 5), b(5 * 8), c(6 * 8);
  const auto& mm = kernel(Codelet::kMatMul);
  auto block = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t accumulate = 0) {
    return vertex(Codelet::kMatMul, {a.data(), b.data(), c.data()},
                  {6, 8, 5, 0, 0, r0, r1, c0, c1, accumulate});
  };
  SUBCASE("along columns, same rows") {
    PreparedVertex into = block(0, 3, 0, 4);
    REQUIRE(try_merge(mm, into, block(0, 3, 4, 8)));
    CHECK(into.params[5] == 0);
    CHECK(into.params[6] == 3);
    CHECK(into.params[7] == 0);
    CHECK(into.params[8] == 8);
  }
  SUBCASE("along rows, same columns") {
    PreparedVertex into = block(0, 3, 2, 5);
    REQUIRE(try_merge(mm, into, block(3, 6, 2, 5)));
    CHECK(into.params[5] == 0);
    CHECK(into.params[6] == 6);
    CHECK(into.params[7] == 2);
    CHECK(into.params[8] == 5);
  }
  SUBCASE("diagonal neighbours") {
    PreparedVertex into = block(0, 3, 0, 4);
    CHECK_FALSE(try_merge(mm, into, block(3, 6, 4, 8)));
  }
  SUBCASE("columns adjacent but rows differ") {
    PreparedVertex into = block(0, 3, 0, 4);
    CHECK_FALSE(try_merge(mm, into, block(0, 2, 4, 8)));
  }
  SUBCASE("different accumulate flag") {
    PreparedVertex into = block(0, 3, 0, 4, 0);
    CHECK_FALSE(try_merge(mm, into, block(0, 3, 4, 8, 1)));
  }
  SUBCASE("different transposition") {
    PreparedVertex into = block(0, 3, 0, 4);
    PreparedVertex next = block(0, 3, 4, 8);
    next.params[4] = 1;
    CHECK_FALSE(try_merge(mm, into, next));
  }
}

// Runs `first` then `second` on fresh copies of the buffers, then their merge, and checks the
// outputs are bitwise identical. `reset` restores every buffer to its initial content.
void check_merge_equivalent(const PreparedVertex& first, const PreparedVertex& second,
                            const std::function<void()>& reset,
                            const std::function<std::vector<float>()>& outputs) {
  const auto& def = kernel(static_cast<Codelet>(first.codelet));
  reset();
  run(first);
  run(second);
  const auto separate = outputs();
  PreparedVertex merged = first;
  REQUIRE(try_merge(def, merged, second));
  reset();
  run(merged);
  const auto together = outputs();
  CHECK(bitwise_equal(separate, together));
}

TEST_CASE("try_merge: a merged vertex computes exactly what the two did") {
  SUBCASE("MatMul along columns and along rows, with accumulate") {
    for (int trans : {0, 1, 2, 3}) {
      CAPTURE(trans);
      const int64_t M = 6, N = 8, K = 5;
      const auto a = values(M * K, 20), b = values(K * N, 21), c0 = values(M * N, 22);
      std::vector<float> c;
      auto mm = [&](int64_t r0, int64_t r1, int64_t c0_, int64_t c1) {
        return vertex(Codelet::kMatMul,
                      {const_cast<float*>(a.data()), const_cast<float*>(b.data()), c.data()},
                      {M, N, K, trans & 1, trans >> 1, r0, r1, c0_, c1, 1});
      };
      c = c0; // so the vertices' pointers are stable
      auto reset = [&] { std::copy(c0.begin(), c0.end(), c.begin()); };
      auto out = [&] { return c; };
      check_merge_equivalent(mm(1, 4, 0, 3), mm(1, 4, 3, 8), reset, out);
      check_merge_equivalent(mm(0, 2, 2, 6), mm(2, 6, 2, 6), reset, out);
    }
  }
  SUBCASE("elementwise and row kernels") {
    const int64_t M = 4, C = 6;
    const auto x0 = values(M * C, 23), g0 = values(M * C, 24), b0 = values(C, 25);
    std::vector<float> x = x0, g = g0, bias = b0, v(M * C), y(M * C), dx(M * C), col(C);
    std::vector<int32_t> labels = {5, 0, 3, 2};
    auto reset = [&] {
      std::copy(x0.begin(), x0.end(), x.begin());
      std::copy(g0.begin(), g0.end(), g.begin());
      std::fill(v.begin(), v.end(), 0.25f);
      std::fill(y.begin(), y.end(), kSentinel);
      std::fill(dx.begin(), dx.end(), kSentinel);
      std::fill(col.begin(), col.end(), kSentinel);
    };
    reset();
    auto all = [&] {
      std::vector<float> out = x;
      for (const auto* buf : {&v, &y, &dx, &col})
        out.insert(out.end(), buf->begin(), buf->end());
      return out;
    };
    for (int64_t kind = 0; kind < 3; ++kind) {
      check_merge_equivalent(vertex(Codelet::kActivation, {x.data(), y.data()}, {kind, 0, 7}),
                             vertex(Codelet::kActivation, {x.data(), y.data()}, {kind, 7, 24}), reset, all);
      check_merge_equivalent(
          vertex(Codelet::kActivationGrad, {x.data(), g.data(), dx.data()}, {kind, 3, 10}),
          vertex(Codelet::kActivationGrad, {x.data(), g.data(), dx.data()}, {kind, 10, 11}), reset, all);
    }
    check_merge_equivalent(vertex(Codelet::kBiasAdd, {x.data(), bias.data(), y.data()}, {M, C, 0, 1}),
                           vertex(Codelet::kBiasAdd, {x.data(), bias.data(), y.data()}, {M, C, 1, 4}), reset,
                           all);
    check_merge_equivalent(vertex(Codelet::kSoftmax, {x.data(), y.data()}, {M, C, 0, 2}),
                           vertex(Codelet::kSoftmax, {x.data(), y.data()}, {M, C, 2, 3}), reset, all);
    check_merge_equivalent(vertex(Codelet::kSoftmaxGrad, {x.data(), g.data(), dx.data()}, {M, C, 1, 2}),
                           vertex(Codelet::kSoftmaxGrad, {x.data(), g.data(), dx.data()}, {M, C, 2, 4}),
                           reset, all);
    for (int64_t from_logits : {0, 1}) {
      check_merge_equivalent(vertex(Codelet::kSparseCrossEntropyGrad, {x.data(), labels.data(), dx.data()},
                                    {M, C, from_logits, 0, 3}),
                             vertex(Codelet::kSparseCrossEntropyGrad, {x.data(), labels.data(), dx.data()},
                                    {M, C, from_logits, 3, 4}),
                             reset, all);
    }
    check_merge_equivalent(vertex(Codelet::kColumnSum, {x.data(), col.data()}, {M, C, 0, 2}),
                           vertex(Codelet::kColumnSum, {x.data(), col.data()}, {M, C, 2, 6}), reset, all);
    auto h = hyper({{H::kLearningRate, 0.1f}, {H::kMomentum, 0.9f}});
    check_merge_equivalent(vertex(Codelet::kSgdMomentum, {x.data(), g.data(), h.data()}, {0, 5, 0}, {1.0f}),
                           vertex(Codelet::kSgdMomentum, {x.data(), g.data(), h.data()}, {5, 20, 0}, {1.0f}),
                           reset, all);
    check_merge_equivalent(
        vertex(Codelet::kSgdMomentum, {x.data(), g.data(), v.data(), h.data()}, {2, 5, 0}, {1.0f}),
        vertex(Codelet::kSgdMomentum, {x.data(), g.data(), v.data(), h.data()}, {5, 24, 0}, {1.0f}), reset,
        all);
  }
}

} // namespace
