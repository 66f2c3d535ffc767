// The Conv+Relu fusion: which Relus fold into their Conv, and that the executable of a fused
// model has no Activation vertices left for them.
#include <doctest/doctest.h>

#include <string>

#include "compiler/driver/compile.h"
#include "compiler/passes/fuse_activations.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace {

using namespace ipu;
using ipu::testing::OnnxBuilder;

// x [N,1,4,4] → Conv (2 channels, 3x3) → `c`, read by a Relu and, if `c_also_read`, by an Add
// with the Relu's output; `c_is_output` makes `c` a graph output as well.
std::string conv_relu_model(bool c_also_read, bool c_is_output) {
  OnnxBuilder b;
  b.input("x", {1, 4, 4}).output("y");
  if (c_is_output) b.output("c");
  b.floats("w", {2, 1, 3, 3}, std::vector<float>(18, 0.25f));
  b.node("Conv", "conv", {"x", "w"}, {"c"});
  if (c_also_read) {
    b.node("Relu", "relu", {"c"}, {"r"});
    b.node("Add", "add", {"c", "r"}, {"y"});
  } else {
    b.node("Relu", "relu", {"c"}, {"y"});
  }
  return b.bytes();
}

compiler::CompileResult compile(const std::string& model) {
  auto options = ipu::testing::small_target_options(2);
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  auto compiled = compiler::compile_model(model, options);
  REQUIRE_MESSAGE(compiled.ok(), compiled.status().message());
  return std::move(*compiled);
}

int activation_vertices(const format::Executable& exe) {
  int count = 0;
  for (const auto& cs : exe.compute_sets()) {
    for (const auto& v : cs.vertices()) count += v.codelet() == static_cast<uint32_t>(format::Codelet::kActivation);
  }
  return count;
}

TEST_CASE("fuse_conv_relu: a Relu that alone reads a Conv's output folds into the Conv") {
  const compiler::CompileResult fused = compile(conv_relu_model(false, false));
  CHECK(fused.ir_text.find("= Conv+Relu(x, w)") != std::string::npos);
  CHECK(fused.ir_text.find("= Relu(") == std::string::npos);
  CHECK(activation_vertices(fused.executable) == 0);
}

TEST_CASE("fuse_conv_relu: a Conv output read elsewhere, or a graph output, stays unfused") {
  for (auto [also_read, is_output] : {std::pair{true, false}, std::pair{false, true}}) {
    CAPTURE(also_read);
    const compiler::CompileResult result = compile(conv_relu_model(also_read, is_output));
    CHECK(result.ir_text.find("Conv+Relu") == std::string::npos);
    CHECK(result.ir_text.find("= Relu(") != std::string::npos);
    CHECK(activation_vertices(result.executable) > 0);
  }
}

// The pass on a graph built by hand: the ops after the removed Relu are renumbered and their
// outputs' producers follow.
TEST_CASE("fuse_conv_relu: removed ops renumber the rest and their producers") {
  ir::Graph g;
  const int x = g.add_value("x", {ir::DType::kFloat32, {1, 1, 3, 3}}, ir::Role::kInput);
  const int w = g.add_value("w", {ir::DType::kFloat32, {1, 1, 2, 2}}, ir::Role::kWeight);
  ir::OpAttrs conv_attrs;
  conv_attrs.window.kernel = {2, 2};
  auto conv = g.add_op(ir::OpKind::kConv, "conv", {x, w}, conv_attrs, ir::Phase::kForward);
  REQUIRE(conv.ok());
  auto relu = g.add_op(ir::OpKind::kRelu, "relu", {g.op(*conv).outputs[0]}, {}, ir::Phase::kForward);
  REQUIRE(relu.ok());
  const int relu_out = g.op(*relu).outputs[0];
  auto tanh = g.add_op(ir::OpKind::kTanh, "tanh", {relu_out}, {}, ir::Phase::kForward);
  REQUIRE(tanh.ok());
  const int tanh_out = g.op(*tanh).outputs[0];

  CHECK(passes::fuse_conv_relu(g, {x, tanh_out}) == 1);
  REQUIRE(g.ops().size() == 2);
  CHECK(g.op(0).attrs.fused_relu);
  CHECK(g.op(0).outputs[0] == relu_out);
  CHECK(g.value(relu_out).producer == 0);
  CHECK(g.op(1).kind == ir::OpKind::kTanh);
  CHECK(g.op(1).id == 1);
  CHECK(g.value(tanh_out).producer == 1);
}

}  // namespace
