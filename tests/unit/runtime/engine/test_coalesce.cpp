// Host tasks from per-tile vertices (runtime/engine/coalesce.cpp): MatMul grids become tasks that
// span the shorter side of C whatever order the blocks come in, ranges merge out of order, the
// size cap holds, the tasks compute what the vertices did, and coalesce_by_op keeps ops apart.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/engine/coalesce.h"
#include "tests/unit/runtime/kernels/kernel_test_support.h"

namespace {

using ipu::engine::coalesce;
using ipu::format::Codelet;
using ipu::kernels::PreparedVertex;
using namespace ipu::kernels::testing;

enum MatMulParam { kRowBegin = 5, kRowEnd = 6, kColBegin = 7, kColEnd = 8 };

struct Block {
  int64_t row_begin, row_end, col_begin, col_end;
  bool operator==(const Block&) const = default;
};

Block block_of(const PreparedVertex& v) {
  return {v.params[kRowBegin], v.params[kRowEnd], v.params[kColBegin], v.params[kColEnd]};
}

// A 4 × 4 grid of blocks of C [M, N], column blocks outermost (as the compiler emits them), each
// of 10 cycles.
std::vector<PreparedVertex> matmul_grid(float* a, float* b, float* c, int64_t M, int64_t N, int64_t K) {
  std::vector<PreparedVertex> grid;
  for (int64_t j = 0; j < 4; ++j) {
    for (int64_t i = 0; i < 4; ++i) {
      grid.push_back(vertex(Codelet::kMatMul, {a, b, c},
                            {M, N, K, 0, 0, i * M / 4, (i + 1) * M / 4, j * N / 4, (j + 1) * N / 4, 0}, {},
                            10));
    }
  }
  return grid;
}

void run_all(const std::vector<PreparedVertex>& vertices) {
  for (const PreparedVertex& v : vertices)
    run(v);
}

void run_all(const std::vector<ipu::engine::HostTask>& tasks) {
  for (const auto& t : tasks)
    run(t.work);
}

} // namespace

TEST_CASE("coalesce: a tall MatMul's tasks span every column and split the rows") {
  const int64_t M = 64, N = 16, K = 8;
  auto a = values(M * K, 1), b = values(K * N, 2);
  std::vector<float> c(M * N), expected(M * N);
  const auto grid = matmul_grid(a.data(), b.data(), c.data(), M, N, K);
  const auto tasks = coalesce(grid, 80); // two rows of blocks per task
  REQUIRE(tasks.size() == 2);
  CHECK(block_of(tasks[0].work) == Block{0, 32, 0, 16});
  CHECK(block_of(tasks[1].work) == Block{32, 64, 0, 16});
  CHECK(tasks[0].work.cycles == 80);
  // The tasks compute all of C (SGEMM may round differently for other block shapes).
  run_all(grid);
  expected = c;
  std::fill(c.begin(), c.end(), NAN);
  run_all(tasks);
  for (size_t i = 0; i < c.size(); ++i)
    CHECK(std::abs(c[i] - expected[i]) <= 1e-5f * (1 + std::abs(expected[i])));
}

TEST_CASE("coalesce: a wide MatMul's tasks span every row and split the columns") {
  const int64_t M = 16, N = 64, K = 8;
  auto a = values(M * K, 3), b = values(K * N, 4);
  std::vector<float> c(M * N);
  const auto tasks = coalesce(matmul_grid(a.data(), b.data(), c.data(), M, N, K), 80);
  REQUIRE(tasks.size() == 2);
  CHECK(block_of(tasks[0].work) == Block{0, 16, 0, 32});
  CHECK(block_of(tasks[1].work) == Block{0, 16, 32, 64});
}

TEST_CASE("coalesce: ranges merge out of list order, within the cap, and never across a difference") {
  std::vector<float> x = values(32, 5), y(32), z(32);
  auto relu = [&](float* out, int64_t begin, int64_t end, uint64_t cycles) {
    return vertex(Codelet::kActivation, {x.data(), out}, {0, begin, end}, {}, cycles);
  };
  SUBCASE("out of order") {
    const auto tasks = coalesce({relu(y.data(), 0, 8, 5), relu(z.data(), 0, 8, 5), relu(y.data(), 8, 16, 5),
                                 relu(z.data(), 8, 16, 5)},
                                100);
    REQUIRE(tasks.size() == 2);
    CHECK(tasks[0].work.operands[1] == y.data());
    CHECK(tasks[0].work.params[2] == 16);
    CHECK(tasks[1].work.operands[1] == z.data());
    CHECK(tasks[1].work.params[2] == 16);
    // Each task names the first vertex it grew from (fault reports name its op).
    CHECK(tasks[0].first_vertex == 0);
    CHECK(tasks[1].first_vertex == 1);
  }
  SUBCASE("the cap") {
    const auto tasks = coalesce({relu(y.data(), 0, 8, 6), relu(y.data(), 8, 16, 6), relu(y.data(), 16, 24, 6),
                                 relu(y.data(), 24, 32, 30)},
                                12);
    REQUIRE(tasks.size() == 3);
    CHECK(tasks[0].work.params[2] == 16);
    CHECK(tasks[0].work.cycles == 12);
    CHECK(tasks[1].work.params[1] == 16);
    CHECK(tasks[1].first_vertex == 2);
    CHECK(tasks[2].work.cycles == 30); // larger than the cap on its own: stays whole
  }
  SUBCASE("a gap") {
    CHECK(coalesce({relu(y.data(), 0, 8, 5), relu(y.data(), 9, 16, 5)}, 100).size() == 2);
  }
}

// A Conv split over samples × output channels (the compiler's grid at batch 32): tasks take all
// of a sample's channels before more samples, so each sample's columns are built once.
TEST_CASE("coalesce: a Conv's tasks span every output channel and split the samples") {
  const int64_t N = 8, M = 8;
  std::vector<float> x = values(N * 4 * 4, 6), w = values(M * 9, 7), y(N * M * 4);
  std::vector<PreparedVertex> grid;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; m += 2) {
      grid.push_back(vertex(Codelet::kConv, {x.data(), w.data(), y.data()},
                            {N, 1, 4, 4, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, M, 1, n, n + 1, m, m + 2}, {},
                            10));
    }
  }
  const auto tasks = coalesce(grid, 80); // two samples' worth of vertices per task
  REQUIRE(tasks.size() == 4);
  for (size_t t = 0; t < tasks.size(); ++t) {
    CAPTURE(t);
    const auto& p = tasks[t].work.params;
    CHECK(p[18] == static_cast<int64_t>(2 * t));
    CHECK(p[19] == static_cast<int64_t>(2 * t + 2));
    CHECK(p[20] == 0);
    CHECK(p[21] == M);
  }
}

// The compiler's split at batch 1: a channel or two per vertex. oneDNN runs 8-channel blocks at a
// third of its speed on 32, so tasks take 32 channels even past the target size (M = 40: the
// rest, 8, make a task of their own); a Conv of fewer channels is one task.
TEST_CASE("coalesce: a Conv's tasks at batch 1 take at least 32 channels") {
  for (int64_t M : {int64_t{40}, int64_t{12}}) {
    CAPTURE(M);
    std::vector<float> x = values(4 * 4, 8), w = values(static_cast<size_t>(M * 9), 9),
                       y(static_cast<size_t>(M * 4));
    std::vector<PreparedVertex> channels;
    for (int64_t m = 0; m < M; m += 2) {
      channels.push_back(vertex(Codelet::kConv, {x.data(), w.data(), y.data()},
                                {1, 1, 4, 4, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, M, 1, 0, 1, m, m + 2}, {},
                                10));
    }
    const auto tasks = coalesce(channels, 40); // four vertices, 8 channels, by the target alone
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const auto& t : tasks)
      ranges.emplace_back(t.work.params[20], t.work.params[21]);
    using Ranges = std::vector<std::pair<int64_t, int64_t>>;
    CHECK(ranges == (M == 40 ? Ranges{{0, 32}, {32, 40}} : Ranges{{0, 12}}));
  }
}

// The compiler's split at batch 1 of a large plane: output rows over tiles as well as channels.
// Row blocks merge once the channels have (the third range), within the cap, and the tasks
// compute bitwise what the vertices did: oneDNN's direct kernels sum each output in one order
// whatever rows a call covers. Vertices without the row range (older executables) never merge
// along it.
TEST_CASE("coalesce: a Conv's row blocks at batch 1 merge after its channels, bitwise") {
  const int64_t C = 3, H = 8, W = 6, M = 4;
  std::vector<float> x = values(C * H * W, 11), w = values(M * C * 9, 12);
  std::vector<PreparedVertex> blocks;
  auto conv = [&](float* y, const std::vector<int64_t>& rows, int64_t m) {
    std::vector<int64_t> params{1, C, H, W, H, W, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, M, 1, 0, 1, m, m + 2};
    if (!rows.empty()) params.insert(params.end(), {0, rows[0], rows[1]}); // fused_relu 0, the rows
    return vertex(Codelet::kConv, {x.data(), w.data(), y}, params, {}, 10);
  };
  std::vector<float> by_vertex(M * H * W), by_task(M * H * W, -1.0f);
  for (int64_t r = 0; r < H; r += 2) {
    for (int64_t m = 0; m < M; m += 2)
      blocks.push_back(conv(by_task.data(), {r, r + 2}, m));
  }
  const auto tasks = coalesce(blocks, 40); // two row blocks of all four channels per task
  REQUIRE(tasks.size() == 2);
  for (size_t t = 0; t < tasks.size(); ++t) {
    CAPTURE(t);
    const auto& p = tasks[t].work.params;
    CHECK(p[20] == 0);
    CHECK(p[21] == M);
    CHECK(p[23] == static_cast<int64_t>(4 * t));
    CHECK(p[24] == static_cast<int64_t>(4 * t + 4));
  }
  run_all(tasks);
  for (PreparedVertex& v : blocks)
    v.operands[2] = by_vertex.data();
  run_all(blocks);
  CHECK(std::memcmp(by_vertex.data(), by_task.data(), by_task.size() * sizeof(float)) == 0);

  std::vector<float> y(M * H * W);
  CHECK(coalesce({conv(y.data(), {}, 0), conv(y.data(), {}, 2)}, 1000).size() == 1);
  CHECK(coalesce({conv(y.data(), {0, 2}, 0), conv(y.data(), {3, 5}, 0)}, 1000).size() == 2);
  CHECK(coalesce({conv(y.data(), {0, 2}, 0), conv(y.data(), {2, 4}, 0)}, 1000).size() == 1);
  // A 1×1 convolution keeps its rows apart: oneDNN's 1×1 kernel blocks input channels by them.
  auto pointwise = [&](int64_t row) {
    PreparedVertex v = conv(y.data(), {row, row + 2}, 0);
    v.params[6] = v.params[7] = 1;                                 // KH, KW
    v.params[10] = v.params[11] = v.params[12] = v.params[13] = 0; // no padding
    return v;
  };
  CHECK(coalesce({pointwise(0), pointwise(2)}, 1000).size() == 2);
}

// coalesce_by_op: what one op's vertices make never merges with another op's, even where the
// ranges continue each other (a fault must name the right op); ops come in order of first
// appearance; first_vertex indexes the compute set; each op's task size is its own (an eighth of
// its cycles, at least 20,000).
TEST_CASE("coalesce: by op, tasks keep to one op each, with the op's own size") {
  std::vector<float> x = values(64, 10), y(32), z(64);
  ipu::format::ComputeSet cs;
  std::vector<PreparedVertex> prepared;
  auto add = [&](uint32_t op, float* out, int64_t begin, int64_t end, uint64_t cycles) {
    ipu::format::Vertex& v = *cs.add_vertices();
    v.set_op(op);
    v.set_cycles(cycles);
    prepared.push_back(vertex(Codelet::kActivation, {x.data(), out}, {0, begin, end}, {}, cycles));
  };
  add(1, y.data(), 0, 8, 5);
  add(0, y.data(), 8, 16, 5);
  add(1, y.data(), 16, 24, 5);
  add(0, y.data(), 24, 32, 5);
  for (int64_t i = 0; i < 16; ++i) // op 2: 160,000 cycles, so tasks of 20,000: two vertices each
    add(2, z.data(), 4 * i, 4 * i + 4, 10000);
  // All of y in one task, were ops not kept apart.
  CHECK(coalesce({prepared[0], prepared[1], prepared[2], prepared[3]}, 100).size() == 1);

  const auto tasks = ipu::engine::coalesce_by_op(cs, prepared);
  REQUIRE(tasks.size() == 12);
  // Op 1 first (it appears first), its two vertices apart (their ranges do not meet); then op 0.
  const std::vector<size_t> first_vertices{tasks[0].first_vertex, tasks[1].first_vertex,
                                           tasks[2].first_vertex, tasks[3].first_vertex};
  CHECK(first_vertices == std::vector<size_t>{0, 2, 1, 3});
  for (size_t t = 0; t < 4; ++t)
    CHECK(tasks[t].work.params[2] - tasks[t].work.params[1] == 8);
  for (size_t t = 4; t < tasks.size(); ++t) {
    CAPTURE(t);
    CHECK(tasks[t].work.operands[1] == z.data());
    CHECK(tasks[t].work.cycles == 20000);
    CHECK(tasks[t].first_vertex == 4 + 2 * (t - 4));
  }
}
