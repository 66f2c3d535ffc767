// A MatMul split over K (poplin's inChanSplit): partial products in one compute set, their sum in
// the next. The 2048³ product fits one mk2 IPU only so, and a split product computes what the
// unsplit one does within fp32 rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/lowering/tile_planner.h"
#include "runtime/base/half.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

// C = A · B for inputs A [M, K] and B [K, N] of fixed shape, plus a bias row when `bias` is given
// (the compiler folds it into the MatMul).
std::string matmul_model(int64_t M, int64_t N, int64_t K, const std::vector<float>& bias = {}) {
  OnnxBuilder b;
  b.input("A", {K}, M).input("B", {N}, K).output("C");
  if (bias.empty()) {
    b.node("MatMul", "product", {"A", "B"}, {"C"});
  } else {
    b.floats("bias", {N}, bias);
    b.node("MatMul", "product", {"A", "B"}, {"AB"});
    b.node("Add", "biased", {"AB", "bias"}, {"C"});
  }
  return b.bytes();
}

// Options compiling a MatMul model for inference at batch 1.
compiler::CompileOptions inference_options() {
  compiler::CompileOptions options;
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.batch_size = 1;
  return options;
}

// The device's estimated cycles: every compute set's (not the predict program's host streams).
double device_cycles(const format::Executable& exe) {
  double cycles = 0;
  for (const auto& cs : exe.compute_sets())
    cycles += static_cast<double>(cs.cycles());
  return cycles;
}

int count_codelet(const format::Executable& exe, format::Codelet codelet) {
  int n = 0;
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices())
      n += v.codelet() == static_cast<uint32_t>(codelet);
  }
  return n;
}

TEST_CASE("tile planner: the 2048³ MatMul splits K and fits the tile") {
  const target::TargetSpec mk2 = *target::target_preset("mk2");
  const lowering::MatMulPlan plan = lowering::plan_matmul(2048, 2048, 2048, mk2, mk2.tiles_per_ipu);
  CHECK(plan.k.parts > 1);
  CHECK(plan.grid.rows.parts * plan.grid.cols.parts * plan.k.parts <= mk2.tiles_per_ipu);
  // Unsplit, a block receives whole rows of A and columns of B: more than a tile on 1472 tiles.
  const lowering::MatMulPlan whole = lowering::plan_matmul(2048, 2048, 2048, mk2, mk2.tiles_per_ipu, false);
  CHECK(whole.k.parts == 1);
  const double block_bytes = 4.0 * 2048 * static_cast<double>(whole.grid.rows.chunk + whole.grid.cols.chunk);
  CHECK(block_bytes > static_cast<double>(mk2.bytes_per_tile));
}

TEST_CASE("a 2048³ MatMul fits one mk2 IPU at 40-90 % of fp32 peak") {
  const int64_t n = 2048;
  auto result = compiler::compile_model(matmul_model(n, n, n), inference_options());
  INFO(result.status().message());
  REQUIRE(result.ok());
  const format::Executable& exe = result->executable;
  CHECK(result->memory.overflowing.empty());
  CHECK(count_codelet(exe, format::Codelet::kMatMulPartial) > 0);
  CHECK(count_codelet(exe, format::Codelet::kMatMul) == 0);
  REQUIRE(exe.compute_sets_size() == 2);
  CHECK(exe.compute_sets(1).name() == exe.compute_sets(0).name() + "/reduce");
  // The device's time: the two compute sets (the predict program adds the host streams of the
  // 48 MB of operands and result, which are not the MatMul's).
  const double device = device_cycles(exe);
  for (const auto& cs : exe.compute_sets()) {
    // The parts add up to the set's cycles (which are rounded down).
    CHECK(cs.compute_cycles() + cs.launch_cycles() + cs.exchange_cycles() + cs.sync_cycles() ==
          doctest::Approx(static_cast<double>(cs.cycles())).epsilon(1e-5));
  }
  const auto& t = exe.target();
  const double peak_flops =
      2.0 * t.tiles_per_ipu() * target::target_preset("mk2")->cycles.macs_per_cycle * t.clock_hz();
  const double flops = 2.0 * static_cast<double>(n * n * n) / (device / t.clock_hz());
  MESSAGE("2048³: ", flops / 1e12, " TFLOPS, ", 100 * flops / peak_flops, " % of peak, peak tile ",
          exe.estimates().peak_tile_bytes(), " bytes");
  CHECK(flops / peak_flops > 0.4);
  CHECK(flops / peak_flops < 0.9);
  // The predict program's breakdown holds the same compute sets and the streams.
  for (const auto& p : exe.programs()) {
    if (p.name() != "predict") continue;
    const auto& b = p.breakdown_per_step();
    CHECK(b.compute() + b.vertex_launch() + b.exchange() + b.sync() == doctest::Approx(device).epsilon(1e-5));
    CHECK(b.compute() + b.vertex_launch() + b.exchange() + b.sync() + b.transfer() ==
          doctest::Approx(static_cast<double>(p.cycles_per_step())).epsilon(1e-5));
  }
}

TEST_CASE("a 2048³ MatMul in fp16 runs at the fp16 AMP rate on half the bytes, its partial sums fp32") {
  const int64_t n = 2048;
  compiler::CompileOptions options = inference_options();
  auto fp32 = compiler::compile_model(matmul_model(n, n, n), options);
  options.precision = lowering::Precision::kFp16;
  auto fp16 = compiler::compile_model(matmul_model(n, n, n), options);
  INFO(fp16.status().message());
  REQUIRE(fp32.ok());
  REQUIRE(fp16.ok());
  const format::Executable& exe = fp16->executable;
  CHECK(fp16->memory.overflowing.empty());
  REQUIRE(exe.compute_sets_size() == 2);
  // A, B and C are fp16; the partial products are fp32 temporaries, and only the reduce, which
  // writes C, rounds.
  for (const auto& t : exe.tensors()) {
    CAPTURE(t.name());
    const bool operand =
        t.name() == "A" || t.name() == "B" || t.name() == "product"; // C is the product node's output
    CHECK(t.dtype() == (operand ? format::FLOAT16 : format::FLOAT32));
  }
  CHECK(exe.compute_sets(0).rounded_size() == 0);
  // The reduce adds fp32 partials: each Reduce vertex is charged its launch and the fp32 rate,
  // shares adds per element of C it writes.
  const auto& reduce = exe.compute_sets(1);
  const int64_t shares = exe.tensors(static_cast<int>(reduce.vertices(0).operands(0))).shape(0);
  REQUIRE(shares > 1);
  const target::CycleModel mk2 = target::target_preset("mk2")->cycles;
  for (const auto& v : reduce.vertices()) {
    CAPTURE(v.tile());
    REQUIRE(v.codelet() == static_cast<uint32_t>(format::Codelet::kReduce));
    using R = format::params::Reduce;
    const int64_t elements = v.params(R::kEnd) - v.params(R::kBegin);
    const double want =
        mk2.vertex_overhead_cycles + static_cast<double>(shares * elements) / mk2.vector_flops_per_cycle;
    CHECK(std::abs(static_cast<double>(v.cycles()) - want) <= 1.0);
  }
  REQUIRE(exe.compute_sets(1).rounded_size() == 1);
  const auto& rounded = exe.compute_sets(1).rounded(0);
  CHECK(exe.tensors(static_cast<int>(rounded.tensor())).name() == "product");
  CHECK(rounded.begin() == 0);
  CHECK(rounded.end() == static_cast<uint64_t>(n * n));
  const double device = device_cycles(exe), device_fp32 = device_cycles(fp32->executable);
  const auto& t = exe.target();
  const double peak_flops =
      2.0 * t.tiles_per_ipu() * target::target_preset("mk2")->cycles.half_macs_per_cycle * t.clock_hz();
  const double flops = 2.0 * static_cast<double>(n * n * n) / (device / t.clock_hz());
  MESSAGE("2048³ fp16: ", flops / 1e12, " TFLOPS, ", 100 * flops / peak_flops, " % of the fp16 peak, ",
          device, " cycles (fp32: ", device_fp32, "), peak tile ", exe.estimates().peak_tile_bytes(),
          " bytes (fp32: ", fp32->executable.estimates().peak_tile_bytes(), ")");
  CHECK(flops / peak_flops > 0.3);
  CHECK(flops / peak_flops < 0.9);
  CHECK(device < 0.5 * device_fp32);
  CHECK(static_cast<double>(exe.estimates().peak_tile_bytes()) <
        0.75 * static_cast<double>(fp32->executable.estimates().peak_tile_bytes()));
}

// Runs predict on A and B and returns C.
std::vector<float> predict(const std::string& model, const compiler::CompileOptions& options,
                           const std::vector<float>& a, const std::vector<float>& b, int* partial_vertices) {
  auto compiled = compiler::compile_model(model, options);
  if (!compiled.ok()) throw std::runtime_error(compiled.status().message());
  *partial_vertices = count_codelet(compiled->executable, format::Codelet::kMatMulPartial);
  auto engine = engine::Engine::create(std::move(compiled->executable), {});
  if (!engine.ok()) throw std::runtime_error(engine.status().message());
  const auto& exe = (*engine)->executable();
  std::vector<float> c;
  engine::HostStreams streams;
  streams.pull = [&](uint32_t stream, uint32_t, std::span<std::byte> dst) -> Status {
    const std::vector<float>& src = exe.streams(static_cast<int>(stream)).name() == "features" ? a : b;
    REQUIRE(dst.size() == src.size() * sizeof(float));
    std::memcpy(dst.data(), src.data(), dst.size());
    return Status();
  };
  streams.push = [&](uint32_t, uint32_t, std::span<const std::byte> src) -> Status {
    const float* f = reinterpret_cast<const float*>(src.data());
    c.assign(f, f + src.size() / sizeof(float));
    return Status();
  };
  Status s = (*engine)->run(*(*engine)->find_program("predict"), streams);
  if (!s.ok()) throw std::runtime_error(s.message());
  return c;
}

// The product split over K (on 64 KiB tiles) against the same product in one vertex.
void check_split_matches_whole(bool with_bias) {
  const int64_t M = 24, N = 20, K = 3000;
  const std::vector<float> bias =
      with_bias ? wave(static_cast<size_t>(N), 50.0f, 0.9f) : std::vector<float>{};
  const std::string model = matmul_model(M, N, K, bias);
  const std::vector<float> a = wave(static_cast<size_t>(M * K), 1.0f, 0.3f),
                           b = wave(static_cast<size_t>(K * N), 1.0f, 0.7f);
  auto options = small_target_options(1);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  // 64 KiB tiles: a block with all of K does not fit, so K is split.
  options.bytes_per_tile = 64 * 1024;
  int split_partials = 0, whole_partials = 0;
  const std::vector<float> split = predict(model, options, a, b, &split_partials);
  CHECK(split_partials > 0);
  // One tile of 16 MiB: the whole product in one vertex, K unsplit.
  options.tiles_per_ipu = 1;
  options.bytes_per_tile = 16 << 20;
  const std::vector<float> whole = predict(model, options, a, b, &whole_partials);
  CHECK(whole_partials == 0);
  REQUIRE(split.size() == static_cast<size_t>(M * N));
  REQUIRE(whole.size() == split.size());
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      // fp32 rounding of a K-term dot product: K ulps of Σ|a·b|.
      double magnitude = 0;
      for (int64_t k = 0; k < K; ++k)
        magnitude += std::fabs(a[static_cast<size_t>(i * K + k)] * b[static_cast<size_t>(k * N + j)]);
      if (with_bias) magnitude += std::fabs(bias[static_cast<size_t>(j)]);
      const size_t at = static_cast<size_t>(i * N + j);
      CAPTURE(at);
      CHECK(std::fabs(split[at] - whole[at]) <= static_cast<double>(K) * 0x1p-24 * magnitude);
    }
  }
}

TEST_CASE("an fp16 MatMul split over K rounds its fp16 inputs and its fp32 sum of partials once") {
  const int64_t M = 24, N = 20, K = 3000;
  const std::string model = matmul_model(M, N, K);
  const std::vector<float> a = wave(static_cast<size_t>(M * K), 1.0f, 0.3f),
                           b = wave(static_cast<size_t>(K * N), 1.0f, 0.7f);
  auto options = small_target_options(1);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.bytes_per_tile = 64 * 1024;
  options.precision = lowering::Precision::kFp16;
  int partials = 0;
  const std::vector<float> c = predict(model, options, a, b, &partials);
  CHECK(partials > 0);
  REQUIRE(c.size() == static_cast<size_t>(M * N));
  int off_fp32 = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      // The product of the binary16 inputs, in double: the device's fp32 sum is within K fp32
      // ulps of Σ|a·b| of it, and then rounds to binary16 once (half an fp16 ulp).
      double exact = 0, magnitude = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double term = static_cast<double>(round_to_half(a[static_cast<size_t>(i * K + k)])) *
                            round_to_half(b[static_cast<size_t>(k * N + j)]);
        exact += term;
        magnitude += std::fabs(term);
      }
      const float got = c[static_cast<size_t>(i * N + j)];
      CAPTURE(i);
      CAPTURE(j);
      CHECK(round_to_half(got) == got);
      const double half_ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(exact), 0x1p-14)) - 11);
      CHECK(std::fabs(got - exact) <= half_ulp + static_cast<double>(K) * 0x1p-24 * magnitude);
      off_fp32 += got != static_cast<float>(exact) ? 1 : 0;
    }
  }
  CHECK(off_fp32 > M * N / 2); // rounded to fp16, not fp32
}

TEST_CASE("a MatMul split over K computes the unsplit product within fp32 rounding") {
  check_split_matches_whole(false);
}

TEST_CASE("a MatMul with a folded bias splits over K too, its first share adding the bias") {
  check_split_matches_whole(true);
}

} // namespace
} // namespace ipu::testing
