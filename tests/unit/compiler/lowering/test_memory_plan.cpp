#include <doctest/doctest.h>

#include <cmath>

#include "runtime/engine/engine.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

TEST_CASE("memory plan: a model that overflows names the tile, the bytes and the tensors") {
  auto options = small_target_options(8);
  options.tiles_per_ipu = 2;
  options.bytes_per_tile = 16 * 1024;
  auto result = compiler::compile_model(kWideMlpSpec, options);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kResourceExhausted);
  const std::string m = result.status().message();
  CHECK(m.rfind("test.json: ", 0) == 0);
  CHECK(m.find("out of memory") != std::string::npos);
  CHECK(m.find("tile ") != std::string::npos);
  CHECK(m.find("bytes of 16,384") != std::string::npos);
  CHECK(m.find("wide/kernel") != std::string::npos); // 128 KiB of weights, the largest tensor
}

// The report says what fills a tile at its fullest moment, by category, and the categories add
// up to what the tile needs: no tensor that is not live then is named (ResNet-18's report once
// listed a few small tensors for a tile that exchange buffers filled).
TEST_CASE("memory plan: an overflowing tile's bytes are broken down into categories that add up") {
  auto options = small_target_options(8);
  options.tiles_per_ipu = 2;
  options.bytes_per_tile = 16 * 1024;
  auto result = compiler::compile_model(kWideMlpSpec, options);
  REQUIRE_FALSE(result.ok());
  const std::string m = result.status().message();
  for (const char* part : {"in compute set '", ": tensors ", "(largest: wide/kernel ", ", exchange buffers ",
                           ", vertex state ", " vertices), code ", " codelets)"}) {
    CHECK_MESSAGE(m.find(part) != std::string::npos, part);
  }
  auto plan_options = small_target_options(8);
  plan_options.tiles_per_ipu = 2;
  plan_options.bytes_per_tile = 1 << 30; // compiles, so the plan can be read
  auto fits = compiler::compile_model(kWideMlpSpec, plan_options);
  REQUIRE(fits.ok());
  const lowering::TileUsage& u = fits->memory.fullest;
  CHECK(u.tensor_bytes + u.exchange_bytes + u.vertex_state_bytes + u.code_bytes == u.peak_bytes);
  CHECK(u.vertices > 0);
  CHECK(u.codelets > 0);
  CHECK(u.vertex_state_bytes == u.vertices * 32);
  CHECK(!u.compute_set.empty());
  uint64_t named = 0;
  for (const auto& [name, bytes] : u.largest_tensors)
    named += bytes;
  CHECK(named <= u.tensor_bytes);
}

TEST_CASE("memory plan: the same model fits a larger target and reports its fullest tile") {
  auto options = small_target_options(8);
  auto result = compiler::compile_model(kWideMlpSpec, options);
  REQUIRE(result.ok());
  const auto& plan = result->memory;
  CHECK(plan.overflowing.empty());
  CHECK(plan.fullest.peak_bytes > 0);
  CHECK(plan.fullest.peak_bytes <= options.bytes_per_tile.value());
  // Weights and momentum (2 × (64·512 + 512 + 512·10 + 10) floats) are always resident.
  const uint64_t resident = 2 * 4 * (64 * 512 + 512 + 512 * 10 + 10);
  CHECK(plan.total_bytes >= resident);
  CHECK(result->executable.estimates().peak_tile_bytes() == plan.fullest.peak_bytes);
  // Memory over the program peaks where the fullest tile does, and never falls below what lives
  // all program long.
  REQUIRE(!plan.liveness.empty());
  uint64_t liveness_peak = 0;
  for (const lowering::LiveStep& step : plan.liveness) {
    REQUIRE(step.fullest_tile_per_ipu.size() == 1);
    liveness_peak = std::max(liveness_peak, step.fullest_tile_per_ipu[0]);
    CHECK(step.total_per_ipu[0] >= resident);
  }
  CHECK(liveness_peak == plan.fullest.peak_bytes);
}

// Attention-shaped products of two activations: x [8, 4, 32, 32] · x. Each operand holds
// 128 KiB; a tile that received all of both (as BatchMatMul vertices once did) would need
// 256 KiB and overflow, while the matrices of its own batches fit easily.
TEST_CASE("memory plan: a BatchMatMul vertex receives only the matrices of its batches") {
  OnnxBuilder b;
  b.input("x", {4, 32, 32}).output("y");
  b.node("MatMul", "scores", {"x", "x"}, {"y"});
  auto options = small_target_options(8);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.bytes_per_tile = 128 * 1024;
  auto result = compiler::compile_model(b.bytes(), options);
  INFO(result.status().message());
  REQUIRE(result.ok());
  CHECK(result->memory.overflowing.empty());
  CHECK(result->memory.fullest.peak_bytes < 64 * 1024);
}

// An embedding as BERT has one, scaled to a 16-tile IPU of 384 KiB tiles: a [4000, 64] table
// (1 MB, a sixth of the IPU) looked up by 32 tokens per sample. A Gather vertex that received
// the whole table (as every one once did) would need 1 MB; split by columns, each receives a
// thin slice of it, and GatherGrad's vertices receive only their columns of dY.
TEST_CASE("memory plan: an embedding table larger than a tile is looked up and trained in column blocks") {
  const int64_t vocabulary = 4000, width = 64, tokens = 32;
  OnnxBuilder b;
  b.input("tokens", {tokens}).output("logits");
  b.floats("table", {vocabulary, width}, wave(static_cast<size_t>(vocabulary * width), 0.1f, 0.3f));
  b.floats("wo", {width, 10}, wave(static_cast<size_t>(width * 10), 0.2f, 0.1f));
  b.node("Gather", "embed", {"table", "tokens"}, {"e"});
  auto& pool = b.node("ReduceMean", "pool", {"e"}, {"p"});
  OnnxBuilder::ints_attr(pool, "axes", {1});
  OnnxBuilder::int_attr(pool, "keepdims", 0);
  b.node("MatMul", "out", {"p", "wo"}, {"logits"});
  auto options = small_target_options(8);
  options.model_path = "test.onnx";
  options.bytes_per_tile = 384 * 1024;
  for (compiler::Mode mode : {compiler::Mode::kInfer, compiler::Mode::kTrain}) {
    options.mode = mode;
    if (mode == compiler::Mode::kTrain) options.loss = passes::LossKind::kSparseCategoricalCrossEntropy;
    auto result = compiler::compile_model(b.bytes(), options);
    INFO(result.status().message());
    REQUIRE(result.ok());
    CHECK(result->memory.overflowing.empty());
    // A tile holds its slices of the table and of its gradient (64,000 bytes each) and what it
    // receives, never the table.
    CHECK(result->memory.fullest.peak_bytes < 300 * 1024);
  }
}

// A convolution over a plane larger than a tile's budget, as ResNet-18's first layers at 224×224:
// one sample of x [1, 16, 64, 64] is 256 KiB. A vertex that received its whole sample (as every
// Conv vertex once did, split over samples and output channels only) would overflow a 128 KiB
// tile; split over output rows too, each receives only the input rows its windows reach.
TEST_CASE("memory plan: a Conv over a plane larger than a tile splits its output rows") {
  const int64_t channels = 16, side = 64;
  OnnxBuilder b;
  b.input("x", {channels, side, side}).output("y");
  b.floats("w", {channels, channels, 3, 3}, wave(static_cast<size_t>(channels * channels * 9), 0.1f, 0.2f));
  auto& conv = b.node("Conv", "conv", {"x", "w"}, {"y"});
  OnnxBuilder::ints_attr(conv, "kernel_shape", {3, 3});
  OnnxBuilder::ints_attr(conv, "pads", {1, 1, 1, 1});
  auto options = small_target_options(1);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.bytes_per_tile = 128 * 1024;
  auto result = compiler::compile_model(b.bytes(), options);
  INFO(result.status().message());
  REQUIRE(result.ok());
  CHECK(result->memory.overflowing.empty());
  const uint64_t sample_bytes = 4 * channels * side * side;
  CHECK(result->memory.fullest.peak_bytes < sample_bytes / 2);
  // Every Conv vertex names its output rows, and they cover each plane once.
  std::vector<int64_t> rows_per_channel(static_cast<size_t>(channels));
  using P = format::params::Conv;
  for (const auto& cs : result->executable.compute_sets()) {
    for (const auto& v : cs.vertices()) {
      if (v.codelet() != static_cast<uint32_t>(format::Codelet::kConv)) continue;
      REQUIRE(v.params_size() >= P::kOutRowEnd + 1);
      if (v.params_size() == P::kCount && v.params(P::kPart) != 0) continue; // an input-channel share
      for (int64_t m = v.params(P::kMBegin); m < v.params(P::kMEnd); ++m) {
        rows_per_channel[static_cast<size_t>(m)] += v.params(P::kOutRowEnd) - v.params(P::kOutRowBegin);
      }
    }
  }
  for (int64_t rows : rows_per_channel)
    CHECK(rows == side);
}

// A convolution whose kernel slice per output channel outgrows a tile's budget, as ResNet-50's
// last layers at micro-batch 20: split over samples, output channels and rows only, every vertex
// would receive all 1,024 input channels of its samples and their kernel rows. Split over input
// channels too (poplin's inChanSplit), each sums its share into partials that a reduce adds; its
// input gradient splits the output channels it sums likewise (widen_again's, 1,024 of them). The
// plans on a tile 128 times roomier (which share too, where that is faster) compute the same within
// float rounding: the logits, the loss and the kernel after a train step.
TEST_CASE(
    "memory plan: a Conv too wide for a tile splits its input channels, its input gradient its outputs") {
  const int64_t in = 1024, out = 64, side = 8, classes = 10;
  OnnxBuilder b;
  b.input("x", {out, side, side}).output("logits");
  b.floats("w0", {in, out, 1, 1}, wave(static_cast<size_t>(in * out), 0.02f, 0.1f));
  b.floats("w1", {out, in, 3, 3}, wave(static_cast<size_t>(out * in * 9), 0.01f, 0.2f));
  b.floats("w2", {in, out, 1, 1}, wave(static_cast<size_t>(in * out), 0.03f, 0.4f));
  b.floats("wo", {in, classes}, wave(static_cast<size_t>(in * classes), 0.1f, 0.3f));
  b.node("Conv", "widen", {"x", "w0"}, {"h"});
  auto& conv = b.node("Conv", "narrow", {"h", "w1"}, {"c"});
  OnnxBuilder::ints_attr(conv, "kernel_shape", {3, 3});
  OnnxBuilder::ints_attr(conv, "pads", {1, 1, 1, 1});
  b.node("Conv", "widen_again", {"c", "w2"}, {"e"});
  auto& pool = b.node("ReduceMean", "pool", {"e"}, {"p"});
  OnnxBuilder::ints_attr(pool, "axes", {2, 3});
  OnnxBuilder::int_attr(pool, "keepdims", 0);
  b.node("MatMul", "out", {"p", "wo"}, {"logits"});
  auto options = small_target_options(2);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kTrain;
  options.loss = passes::LossKind::kSparseCategoricalCrossEntropy;
  const std::vector<float> features = wave(static_cast<size_t>(2 * out * side * side), 1.0f, 0.4f);
  const std::vector<int32_t> labels = {3, 7};
  struct Run {
    bool shares_forward = false, shares_backward = false;
    std::vector<float> logits, loss, w1;
  };
  auto run = [&](uint32_t bytes_per_tile) {
    options.bytes_per_tile = bytes_per_tile;
    auto compiled = compiler::compile_model(b.bytes(), options);
    INFO(compiled.status().message());
    REQUIRE(compiled.ok());
    CHECK(compiled->memory.overflowing.empty());
    Run r;
    for (const auto& cs : compiled->executable.compute_sets()) {
      for (const auto& v : cs.vertices()) {
        if (v.codelet() == static_cast<uint32_t>(format::Codelet::kConv))
          r.shares_forward |= v.params_size() == format::params::Conv::kCount;
        if (v.codelet() == static_cast<uint32_t>(format::Codelet::kConvGradInput))
          r.shares_backward |= v.params_size() == format::params::ConvGradInput::kCount;
      }
    }
    auto engine = engine::Engine::create(std::move(compiled->executable), {});
    REQUIRE(engine.ok());
    r.logits = run_step(**engine, "predict", features, labels).predictions;
    r.loss = run_step(**engine, "train", features, labels).loss;
    const auto w1 = tensor_floats(**engine, "w1");
    r.w1.assign(w1.begin(), w1.end());
    return r;
  };
  const Run tight = run(512 * 1024), roomy = run(64 * 1024 * 1024);
  CHECK(tight.shares_forward);
  CHECK(tight.shares_backward);
  auto check_close = [](const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(std::abs(got[i] - want[i]) <= 1e-5f + 1e-4f * std::abs(want[i]));
  };
  check_close(tight.logits, roomy.logits);
  check_close(tight.loss, roomy.loss);
  check_close(tight.w1, roomy.w1);
}

// The plan by hand, on an executable of two IPUs of two tiles: a weight resident on tile 0, and
// temporaries living over ranges of a three-set order, one received over the exchange. Each
// tile's peak is the first position its live bytes reach their most, and each position's
// fullest tile and total per IPU count what lives then (the plan sweeps the order once, adding a
// temporary where it starts living and removing it after it ends).
TEST_CASE("memory plan: peaks, their breakdown and liveness follow the temporaries' live ranges") {
  format::Executable exe;
  const auto add_tensor = [&](format::TensorRole role, const std::vector<std::array<uint64_t, 3>>& mapping) {
    format::Tensor* t = exe.add_tensors();
    t->set_name("t" + std::to_string(exe.tensors_size() - 1));
    t->set_dtype(format::FLOAT32);
    t->set_role(role);
    for (const auto& [tile, begin, end] : mapping) {
      format::Interval* iv = t->add_mapping();
      iv->set_tile(static_cast<uint32_t>(tile));
      iv->set_begin(begin);
      iv->set_end(end);
    }
  };
  add_tensor(format::WEIGHT, {{0, 0, 10}});                // t0: 40 bytes on tile 0, always
  add_tensor(format::ACTIVATION, {{0, 0, 5}, {2, 5, 10}}); // t1: 20 + 20, positions 0..1
  add_tensor(format::GRADIENT, {{0, 0, 25}});              // t2: 100 on tile 0, position 2
  add_tensor(format::ACTIVATION, {{3, 0, 4}});             // t3: 16 on tile 3, position 1
  for (int i = 0; i < 3; ++i)
    exe.add_compute_sets()->set_name("cs" + std::to_string(i));
  std::vector<lowering::ComputeSetRecord> records(3);
  records[0].tensors = {1};
  records[1].tensors = {1, 3};
  records[1].received_bytes = {{2, 30}};
  records[2].tensors = {2};
  target::TargetSpec target;
  target.num_ipus = 2;
  target.tiles_per_ipu = 2;
  target.cycles.vertex_state_bytes = 0;
  target.cycles.codelet_code_bytes = 0;

  const lowering::MemoryPlan plan = lowering::plan_memory(exe, {0, 1, 2}, records, target);
  // Tile 0: 40 resident, then 20 (positions 0-1), then 100 (position 2): its peak is 140 there.
  // Tile 2: 20 of t1 plus 30 received at position 1. Tile 3: t3's 16 at position 1.
  CHECK(plan.peak_per_tile == std::vector<uint64_t>{140, 0, 50, 16});
  CHECK(plan.split_per_tile[0].tensor_bytes == 140);
  CHECK(plan.split_per_tile[2].tensor_bytes == 20);
  CHECK(plan.split_per_tile[2].exchange_bytes == 30);
  CHECK(plan.fullest.tile == 0);
  CHECK(plan.fullest.compute_set == "cs2");
  CHECK(plan.total_bytes == 206);
  CHECK(plan.tiles_used == 3);
  REQUIRE(plan.liveness.size() == 3);
  CHECK(plan.liveness[0].fullest_tile_per_ipu == std::vector<uint64_t>{60, 20});
  CHECK(plan.liveness[0].total_per_ipu == std::vector<uint64_t>{60, 20});
  CHECK(plan.liveness[1].fullest_tile_per_ipu == std::vector<uint64_t>{60, 50});
  CHECK(plan.liveness[1].total_per_ipu == std::vector<uint64_t>{60, 66});
  CHECK(plan.liveness[2].fullest_tile_per_ipu == std::vector<uint64_t>{140, 0});
  CHECK(plan.liveness[2].total_per_ipu == std::vector<uint64_t>{140, 0});
  // Tile 2 at its peak: t1's 20 bytes and the receive buffer.
  bool broke_down_tile_2 = false;
  for (const lowering::TileUsage& usage : plan.fullest_per_ipu) {
    if (usage.tile != 2) continue;
    broke_down_tile_2 = true;
    CHECK(usage.compute_set == "cs1");
    CHECK(usage.tensor_bytes == 20);
    CHECK(usage.exchange_bytes == 30);
  }
  CHECK(broke_down_tile_2);
}

} // namespace
} // namespace ipu::testing
