// Training in fp16 and mixed precision (passes/mixed_precision.h, lowering::Precision): which
// tensors are FLOAT16, and that fp16 weights stay binary16 values through their update.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/half.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

const char* const kSpec = R"({
  "name": "mlp", "type": "sequential",
  "input": {"name": "x", "shape": [8], "dtype": "float32"},
  "layers": [
    {"name": "d1", "type": "Dense", "units": 6, "activation": "relu"},
    {"name": "d2", "type": "Dense", "units": 3, "activation": "softmax"}
  ],
  "loss": {"type": "sparse_categorical_crossentropy", "from_logits": false},
  "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9}
})";

compiler::CompileResult compile(const std::string& precision, const std::string& spec = kSpec,
                                const std::string& loss_scaling = "") {
  compiler::CompileOptions options = small_target_options(4);
  options.precision = *lowering::parse_precision(precision);
  if (!loss_scaling.empty()) options.loss_scaling = passes::loss_scaling_mode(loss_scaling);
  auto compiled = compiler::compile_model(spec, options);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  return std::move(*compiled);
}

format::DType dtype_of(const format::Executable& exe, const std::string& name) {
  for (const format::Tensor& t : exe.tensors()) {
    if (t.name() == name) return t.dtype();
  }
  FAIL("no tensor ", name);
  return format::INT32;
}

// The gradients of replicas cross the links in binary16 under fp16 and mixed precision, as
// Graphcore's half-precision training reduces half gradients: the AllReduce says so, and its
// estimate counts 2 bytes a gradient where fp32 counts 4 (the accumulators stay FLOAT32).
TEST_CASE("mixed precision: replicas all-reduce their gradients in binary16") {
  auto all_reduce_of = [](const std::string& precision) {
    compiler::CompileOptions options = small_target_options(4);
    options.precision = *lowering::parse_precision(precision);
    options.replicas = 2;
    options.num_ipus = 2;
    options.gradient_accumulation = 2;
    auto compiled = compiler::compile_model(kSpec, options);
    INFO(compiled.status().message());
    REQUIRE(compiled.ok());
    const format::Executable& exe = compiled->executable;
    std::vector<const format::AllReduce*> found;
    std::function<void(const format::Program&)> visit = [&](const format::Program& p) {
      if (p.has_all_reduce()) found.push_back(&p.all_reduce());
      if (p.has_sequence())
        for (const auto& step : p.sequence().steps())
          visit(step);
      if (p.has_repeat()) visit(p.repeat().body());
    };
    for (const auto& program : exe.programs())
      visit(program.program());
    REQUIRE(found.size() == 1);
    return std::pair{found[0]->wire_dtype(), exe.estimates().all_reduce().bytes()};
  };
  const auto [fp32_wire, fp32_bytes] = all_reduce_of("fp32");
  CHECK(fp32_wire == format::DTYPE_UNSPECIFIED);
  for (const char* precision : {"fp16", "mixed"}) {
    CAPTURE(precision);
    const auto [wire, bytes] = all_reduce_of(precision);
    CHECK(wire == format::FLOAT16);
    CHECK(bytes * 2 == fp32_bytes);
  }
}

TEST_CASE("mixed precision: fp32 masters and their fp16 copies, fp16 activations and activation gradients") {
  const compiler::CompileResult mixed = compile("mixed");
  const format::Executable& exe = mixed.executable;
  for (const char* fp32 : {"d1/kernel", "d1/bias", "d1/kernel/momentum", "d1/matmul/grad_kernel",
                           "d1/bias_add/grad_bias", "d2/softmax", "loss/grad", "loss"}) {
    CAPTURE(fp32);
    CHECK(dtype_of(exe, fp32) == format::FLOAT32);
  }
  for (const char* fp16 : {"x", "d1/kernel/fp16", "d1/bias/fp16", "d1/relu", "d2/bias_add", "d2/softmax/grad",
                           "d2/matmul/grad_input"}) {
    CAPTURE(fp16);
    CHECK(dtype_of(exe, fp16) == format::FLOAT16);
  }
  // The casts run first: the forward's first compute set writes every copy.
  const format::ComputeSet& first = exe.compute_sets(0);
  CHECK(first.name() == "forward/0/0");
  int copies = 0;
  for (const format::TensorRange& r : first.rounded())
    copies += exe.tensors(static_cast<int>(r.tensor())).name().ends_with("/fp16");
  CHECK(copies == 4);
}

TEST_CASE("fp16 training: fp16 weights, fp32 weight gradients and momentum; mixed and fp16 default to loss "
          "scaling") {
  const compiler::CompileResult fp16 = compile("fp16");
  const format::Executable& exe = fp16.executable;
  CHECK(dtype_of(exe, "d1/kernel") == format::FLOAT16);
  CHECK(dtype_of(exe, "d1/kernel/momentum") == format::FLOAT32);
  CHECK(dtype_of(exe, "d1/matmul/grad_kernel") == format::FLOAT32);
  CHECK(dtype_of(exe, "d1/relu/grad") == format::FLOAT16);
  bool scaled = false;
  for (const format::Tensor& t : exe.tensors())
    scaled = scaled || t.name().starts_with("loss_scale/");
  CHECK(scaled);
  const compiler::CompileResult fp32 = compile("fp32");
  for (const format::Tensor& t : fp32.executable.tensors())
    CHECK_FALSE(t.name().starts_with("loss_scale/"));
}

TEST_CASE("fp16 training: the update rounds the weights it writes in place to binary16") {
  compiler::CompileOptions options = small_target_options(4);
  options.precision = lowering::Precision::kFp16;
  auto engine = compile_and_load(kSpec, options);
  const std::vector<float> x = {0.3f,  -1.1f, 0.7f,  2.0f, 0.1f, 0.9f,  -0.4f, 1.3f,  0.5f, 0.5f, -0.2f,
                                1.7f,  0.8f,  -0.6f, 0.2f, 0.4f, 1.0f,  0.3f,  -0.9f, 0.6f, 0.2f, 1.2f,
                                -0.3f, 0.1f,  0.7f,  0.9f, 0.4f, -1.0f, 0.6f,  0.1f,  0.3f, 0.8f};
  const std::vector<int32_t> labels = {0, 2, 1, 2};
  const std::vector<float> before(tensor_floats(*engine, "d1/kernel").begin(),
                                  tensor_floats(*engine, "d1/kernel").end());
  for (int step = 0; step < 3; ++step)
    run_step(*engine, "train", x, labels);
  const std::span<float> after = tensor_floats(*engine, "d1/kernel");
  bool moved = false;
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(round_to_half(after[i]) == after[i]);
    moved = moved || after[i] != before[i];
  }
  CHECK(moved);
}

TEST_CASE("mixed precision is for training: --mode infer is refused") {
  compiler::CompileOptions options = small_target_options(4);
  options.precision = lowering::Precision::kMixed;
  options.mode = compiler::Mode::kInfer;
  auto compiled = compiler::compile_model(kSpec, options);
  REQUIRE_FALSE(compiled.ok());
  CHECK(compiled.status().message().find("--precision fp16") != std::string::npos);
}

TEST_CASE("mixed precision: the clip, loss-scale and update phases compute in fp32") {
  // A squared norm over fp16 would overflow at 256², clipping every gradient to 0; the update
  // reads the unscaled and clipped gradients whole.
  std::string spec = kSpec;
  const std::string sgd = R"("optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9})";
  spec.replace(spec.find(sgd), sgd.size(), R"("optimizer": {"type": "adam", "global_clipnorm": 1.0})");
  const compiler::CompileResult mixed = compile("mixed", spec, "dynamic");
  int checked = 0;
  for (const format::Tensor& t : mixed.executable.tensors()) {
    const std::string& name = t.name();
    if (name.starts_with("global_norm/") || name.starts_with("loss_scale/") || name.ends_with("/unscaled") ||
        name.ends_with("/clipped")) {
      CAPTURE(name);
      CHECK(t.dtype() == format::FLOAT32);
      ++checked;
    }
  }
  CHECK(checked >= 8);
}

} // namespace
} // namespace ipu::testing
