// The convolution, pooling and per-channel kernels against plain double-precision loops, run as
// several vertices that split the work the way the compiler does; and their load-time validators.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/format/tensor_kinds.h"
#include "runtime/kernels/kernel.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::format::Codelet;
using ipu::kernels::OperandInfo;
using namespace ipu::kernels::testing;

void check_conv_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= 1e-4 + 1e-4 * std::abs(want[i]));
  }
}

struct Geometry {
  int64_t N, C, H, W, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW;
  int64_t OH() const { return (H + PT + PB - DH * (KH - 1) - 1) / SH + 1; }
  int64_t OW() const { return (W + PL + PR - DW * (KW - 1) - 1) / SW + 1; }
  std::vector<int64_t> params() const {
    return {N, C, H, W, OH(), OW(), KH, KW, SH, SW, PT, PL, PB, PR, DH, DW};
  }
  // Input row/column of output (oy, ox) at tap (ky, kx); may lie outside the input.
  int64_t iy(int64_t oy, int64_t ky) const { return oy * SH - PT + ky * DH; }
  int64_t ix(int64_t ox, int64_t kx) const { return ox * SW - PL + kx * DW; }
  bool inside(int64_t y, int64_t x) const { return y >= 0 && y < H && x >= 0 && x < W; }
};

std::vector<int64_t> with(std::vector<int64_t> p, const std::vector<int64_t>& extra) {
  p.insert(p.end(), extra.begin(), extra.end());
  return p;
}

const Geometry kGeometries[] = {
    {2, 4, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, // same padding
    {3, 2, 7, 5, 3, 2, 2, 1, 0, 1, 2, 0, 1, 1}, // strides and asymmetric pads
    {2, 4, 6, 6, 2, 3, 1, 2, 1, 0, 0, 2, 2, 1}, // dilations
    {2, 3, 1, 9, 1, 4, 1, 2, 0, 1, 0, 1, 1, 1}, // 1-D as H = 1
    {2, 2, 4, 5, 3, 3, 2, 3, 2, 2, 2, 2, 2, 2}, // pads wider than a tap, strides 2 and 3, dilation 2
    // The pooling kernels' fast paths for windows wholly inside the input, each beside edge
    // windows that take the general path:
    {2, 3, 6, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},  // 2×2 at stride 2 (the common CNN pool), all inside
    {1, 2, 5, 37, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1}, // the same with pads, 17 inner columns (a vector and more)
    {2, 2, 5, 7, 2, 2, 1, 1, 1, 0, 1, 1, 1, 1},  // 2×2 at stride 1 with pads
    {1, 2, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},  // 3×3 at stride 2 with pads
    {1, 2, 8, 11, 2, 3, 3, 3, 0, 1, 0, 0, 1, 1}, // stride 3
    {1, 2, 9, 35, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, // 3×3 at stride 1 with pads (Inception's average pools)
    {2, 3, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1},  // a global pool: one output per plane
};

// Geometries where oneDNN's view of the input differs from ours (conv_forward.cpp, axis_view).
const Geometry kConvGeometries[] = {
    {2, 3, 8, 9, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1}, // the last window stops a row short of the input
    {1, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1,
     1}, // pads beyond the kernel: first and last windows wholly outside
    {1, 2, 2, 3, 1, 1, 5, 5, 1, 1, 0, 0, 1, 1}, // the only window lies in the padding: bias alone
};

std::vector<Geometry> conv_geometries() {
  std::vector<Geometry> all(std::begin(kGeometries), std::end(kGeometries));
  all.insert(all.end(), std::begin(kConvGeometries), std::end(kConvGeometries));
  return all;
}

TEST_CASE("kernels: Conv, ConvGradInput and ConvGradWeight match direct loops, with groups and bias") {
  for (const Geometry& g : conv_geometries()) {
    for (int64_t groups : {int64_t{1}, int64_t{2}, g.C}) {
      if (g.C % groups != 0) continue;
      const int64_t M = 2 * groups, Cg = g.C / groups, Mg = M / groups, OH = g.OH(), OW = g.OW();
      CAPTURE(g.H);
      CAPTURE(groups);
      auto x = values(static_cast<size_t>(g.N * g.C * g.H * g.W), 1);
      auto w = values(static_cast<size_t>(M * Cg * g.KH * g.KW), 2);
      auto b = values(static_cast<size_t>(M), 3);
      auto dy = values(static_cast<size_t>(g.N * M * OH * OW), 4);
      auto xi = [&](int64_t n, int64_t c, int64_t y, int64_t xx) {
        return static_cast<size_t>(((n * g.C + c) * g.H + y) * g.W + xx);
      };
      auto wi = [&](int64_t m, int64_t c, int64_t ky, int64_t kx) {
        return static_cast<size_t>(((m * Cg + c) * g.KH + ky) * g.KW + kx);
      };
      auto yi = [&](int64_t n, int64_t m, int64_t oy, int64_t ox) {
        return static_cast<size_t>(((n * M + m) * OH + oy) * OW + ox);
      };
      std::vector<double> y_want(dy.size()), dx_want(x.size()), dw_want(w.size());
      for (int64_t n = 0; n < g.N; ++n) {
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t oy = 0; oy < OH; ++oy) {
            for (int64_t ox = 0; ox < OW; ++ox) {
              double sum = b[static_cast<size_t>(m)];
              for (int64_t c = 0; c < Cg; ++c) {
                for (int64_t ky = 0; ky < g.KH; ++ky) {
                  for (int64_t kx = 0; kx < g.KW; ++kx) {
                    const int64_t iy = g.iy(oy, ky), ix = g.ix(ox, kx);
                    if (!g.inside(iy, ix)) continue;
                    const size_t xs = xi(n, m / Mg * Cg + c, iy, ix), ws = wi(m, c, ky, kx);
                    sum += static_cast<double>(x[xs]) * w[ws];
                    dx_want[xs] += static_cast<double>(dy[yi(n, m, oy, ox)]) * w[ws];
                    dw_want[ws] += static_cast<double>(dy[yi(n, m, oy, ox)]) * x[xs];
                  }
                }
              }
              y_want[yi(n, m, oy, ox)] = sum;
            }
          }
        }
      }
      const std::vector<int64_t> p = with(g.params(), {M, groups});
      std::vector<float> y(dy.size(), -7.0f), dx(x.size(), -7.0f), dw(w.size(), -7.0f);
      // Samples split in two, output channels split across a group boundary.
      for (int64_t nb : {int64_t{0}, int64_t{1}}) {
        const int64_t ne = nb == 0 ? 1 : g.N;
        run(Codelet::kConv, {x.data(), w.data(), b.data(), y.data()}, with(p, {nb, ne, 0, 1}));
        run(Codelet::kConv, {x.data(), w.data(), b.data(), y.data()}, with(p, {nb, ne, 1, M}));
        run(Codelet::kConvGradInput, {dy.data(), w.data(), dx.data()}, with(p, {nb, ne}));
      }
      // Output channels split across a group boundary, input channels split within each group.
      for (auto [cb, ce] : {std::pair<int64_t, int64_t>{0, Cg / 2}, {Cg / 2, Cg}}) {
        run(Codelet::kConvGradWeight, {x.data(), dy.data(), dw.data()}, with(p, {0, 1, cb, ce}));
        run(Codelet::kConvGradWeight, {x.data(), dy.data(), dw.data()}, with(p, {1, M, cb, ce}));
      }
      check_conv_close(y, y_want);
      check_conv_close(dx, dx_want);
      check_conv_close(dw, dw_want);
      // Without a bias.
      run(Codelet::kConv, {x.data(), w.data(), y.data()}, with(p, {0, g.N, 0, M}));
      for (size_t i = 0; i < y.size(); ++i)
        y_want[i] -= b[i / static_cast<size_t>(OH * OW) % static_cast<size_t>(M)];
      check_conv_close(y, y_want);
      // With a fused Relu, split over channels as before, and the rest over output rows too.
      run(Codelet::kConv, {x.data(), w.data(), y.data()}, with(p, {0, g.N, 0, 1, 1}));
      run(Codelet::kConv, {x.data(), w.data(), y.data()}, with(p, {0, g.N, 1, M, 1, 0, OH / 2}));
      run(Codelet::kConv, {x.data(), w.data(), y.data()}, with(p, {0, g.N, 1, M, 1, OH / 2, OH}));
      for (double& v : y_want)
        v = std::max(v, 0.0);
      check_conv_close(y, y_want);
    }
  }
}

// The splits the compiler makes of the backward convolution (compiler/ops/conv_ops.cpp) against
// one vertex doing all the work: ConvGradInput over samples × input channels × input rows gives
// the same bits; ConvGradWeight over samples × output rows into partials, summed, gives the single
// vertex's sums within float rounding, and its one-share form the same bits as the old layout.
TEST_CASE("kernels: every split of ConvGradInput and ConvGradWeight gives the single vertex's result") {
  for (const Geometry& g : conv_geometries()) {
    for (int64_t groups : {int64_t{1}, int64_t{2}, g.C}) {
      if (g.C % groups != 0) continue;
      const int64_t M = 2 * groups, Cg = g.C / groups, OH = g.OH();
      CAPTURE(g.H);
      CAPTURE(groups);
      auto x = values(static_cast<size_t>(g.N * g.C * g.H * g.W), 11);
      auto w = values(static_cast<size_t>(M * Cg * g.KH * g.KW), 12);
      auto dy = values(static_cast<size_t>(g.N * M * OH * g.OW()), 13);
      const std::vector<int64_t> p = with(g.params(), {M, groups});
      std::vector<float> dx_one(x.size(), -7.0f), dx(x.size(), -7.0f);
      run(Codelet::kConvGradInput, {dy.data(), w.data(), dx_one.data()}, with(p, {0, g.N}));
      // Channels split across a group boundary and rows into three blocks, the first one row.
      const std::pair<int64_t, int64_t> channel_blocks[] = {{0, 1}, {1, g.C}};
      const std::pair<int64_t, int64_t> row_blocks[] = {{0, 1}, {1, (g.H + 1) / 2}, {(g.H + 1) / 2, g.H}};
      for (auto [nb, ne] : {std::pair<int64_t, int64_t>{0, 1}, {1, g.N}}) {
        for (auto [cb, ce] : channel_blocks) {
          for (auto [rb, re] : row_blocks) {
            run(Codelet::kConvGradInput, {dy.data(), w.data(), dx.data()}, with(p, {nb, ne, cb, ce, rb, re}));
          }
        }
      }
      CHECK(std::memcmp(dx.data(), dx_one.data(), dx.size() * sizeof(float)) == 0);

      std::vector<float> dw_one(w.size(), -7.0f), dw_tail(w.size(), -7.0f);
      run(Codelet::kConvGradWeight, {x.data(), dy.data(), dw_one.data()}, with(p, {0, M, 0, Cg}));
      run(Codelet::kConvGradWeight, {x.data(), dy.data(), dw_tail.data()},
          with(p, {0, M, 0, Cg, 0, g.N, 0, OH, 1, 0}));
      CHECK(std::memcmp(dw_tail.data(), dw_one.data(), w.size() * sizeof(float)) == 0);
      // Four shares: samples in two, output rows in two (the second may be empty at OH = 1).
      const int64_t parts = 4, half = (OH + 1) / 2;
      std::vector<float> partials(static_cast<size_t>(parts) * w.size(), -7.0f);
      for (int64_t part = 0; part < parts; ++part) {
        const int64_t nb = part / 2 == 0 ? 0 : 1, ne = part / 2 == 0 ? 1 : g.N;
        const int64_t ob = part % 2 == 0 ? 0 : half, oe = part % 2 == 0 ? half : OH;
        // Output channels split across a group boundary, input channels whole.
        run(Codelet::kConvGradWeight, {x.data(), dy.data(), partials.data()},
            with(p, {0, 1, 0, Cg, nb, ne, ob, oe, parts, part}));
        run(Codelet::kConvGradWeight, {x.data(), dy.data(), partials.data()},
            with(p, {1, M, 0, Cg, nb, ne, ob, oe, parts, part}));
      }
      std::vector<double> summed(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        for (int64_t part = 0; part < parts; ++part)
          summed[i] += partials[static_cast<size_t>(part) * w.size() + i];
      }
      check_conv_close(dw_one, summed);
    }
  }
}

// The channel shares the compiler makes of a convolution with one group (compiler/ops/conv_ops.cpp,
// lower_conv and lower_conv_grad_input): Conv over input channels and ConvGradInput over output
// channels, each share into its partial, summed, give the single vertex's result within float
// rounding; only Conv's share of channel 0 adds the bias.
TEST_CASE("kernels: Conv split over input channels and ConvGradInput over output channels sum to the whole") {
  for (const Geometry& g : conv_geometries()) {
    if (g.C < 2) continue;
    const int64_t M = 3, OH = g.OH(), OW = g.OW();
    CAPTURE(g.H);
    auto x = values(static_cast<size_t>(g.N * g.C * g.H * g.W), 21);
    auto w = values(static_cast<size_t>(M * g.C * g.KH * g.KW), 22);
    auto b = values(static_cast<size_t>(M), 23);
    auto dy = values(static_cast<size_t>(g.N * M * OH * OW), 24);
    const std::vector<int64_t> p = with(g.params(), {M, 1});
    const size_t y_size = dy.size(), x_size = x.size();
    std::vector<float> y_one(y_size, -7.0f), dx_one(x_size, -7.0f);
    run(Codelet::kConv, {x.data(), w.data(), b.data(), y_one.data()}, with(p, {0, g.N, 0, M}));
    run(Codelet::kConvGradInput, {dy.data(), w.data(), dx_one.data()}, with(p, {0, g.N}));

    // Two input-channel shares; the second split over samples, output channels and rows too.
    const int64_t parts = 2, half = g.C / 2, rows = (OH + 1) / 2;
    std::vector<float> y_partials(parts * y_size, -7.0f);
    run(Codelet::kConv, {x.data(), w.data(), b.data(), y_partials.data()},
        with(p, {0, g.N, 0, M, 0, 0, OH, 0, half, parts, 0}));
    for (auto [nb, ne] : {std::pair<int64_t, int64_t>{0, 1}, {1, g.N}}) {
      for (auto [ob, oe] : {std::pair<int64_t, int64_t>{0, rows}, {rows, OH}}) {
        run(Codelet::kConv, {x.data(), w.data(), b.data(), y_partials.data()},
            with(p, {nb, ne, 0, 1, 0, ob, oe, half, g.C, parts, 1}));
        run(Codelet::kConv, {x.data(), w.data(), b.data(), y_partials.data()},
            with(p, {nb, ne, 1, M, 0, ob, oe, half, g.C, parts, 1}));
      }
    }
    std::vector<double> y_sum(y_size);
    for (size_t i = 0; i < y_size; ++i)
      y_sum[i] = static_cast<double>(y_partials[i]) + y_partials[y_size + i];
    check_conv_close(y_one, y_sum);
    // A fused Relu moves to the Reduce that adds the shares (kind SumRelu): the fused Conv's result.
    std::vector<float> y_relu(y_size, -7.0f), y_reduced(y_size, -7.0f);
    run(Codelet::kConv, {x.data(), w.data(), b.data(), y_relu.data()}, with(p, {0, g.N, 0, M, 1}));
    const auto elements = static_cast<int64_t>(y_size);
    run(Codelet::kReduce, {y_partials.data(), y_reduced.data()},
        {static_cast<int64_t>(ipu::format::ReduceKind::kSumRelu), 1, 1, 0, elements, elements, 1, parts,
         elements});
    std::vector<double> relu_want(y_relu.begin(), y_relu.end());
    check_conv_close(y_reduced, relu_want);

    // Output-channel shares of dX: channels [0, 1) and [1, M), the second over input rows in two.
    std::vector<float> dx_partials(parts * x_size, -7.0f);
    run(Codelet::kConvGradInput, {dy.data(), w.data(), dx_partials.data()},
        with(p, {0, g.N, 0, g.C, 0, g.H, 0, 1, parts, 0}));
    const int64_t in_half = (g.H + 1) / 2;
    run(Codelet::kConvGradInput, {dy.data(), w.data(), dx_partials.data()},
        with(p, {0, g.N, 0, g.C, 0, in_half, 1, M, parts, 1}));
    run(Codelet::kConvGradInput, {dy.data(), w.data(), dx_partials.data()},
        with(p, {0, g.N, 0, g.C, in_half, g.H, 1, M, parts, 1}));
    std::vector<double> dx_sum(x_size);
    for (size_t i = 0; i < x_size; ++i)
      dx_sum[i] = static_cast<double>(dx_partials[i]) + dx_partials[x_size + i];
    check_conv_close(dx_one, dx_sum);
  }
}

TEST_CASE("kernels: Conv and ConvGradInput refuse channel shares outside their operands") {
  const Geometry g{2, 4, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const uint64_t xs = 2 * 4 * 5 * 6, ws = 8 * 4 * 9, ys = 2 * 8 * 5 * 6;
  const auto p = with(g.params(), {8, 1});
  // Conv: X, W, Y of three partials; the share follows the row range.
  CHECK(validate(Codelet::kConv, {xs, ws, 3 * ys}, with(p, {0, 2, 0, 8, 0, 0, 5, 1, 3, 3, 2})).ok());
  CHECK_FALSE(validate(Codelet::kConv, {xs, ws, 3 * ys}, with(p, {0, 2, 0, 8, 0, 0, 5, 1, 5, 3, 2})).ok());
  CHECK_FALSE(validate(Codelet::kConv, {xs, ws, 3 * ys}, with(p, {0, 2, 0, 8, 0, 0, 5, 2, 2, 3, 2})).ok());
  CHECK_FALSE(validate(Codelet::kConv, {xs, ws, 3 * ys}, with(p, {0, 2, 0, 8, 0, 0, 5, 1, 3, 3, 3})).ok());
  CHECK_FALSE(validate(Codelet::kConv, {xs, ws, 2 * ys}, with(p, {0, 2, 0, 8, 0, 0, 5, 1, 3, 3, 0})).ok());
  CHECK_FALSE(validate(Codelet::kConv, {xs, ws, 3 * ys}, with(p, {0, 2, 0, 8, 1, 0, 5, 1, 3, 3, 0})).ok());
  const auto grouped = with(g.params(), {8, 2});
  CHECK_FALSE(
      validate(Codelet::kConv, {xs, ws / 2, 3 * ys}, with(grouped, {0, 2, 0, 8, 0, 0, 5, 0, 1, 3, 0})).ok());
  // ConvGradInput: dY, W, dX of three partials; the share follows the block.
  CHECK(validate(Codelet::kConvGradInput, {ys, ws, 3 * xs}, with(p, {0, 2, 0, 4, 0, 5, 2, 6, 3, 1})).ok());
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws, 3 * xs}, with(p, {0, 2, 0, 4, 0, 5, 2, 9, 3, 1})).ok());
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws, 3 * xs}, with(p, {0, 2, 0, 4, 0, 5, 2, 2, 3, 1})).ok());
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws, 3 * xs}, with(p, {0, 2, 0, 4, 0, 5, 2, 6, 3, 3})).ok());
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws, 2 * xs}, with(p, {0, 2, 0, 4, 0, 5, 2, 6, 3, 1})).ok());
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws / 2, 3 * xs}, with(grouped, {0, 2, 0, 4, 0, 5, 2, 6, 3, 1}))
          .ok());
}

TEST_CASE("kernels: ConvGradInput and ConvGradWeight refuse blocks and shares outside their operands") {
  const Geometry g{2, 4, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const auto p = with(g.params(), {8, 2});
  const uint64_t xs = 2 * 4 * 5 * 6, ws = 8 * 2 * 9, ys = 2 * 8 * 5 * 6;
  CHECK(validate(Codelet::kConvGradInput, {ys, ws, xs}, with(p, {0, 2})).ok());
  CHECK(validate(Codelet::kConvGradInput, {ys, ws, xs}, with(p, {0, 2, 1, 3, 2, 5})).ok());
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws, xs}, with(p, {0, 2, 1, 5, 0, 5})).ok()); // channels past C
  CHECK_FALSE(
      validate(Codelet::kConvGradInput, {ys, ws, xs}, with(p, {0, 2, 0, 4, 3, 6})).ok());   // rows past H
  CHECK_FALSE(validate(Codelet::kConvGradInput, {ys, ws, xs}, with(p, {0, 2, 0, 4})).ok()); // half a block
  CHECK(validate(Codelet::kConvGradWeight, {xs, ys, ws}, with(p, {0, 8, 0, 2})).ok());
  CHECK(validate(Codelet::kConvGradWeight, {xs, ys, 3 * ws}, with(p, {0, 8, 0, 2, 1, 2, 0, 5, 3, 2})).ok());
  CHECK_FALSE(validate(Codelet::kConvGradWeight, {xs, ys, 3 * ws}, with(p, {0, 8, 0, 2, 1, 2, 0, 5, 3, 3}))
                  .ok()); // part
  CHECK_FALSE(validate(Codelet::kConvGradWeight, {xs, ys, 2 * ws}, with(p, {0, 8, 0, 2, 1, 2, 0, 5, 3, 0}))
                  .ok()); // size
  CHECK_FALSE(validate(Codelet::kConvGradWeight, {xs, ys, 3 * ws}, with(p, {0, 8, 0, 2, 1, 3, 0, 5, 3, 0}))
                  .ok()); // samples
  CHECK_FALSE(validate(Codelet::kConvGradWeight, {xs, ys, 3 * ws}, with(p, {0, 8, 0, 2, 1, 2, 0, 6, 3, 0}))
                  .ok()); // rows
  CHECK_FALSE(validate(Codelet::kConvGradWeight, {xs, ys, ws}, with(p, {0, 8, 0, 2, 0, 2, 0, 5, 0, 0})).ok());
}

TEST_CASE("kernels: MaxPool, AveragePool and their gradients match direct loops") {
  for (const Geometry& g : kGeometries) {
    for (bool include_pad : {false, true}) {
      CAPTURE(g.H);
      CAPTURE(include_pad);
      const int64_t OH = g.OH(), OW = g.OW(), planes = g.N * g.C;
      auto x = values(static_cast<size_t>(planes * g.H * g.W), 5);
      auto dy = values(static_cast<size_t>(planes * OH * OW), 6);
      std::vector<double> max_want(dy.size()), avg_want(dy.size()), dmax_want(x.size()), davg_want(x.size());
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t oy = 0; oy < OH; ++oy) {
          for (int64_t ox = 0; ox < OW; ++ox) {
            const size_t o = static_cast<size_t>((p * OH + oy) * OW + ox);
            double best = -std::numeric_limits<double>::infinity(), sum = 0;
            size_t best_at = 0;
            int64_t inside = 0, padded = 0;
            std::vector<size_t> taps;
            for (int64_t ky = 0; ky < g.KH; ++ky) {
              for (int64_t kx = 0; kx < g.KW; ++kx) {
                const int64_t iy = g.iy(oy, ky), ix = g.ix(ox, kx);
                padded += iy >= -g.PT && iy < g.H + g.PB && ix >= -g.PL && ix < g.W + g.PR;
                if (!g.inside(iy, ix)) continue;
                const size_t i = static_cast<size_t>((p * g.H + iy) * g.W + ix);
                taps.push_back(i);
                ++inside;
                sum += x[i];
                if (x[i] > best) {
                  best = x[i];
                  best_at = i;
                }
              }
            }
            max_want[o] = best;
            dmax_want[best_at] += dy[o];
            const int64_t count = include_pad ? padded : inside;
            avg_want[o] = sum / static_cast<double>(count);
            for (size_t i : taps)
              davg_want[i] += dy[o] / static_cast<double>(count);
          }
        }
      }
      std::vector<float> ymax(dy.size()), yavg(dy.size()), dxmax(x.size(), -7.0f), dxavg(x.size(), -7.0f);
      for (auto [pb, pe] : {std::pair<int64_t, int64_t>{0, 1}, {1, planes}}) {
        run(Codelet::kMaxPool, {x.data(), ymax.data()}, with(g.params(), {pb, pe}));
        run(Codelet::kMaxPoolGrad, {x.data(), dy.data(), dxmax.data()}, with(g.params(), {pb, pe}));
        run(Codelet::kAveragePool, {x.data(), yavg.data()}, with(g.params(), {include_pad, pb, pe}));
        run(Codelet::kAveragePoolGrad, {dy.data(), dxavg.data()}, with(g.params(), {include_pad, pb, pe}));
      }
      check_conv_close(ymax, max_want);
      check_conv_close(yavg, avg_want);
      check_conv_close(dxmax, dmax_want);
      check_conv_close(dxavg, davg_want);
    }
  }
}

// AveragePool's inner windows take a pass per tap over a row of outputs: each output must still be
// the window loop's float sum, from 0 with its taps in row-major order, over its divisor, bit for
// bit (values a million apart, so that another order of the taps would round differently; -0,
// infinities and a NaN among them).
TEST_CASE("kernels: AveragePool gives the window loop's float sums, bit for bit") {
  for (const Geometry& g : kGeometries) {
    for (bool include_pad : {false, true}) {
      CAPTURE(g.H);
      CAPTURE(g.W);
      CAPTURE(include_pad);
      const int64_t OH = g.OH(), OW = g.OW(), planes = g.N * g.C;
      auto x = values(static_cast<size_t>(planes * g.H * g.W), 15);
      for (size_t i = 0; i < x.size(); i += 5)
        x[i] *= 1e6f;
      const float specials[] = {-0.0f, INFINITY, -INFINITY, NAN};
      for (size_t k = 0; k < 4 && 37 * k < x.size(); ++k)
        x[37 * k] = specials[k];
      std::vector<float> want(static_cast<size_t>(planes * OH * OW)), got(want.size(), -7.0f);
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t oy = 0; oy < OH; ++oy) {
          for (int64_t ox = 0; ox < OW; ++ox) {
            float sum = 0.0f;
            int64_t inside = 0, padded = 0;
            for (int64_t ky = 0; ky < g.KH; ++ky) {
              for (int64_t kx = 0; kx < g.KW; ++kx) {
                const int64_t iy = g.iy(oy, ky), ix = g.ix(ox, kx);
                padded += iy >= -g.PT && iy < g.H + g.PB && ix >= -g.PL && ix < g.W + g.PR;
                if (!g.inside(iy, ix)) continue;
                sum += x[static_cast<size_t>((p * g.H + iy) * g.W + ix)];
                ++inside;
              }
            }
            const int64_t count = include_pad ? padded : inside;
            want[static_cast<size_t>((p * OH + oy) * OW + ox)] =
                count > 0 ? sum / static_cast<float>(count) : 0.0f;
          }
        }
      }
      run(Codelet::kAveragePool, {x.data(), got.data()}, with(g.params(), {include_pad, 0, planes}));
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    }
  }
}

// A pooling vertex may own a band of rows of one plane (the compiler's split when planes are
// fewer than tiles): the bands of every plane give bitwise the whole-plane vertices' results,
// gradients included, where windows overlap the bands' edges. Each output is first filled with a
// value no band writes, so a row left unwritten shows.
TEST_CASE("kernels: pooling split into bands of rows gives bitwise the whole planes' result") {
  for (const Geometry& g : kGeometries) {
    for (int64_t band : {1, 2, 3}) {
      CAPTURE(g.H);
      CAPTURE(band);
      const int64_t OH = g.OH(), OW = g.OW(), planes = g.N * g.C;
      auto x = values(static_cast<size_t>(planes * g.H * g.W), 7);
      auto dy = values(static_cast<size_t>(planes * OH * OW), 8);
      // Ties for MaxPool's gradient: repeated values, so the first maximum matters.
      for (size_t i = 0; i < x.size(); i += 3)
        x[i] = x[i / 2];
      const auto run_all = [&](auto&& range_params, int64_t out_rows, int64_t in_rows) {
        std::vector<float> ymax(dy.size(), -7.0f), yavg(dy.size(), -7.0f), dxmax(x.size(), -7.0f),
            dxavg(x.size(), -7.0f);
        for (int64_t p = 0; p < planes; ++p) {
          for (int64_t r = 0; r < out_rows; r += band) {
            const auto rows = range_params(p, r, std::min(out_rows, r + band));
            run(Codelet::kMaxPool, {x.data(), ymax.data()}, with(g.params(), rows));
            run(Codelet::kAveragePool, {x.data(), yavg.data()}, with(with(g.params(), {1}), rows));
          }
          for (int64_t r = 0; r < in_rows; r += band) {
            const auto rows = range_params(p, r, std::min(in_rows, r + band));
            run(Codelet::kMaxPoolGrad, {x.data(), dy.data(), dxmax.data()}, with(g.params(), rows));
            run(Codelet::kAveragePoolGrad, {dy.data(), dxavg.data()}, with(with(g.params(), {1}), rows));
          }
        }
        return std::vector<std::vector<float>>{ymax, yavg, dxmax, dxavg};
      };
      const auto banded = [](int64_t p, int64_t rb, int64_t re) {
        return std::vector<int64_t>{p, p + 1, rb, re};
      };
      const auto whole = [](int64_t p, int64_t, int64_t) { return std::vector<int64_t>{p, p + 1}; };
      const auto got = run_all(banded, OH, g.H);
      const auto want = run_all(whole, 1, 1);
      for (size_t k = 0; k < got.size(); ++k) {
        CAPTURE(k);
        CHECK(std::memcmp(got[k].data(), want[k].data(), got[k].size() * sizeof(float)) == 0);
      }
      // One band writes its rows of its plane and nothing else: vertices run side by side.
      const auto written_outside = [&](const std::vector<float>& out, int64_t rows, int64_t width) {
        const int64_t r = std::min<int64_t>(1, rows - 1), first = (planes - 1) * rows * width;
        int64_t count = 0;
        for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i)
          count +=
              out[static_cast<size_t>(i)] != -7.0f && (i < first + r * width || i >= first + (r + 1) * width);
        return count;
      };
      std::vector<float> y(dy.size(), -7.0f), dx(x.size(), -7.0f);
      const int64_t last = planes - 1;
      run(Codelet::kMaxPool, {x.data(), y.data()},
          with(g.params(), {last, planes, std::min<int64_t>(1, OH - 1), std::min<int64_t>(2, OH)}));
      CHECK(written_outside(y, OH, OW) == 0);
      run(Codelet::kAveragePoolGrad, {dy.data(), dx.data()},
          with(g.params(), {0, last, planes, std::min<int64_t>(1, g.H - 1), std::min<int64_t>(2, g.H)}));
      CHECK(written_outside(dx, g.H, g.W) == 0);
    }
  }
}

// The forward Conv converts its weights to oneDNN's layout once per compute set and worker (at
// these channel counts it takes blocked weights), in the worker's own scratch.
TEST_CASE("kernels: Conv reuses converted weights within a compute set, converts them again after it, and "
          "shares them with no other scratch") {
  const Geometry g{1, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t M = 16, plane = g.OH() * g.OW();
  const auto x = values(static_cast<size_t>(g.C * g.H * g.W), 7);
  auto w = values(static_cast<size_t>(M * g.C * g.KH * g.KW), 8);
  const std::vector<int64_t> p = with(g.params(), {M, 1});
  ipu::kernels::WorkerScratch worker, other_engines_worker;
  auto conv = [&](ipu::kernels::WorkerScratch& scratch, uint64_t compute_set, std::vector<float>& weights) {
    std::vector<float> y(static_cast<size_t>(M * plane));
    const auto v = vertex(Codelet::kConv, {const_cast<float*>(x.data()), weights.data(), y.data()},
                          with(p, {0, 1, 0, M}));
    REQUIRE(!run_for_fault(v, scratch, compute_set));
    return y;
  };
  const std::vector<float> first = conv(worker, 1, w);
  for (float& v : w)
    v = -v; // the same tensor, new values (which no compute set does to its input)
  const std::vector<float> reused = conv(worker, 1, w);
  const std::vector<float> later = conv(worker, 2, w);
  const std::vector<float> elsewhere = conv(other_engines_worker, 1, w);
  std::vector<float> other = w; // another tensor within the same compute set
  for (float& v : other)
    v = -v;
  const std::vector<float> other_tensor = conv(worker, 2, other);
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(reused[i] == first[i]);
    CHECK(later[i] == -first[i]);
    CHECK(elsewhere[i] == -first[i]);
    CHECK(other_tensor[i] == first[i]);
  }
}

// oneDNN's blocked layouts at the channel counts of real models; every output element is summed
// in one order however vertices split samples, channels and output rows, so results are bitwise
// the same for any split (and so for any --threads).
TEST_CASE("kernels: Conv gives bitwise the same results however vertices split the work") {
  for (const Geometry& g :
       {Geometry{4, 16, 12, 12, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1},
        Geometry{3, 1, 14, 14, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1},
        Geometry{2, 24, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
        Geometry{1, 3, 30, 30, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1},  // ResNet's stem
        Geometry{2, 64, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, // its 3×3 blocks
        Geometry{1, 16, 13, 11, 3, 3, 2, 2, 1, 1, 6, 1, 2, 1}, // a last row wholly in the padding
        // ResNet's last stages: oneDNN's brgemm convolution (AVX-512) summed 512
        // input channels in an order that depended on the block (conv_forward.cpp)
        Geometry{1, 512, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        Geometry{1, 256, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
        // 1×1 convolutions at channel counts whose row bands oneDNN sums in another order
        // (conv_forward.h): their samples still split freely, as the coalescer merges them
        Geometry{8, 96, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
        Geometry{4, 144, 28, 28, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1}}) {
    CAPTURE(g.C);
    CAPTURE(g.H);
    const int64_t M = 40, plane = g.OH() * g.OW();
    auto x = values(static_cast<size_t>(g.N * g.C * g.H * g.W), 9);
    auto w = values(static_cast<size_t>(M * g.C * g.KH * g.KW), 10);
    auto b = values(static_cast<size_t>(M), 11);
    const std::vector<int64_t> p = with(g.params(), {M, 1});
    std::vector<float> whole(static_cast<size_t>(g.N * M * plane)), split(whole.size()), rows(whole.size());
    run(Codelet::kConv, {x.data(), w.data(), b.data(), whole.data()}, with(p, {0, g.N, 0, M}));
    for (int64_t n = 0; n < g.N; ++n) {
      for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 5}, {5, 13}, {13, 16}, {16, 40}}) {
        run(Codelet::kConv, {x.data(), w.data(), b.data(), split.data()}, with(p, {n, n + 1, lo, hi}));
      }
    }
    CHECK(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)) == 0);
    const bool rows_keep_sums = g.KH * g.KW > 1 || g.C <= 32;
    // A fused Relu gives Relu's rule applied to those results (it is taken as the outputs leave
    // oneDNN's layout), whole and in blocks of channels and output rows, the bias-only rows of a
    // window wholly in the padding included.
    std::vector<float> relu_whole(whole.size(), -1.0f), relu_split(whole.size(), -1.0f);
    run(Codelet::kConv, {x.data(), w.data(), b.data(), relu_whole.data()}, with(p, {0, g.N, 0, M, 1}));
    for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 16}, {16, 40}}) {
      for (int64_t ob = 0; ob < g.OH(); ob += 4) {
        run(Codelet::kConv, {x.data(), w.data(), b.data(), relu_split.data()},
            with(p, {0, g.N, lo, hi, 1, ob, std::min(g.OH(), ob + 4)}));
      }
    }
    for (size_t i = 0; i < whole.size(); ++i) {
      const float want = whole[i] > 0.0f ? whole[i] : 0.0f;
      CHECK(std::bit_cast<uint32_t>(relu_whole[i]) == std::bit_cast<uint32_t>(want));
      if (rows_keep_sums) CHECK(std::bit_cast<uint32_t>(relu_split[i]) == std::bit_cast<uint32_t>(want));
    }
    // Output rows one at a time, in blocks of 3, and in two halves (the fused_relu flag, 0, comes
    // before the row range), over all samples and channels or a block of them; not for a 1×1
    // convolution of many channels (the exception of conv_forward.h).
    for (int64_t step : {int64_t{1}, int64_t{3}, (g.OH() + 1) / 2}) {
      if (!rows_keep_sums) break;
      CAPTURE(step);
      std::fill(rows.begin(), rows.end(), -1.0f);
      for (int64_t ob = 0; ob < g.OH(); ob += step) {
        const int64_t oe = std::min(g.OH(), ob + step);
        run(Codelet::kConv, {x.data(), w.data(), b.data(), rows.data()}, with(p, {0, g.N, 0, 24, 0, ob, oe}));
        for (int64_t n = 0; n < g.N; ++n) {
          run(Codelet::kConv, {x.data(), w.data(), b.data(), rows.data()},
              with(p, {n, n + 1, 24, M, 0, ob, oe}));
        }
      }
      CHECK(std::memcmp(whole.data(), rows.data(), whole.size() * sizeof(float)) == 0);
    }
    // And against direct loops, for a few outputs of each sample.
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t m : {int64_t{0}, int64_t{17}, M - 1}) {
        for (int64_t o : {int64_t{0}, plane / 2, plane - 1}) {
          const int64_t oy = o / g.OW(), ox = o % g.OW();
          double want = b[static_cast<size_t>(m)];
          for (int64_t c = 0; c < g.C; ++c) {
            for (int64_t ky = 0; ky < g.KH; ++ky) {
              for (int64_t kx = 0; kx < g.KW; ++kx) {
                const int64_t iy = g.iy(oy, ky), ix = g.ix(ox, kx);
                if (!g.inside(iy, ix)) continue;
                want += static_cast<double>(x[static_cast<size_t>(((n * g.C + c) * g.H + iy) * g.W + ix)]) *
                        w[static_cast<size_t>(((m * g.C + c) * g.KH + ky) * g.KW + kx)];
              }
            }
          }
          const float got = whole[static_cast<size_t>((n * M + m) * plane + o)];
          CHECK(std::abs(got - want) <= 1e-4 + 1e-4 * std::abs(want));
        }
      }
    }
  }
}

// A vertex over several groups of a depthwise convolution runs them as one grouped oneDNN
// convolution; over other groups, group by group. Each output sums its group's taps in one order
// either way, so every split gives the bits of one group at a time: depthwise (mobilenet's 3×3 at
// strides 1 and 2, efficientnet's 5×5), a channel multiplier of 2 and groups of 4 channels (both
// of which oneDNN's grouped call would sum in another order: the multiplier with AVX2 alone);
// with and without a bias.
TEST_CASE("kernels: a grouped Conv gives bitwise the same results in one call as group by group") {
  struct Case {
    Geometry g;
    int64_t groups, M;
  };
  for (const Case& c : {Case{{1, 32, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 32, 32},
                        Case{{2, 48, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, 48, 48},
                        Case{{1, 40, 9, 9, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1}, 40, 40},
                        Case{{1, 16, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 16, 32},
                        Case{{2, 32, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 8, 16}}) {
    const Geometry& g = c.g;
    const int64_t M = c.M, Mg = M / c.groups, plane = g.OH() * g.OW();
    CAPTURE(g.C);
    CAPTURE(c.groups);
    CAPTURE(M);
    auto x = values(static_cast<size_t>(g.N * g.C * g.H * g.W), 12);
    auto w = values(static_cast<size_t>(M * g.C / c.groups * g.KH * g.KW), 13);
    auto b = values(static_cast<size_t>(M), 14);
    const std::vector<int64_t> p = with(g.params(), {M, c.groups});
    for (const bool bias : {true, false}) {
      CAPTURE(bias);
      std::vector<void*> operands{x.data(), w.data()};
      if (bias) operands.push_back(b.data());
      auto conv = [&](std::vector<float>& y, const std::vector<int64_t>& block) {
        std::vector<void*> with_y = operands;
        with_y.push_back(y.data());
        run(Codelet::kConv, with_y, with(p, block));
      };
      std::vector<float> one_call(static_cast<size_t>(g.N * M * plane)), by_group(one_call.size()),
          crossing(one_call.size());
      conv(one_call, {0, g.N, 0, M});
      for (int64_t group = 0; group < c.groups; ++group)
        conv(by_group, {0, g.N, group * Mg, (group + 1) * Mg});
      CHECK(std::memcmp(one_call.data(), by_group.data(), one_call.size() * sizeof(float)) == 0);
      // Blocks that start and end inside groups (with a multiplier) and cross several whole ones,
      // over bands of output rows.
      const int64_t cuts[] = {0, 1, M / 2 + 1, M - 1, M};
      for (size_t i = 0; i + 1 < std::size(cuts); ++i) {
        for (int64_t ob = 0; ob < g.OH(); ob += 4)
          conv(crossing, {0, g.N, cuts[i], cuts[i + 1], 0, ob, std::min(g.OH(), ob + 4)});
      }
      CHECK(std::memcmp(one_call.data(), crossing.data(), one_call.size() * sizeof(float)) == 0);
    }
  }
}

// MaxPool keeps the first maximal tap: a NaN first tap is the result, a later NaN is skipped;
// a window that lies wholly in the padding gives -inf.
TEST_CASE("kernels: MaxPool NaN taps and windows outside the input") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // N=1, C=2, H=W=2; 2x2 windows at stride 2 with pads of 2 on the bottom and right: OH=OW=2,
  // only output (0, 0) of each plane holds input positions.
  const std::vector<int64_t> p{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 2, 2, 1, 1, 0, 2};
  std::vector<float> x{nan, 1, 2, 3, 1, nan, 2, 0}, y(8, -7.0f);
  run(Codelet::kMaxPool, {x.data(), y.data()}, p);
  CHECK(std::isnan(y[0]));
  CHECK(y[4] == 2.0f);
  for (size_t i : {1, 2, 3, 5, 6, 7})
    CHECK(y[i] == -inf);
  // The same rule where windows larger than 2×2 lie wholly inside the input: one 3×3 window per
  // plane, NaN first in plane 0 and last in plane 1 (after its maximum).
  const std::vector<int64_t> q{1, 2, 3, 3, 1, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 0, 2};
  std::vector<float> z(18, 1.0f), out(2, -7.0f);
  z[0] = nan;
  z[9 + 4] = 5.0f;
  z[9 + 8] = nan;
  run(Codelet::kMaxPool, {z.data(), out.data()}, q);
  CHECK(std::isnan(out[0]));
  CHECK(out[1] == 5.0f);
}

TEST_CASE("kernels: ChannelSum and ChannelAffine") {
  const int64_t N = 3, C = 4, S = 5;
  auto x = values(static_cast<size_t>(N * C * S), 7);
  auto scale = values(static_cast<size_t>(C), 8), shift = values(static_cast<size_t>(C), 9);
  std::vector<float> sum(C), y(x.size());
  run(Codelet::kChannelSum, {x.data(), sum.data()}, {N, C, S, 0, 3});
  run(Codelet::kChannelSum, {x.data(), sum.data()}, {N, C, S, 3, 4});
  run(Codelet::kChannelAffine, {x.data(), scale.data(), shift.data(), y.data()}, {N, C, S, 0, 17});
  run(Codelet::kChannelAffine, {x.data(), scale.data(), shift.data(), y.data()}, {N, C, S, 17, N * C * S});
  std::vector<double> sum_want(C), y_want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i / S % C;
    sum_want[c] += x[i];
    y_want[i] = static_cast<double>(x[i]) * scale[c] + shift[c];
  }
  check_conv_close(sum, sum_want);
  check_conv_close(y, y_want);
  // Split over samples into partials (as the compiler splits a large bias gradient), summed: the
  // same sums within float rounding; the one-share form gives the old layout's bits.
  std::vector<float> partials(2 * C, -7.0f), one(C, -7.0f);
  run(Codelet::kChannelSum, {x.data(), partials.data()}, {N, C, S, 0, 2, 0, 1, 2, 0});
  run(Codelet::kChannelSum, {x.data(), partials.data()}, {N, C, S, 2, C, 0, 1, 2, 0});
  run(Codelet::kChannelSum, {x.data(), partials.data()}, {N, C, S, 0, C, 1, N, 2, 1});
  std::vector<double> summed(C);
  for (size_t c = 0; c < static_cast<size_t>(C); ++c)
    summed[c] = static_cast<double>(partials[c]) + partials[static_cast<size_t>(C) + c];
  check_conv_close(sum, summed);
  run(Codelet::kChannelSum, {x.data(), one.data()}, {N, C, S, 0, C, 0, N, 1, 0});
  CHECK(std::memcmp(one.data(), sum.data(), sum.size() * sizeof(float)) == 0);
  const auto xs = static_cast<uint64_t>(N * C * S), cs = static_cast<uint64_t>(C);
  CHECK(validate(Codelet::kChannelSum, {xs, 2 * cs}, {N, C, S, 0, C, 1, N, 2, 1}).ok());
  CHECK_FALSE(validate(Codelet::kChannelSum, {xs, cs}, {N, C, S, 0, C, 1, N, 2, 1}).ok());     // size
  CHECK_FALSE(validate(Codelet::kChannelSum, {xs, 2 * cs}, {N, C, S, 0, C, 1, N, 2, 2}).ok()); // part
  CHECK_FALSE(validate(Codelet::kChannelSum, {xs, 2 * cs}, {N, C, S, 0, C, 1, N + 1, 2, 1}).ok());
  CHECK_FALSE(validate(Codelet::kChannelSum, {xs, cs}, {N, C, S, 0, C, 0, N}).ok()); // half a share
}

TEST_CASE("kernels: BatchNorm, its gradients and ChannelsLayout") {
  const int64_t N = 2, C = 3, S = 4;
  const float eps = 0.01f;
  auto x = values(static_cast<size_t>(N * C * S), 10), dy = values(static_cast<size_t>(N * C * S), 11);
  auto scale = values(C, 12), bias = values(C, 13), mean = values(C, 14), var = values(C, 15);
  for (float& v : var)
    v = std::abs(v) + 0.5f;
  std::vector<float> y(x.size()), dx(x.size()), dscale(C), last(x.size()), first(x.size());
  auto run_eps = [&](Codelet c, const std::vector<void*>& ops, const std::vector<int64_t>& params) {
    run(c, ops, params, {eps});
  };
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 5}, {5, N * C * S}}) {
    run_eps(Codelet::kBatchNorm, {x.data(), scale.data(), bias.data(), mean.data(), var.data(), y.data()},
            {N, C, S, b, e});
    run_eps(Codelet::kBatchNormGradInput, {dy.data(), scale.data(), var.data(), dx.data()}, {N, C, S, b, e});
    run(Codelet::kChannelsLayout, {x.data(), last.data()}, {N, C, S, b, e, 1});
  }
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 7}, {7, N * C * S}}) {
    run(Codelet::kChannelsLayout, {last.data(), first.data()}, {N, C, S, b, e, 0});
  }
  run_eps(Codelet::kBatchNormGradScale, {x.data(), dy.data(), mean.data(), var.data(), dscale.data()},
          {N, C, S, 0, 1});
  run_eps(Codelet::kBatchNormGradScale, {x.data(), dy.data(), mean.data(), var.data(), dscale.data()},
          {N, C, S, 1, C});
  std::vector<double> y_want(x.size()), dx_want(x.size()), ds_want(C), last_want(x.size());
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
      for (int64_t s = 0; s < S; ++s) {
        const size_t i = static_cast<size_t>((n * C + c) * S + s);
        y_want[i] = (x[i] - mean[c]) * inv * scale[c] + bias[c];
        dx_want[i] = dy[i] * scale[c] * inv;
        ds_want[static_cast<size_t>(c)] += dy[i] * (x[i] - mean[c]) * inv;
        last_want[static_cast<size_t>((n * S + s) * C + c)] = x[i];
      }
    }
  }
  check_conv_close(y, y_want);
  check_conv_close(dx, dx_want);
  check_conv_close(dscale, ds_want);
  check_conv_close(last, last_want);
  CHECK(first == x);
}

ipu::format::Vertex make_vertex(Codelet c, int operands, const std::vector<int64_t>& params) {
  ipu::format::Vertex v;
  v.set_codelet(static_cast<uint32_t>(c));
  for (int i = 0; i < operands; ++i)
    v.add_operands(static_cast<uint32_t>(i));
  for (int64_t p : params)
    v.add_params(p);
  return v;
}

TEST_CASE("kernels: the window codelets refuse parameters that would leave their operands") {
  using ipu::format::FLOAT32;
  const Geometry g{2, 4, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const auto p = with(g.params(), {8, 2});
  const uint64_t xs = 2 * 4 * 5 * 6, ws = 8 * 2 * 9, ys = 2 * 8 * 5 * 6;
  const std::vector<OperandInfo> conv_ops = {{FLOAT32, xs}, {FLOAT32, ws}, {FLOAT32, 8}, {FLOAT32, ys}};
  auto conv_status = [&](const std::vector<int64_t>& params, const std::vector<OperandInfo>& ops = {}) {
    const auto& o = ops.empty() ? conv_ops : ops;
    return kernel(Codelet::kConv)
        .validate(make_vertex(Codelet::kConv, static_cast<int>(o.size()), params), o);
  };
  CHECK(conv_status(with(p, {0, 2, 0, 8})).ok());
  CHECK_FALSE(conv_status(with(p, {0, 3, 0, 8})).ok());                // samples past N
  CHECK_FALSE(conv_status(with(p, {0, 2, 4, 9})).ok());                // channels past M
  CHECK(conv_status(with(p, {0, 2, 0, 8, 1})).ok());                   // a fused Relu
  CHECK_FALSE(conv_status(with(p, {0, 2, 0, 8, 2})).ok());             // fused_relu neither 0 nor 1
  CHECK_FALSE(conv_status(with(p, {0, 2, 0, 8, 1, 0})).ok());          // a parameter too many
  CHECK(conv_status(with(p, {0, 2, 0, 8, 0, 1, 4})).ok());             // output rows [1, 4) of 5
  CHECK(conv_status(with(p, {0, 2, 0, 8, 1, 5, 5})).ok());             // no rows, with a fused Relu
  CHECK_FALSE(conv_status(with(p, {0, 2, 0, 8, 0, 3, 6})).ok());       // rows past OH
  CHECK_FALSE(conv_status(with(p, {0, 2, 0, 8, 0, 4, 3})).ok());       // rows that end before they begin
  CHECK_FALSE(conv_status(with(p, {0, 2, 0, 8, 2, 0, 5})).ok());       // fused_relu neither 0 nor 1
  CHECK_FALSE(conv_status(with(p, {0, 2, 0, 8, 0, 0, 5, 0})).ok());    // a parameter too many
  CHECK_FALSE(conv_status(with(g.params(), {8, 3, 0, 2, 0, 8})).ok()); // 4 channels in 3 groups
  CHECK_FALSE(
      conv_status(with(p, {0, 2, 0, 8}), {{FLOAT32, xs}, {FLOAT32, ws - 1}, {FLOAT32, 8}, {FLOAT32, ys}})
          .ok());
  CHECK_FALSE(
      conv_status(with(p, {0, 2, 0, 8}), {{FLOAT32, xs}, {FLOAT32, ws}, {FLOAT32, 8}, {FLOAT32, ys + 1}})
          .ok());
  auto bad = g.params();
  bad[8] = 0; // stride 0
  CHECK_FALSE(conv_status(with(bad, {8, 2, 0, 2, 0, 8})).ok());
  bad = g.params();
  bad[10] = -1; // negative pad
  CHECK_FALSE(conv_status(with(bad, {8, 2, 0, 2, 0, 8})).ok());

  const std::vector<OperandInfo> pool_ops = {{FLOAT32, xs}, {FLOAT32, 2 * 4 * 5 * 6}};
  auto pool_status = [&](const std::vector<int64_t>& params) {
    return kernel(Codelet::kMaxPool).validate(make_vertex(Codelet::kMaxPool, 2, params), pool_ops);
  };
  CHECK(pool_status(with(g.params(), {0, 8})).ok());
  CHECK_FALSE(pool_status(with(g.params(), {0, 9})).ok());
  CHECK_FALSE(pool_status(with(g.params(), {3, 2})).ok());
  CHECK(pool_status(with(g.params(), {2, 3, 1, 4})).ok());          // output rows [1, 4) of 5
  CHECK_FALSE(pool_status(with(g.params(), {2, 3, 1, 6})).ok());    // rows past OH
  CHECK_FALSE(pool_status(with(g.params(), {2, 3, 4, 1})).ok());    // rows that end before they begin
  CHECK_FALSE(pool_status(with(g.params(), {2, 3, 1})).ok());       // half a row range
  CHECK_FALSE(pool_status(with(g.params(), {2, 3, 1, 4, 0})).ok()); // a parameter too many
  auto big = g.params();
  big[4] = 6; // OH that does not match Y's size
  CHECK_FALSE(pool_status(with(big, {0, 8})).ok());
}

} // namespace
