// LayerNorm recognition: PyTorch's exported nine-op LayerNorm becomes one LayerNorm op, and
// chains that compute something else keep their ops (the kernel's bitwise agreement with the nine
// is tested in tests/unit/runtime/kernels/test_layer_norm_kernel.cpp).
#include <doctest/doctest.h>

#include <string>

#include "compiler/driver/compile.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/passes/fusion_test_support.h"

namespace {

using namespace ipu;
using ipu::testing::compile_for_inference;
using ipu::testing::OnnxBuilder;
using ipu::testing::vertices_of;

struct LayerNormSpelling {
  int64_t axis = -1; // of both ReduceMeans
  float exponent = 2.0f;
  bool operands_swapped = false; // Add(ε, v), Mul(γ, n), Add(β, m)
  bool centered_is_output = false;
};

// x [N,4,8] → PyTorch's LayerNorm over the last axis → y.
std::string layer_norm_model(const LayerNormSpelling& s) {
  OnnxBuilder b;
  b.input("x", {4, 8}).output("y");
  if (s.centered_is_output) b.output("d");
  b.floats("gamma", {8}, std::vector<float>(8, 1.5f));
  b.floats("beta", {8}, std::vector<float>(8, -0.5f));
  auto constant = [&](const std::string& name, float value) {
    OnnxBuilder::float_attr(b.node("Constant", name, {}, {name}), "value_float", value);
  };
  constant("exponent", s.exponent);
  constant("epsilon", 1e-5f);
  auto ordered = [&](const std::string& a, const std::string& c) {
    return s.operands_swapped ? std::vector<std::string>{c, a} : std::vector<std::string>{a, c};
  };
  auto mean = [&](const std::string& name, const std::string& in, const std::string& out) {
    OnnxBuilder::ints_attr(b.node("ReduceMean", name, {in}, {out}), "axes", {s.axis});
  };
  mean("mean", "x", "m");
  b.node("Sub", "sub", {"x", "m"}, {"d"});
  b.node("Pow", "pow", {"d", "exponent"}, {"p"});
  mean("variance", "p", "v");
  b.node("Add", "add", ordered("v", "epsilon"), {"ve"});
  b.node("Sqrt", "sqrt", {"ve"}, {"s"});
  b.node("Div", "div", {"d", "s"}, {"n"});
  b.node("Mul", "scale", ordered("n", "gamma"), {"g"});
  b.node("Add", "shift", ordered("g", "beta"), {"y"});
  return b.bytes();
}

TEST_CASE(
    "fuse_layer_norm: PyTorch's nine LayerNorm ops become one LayerNorm, with operands in either order") {
  for (bool swapped : {false, true}) {
    CAPTURE(swapped);
    const compiler::CompileResult result =
        compile_for_inference(layer_norm_model({.operands_swapped = swapped}));
    INFO(result.ir_text);
    CHECK(result.ir_text == "forward stage 0: shift:f32[2,4,8] = LayerNorm(x, gamma, beta)\n");
    CHECK(vertices_of(result.executable, format::Codelet::kLayerNorm) > 0);
    CHECK(vertices_of(result.executable, format::Codelet::kReduce) == 0);
  }
}

TEST_CASE("fuse_layer_norm: another axis or exponent, or an intermediate read elsewhere, keeps the ops") {
  for (const LayerNormSpelling& s : {LayerNormSpelling{.axis = 1}, LayerNormSpelling{.exponent = 3.0f},
                                     LayerNormSpelling{.centered_is_output = true}}) {
    CAPTURE(s.axis);
    CAPTURE(s.exponent);
    const compiler::CompileResult result = compile_for_inference(layer_norm_model(s));
    INFO(result.ir_text);
    CHECK(result.ir_text.find("LayerNorm") == std::string::npos);
    CHECK(vertices_of(result.executable, format::Codelet::kReduce) > 0);
  }
}

} // namespace
