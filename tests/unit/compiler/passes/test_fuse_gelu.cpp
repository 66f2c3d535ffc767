// GELU recognition: which spellings of PyTorch's exported GELU become one Unary Gelu, and that
// other graphs keep their ops (the kernel's bitwise agreement with the five ops is tested in
// tests/unit/runtime/kernels/test_tensor_kernels.cpp).
#include <doctest/doctest.h>

#include <numbers>
#include <string>

#include "compiler/driver/compile.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/passes/fusion_test_support.h"

namespace {

using namespace ipu;
using ipu::testing::compile_for_inference;
using ipu::testing::OnnxBuilder;
using ipu::testing::vertices_of;

struct GeluSpelling {
  float divisor = std::numbers::sqrt2_v<float>;
  bool operands_swapped = false; // Add(1, e), Mul(a, x), Mul(0.5, m)
  bool erf_is_output = false;    // the Erf's output is a graph output too
};

// x [N,6] → (x · (erf(x / divisor) + 1)) · 0.5 → y, with constants from Constant nodes.
std::string gelu_model(const GeluSpelling& s) {
  OnnxBuilder b;
  b.input("x", {6}).output("y");
  if (s.erf_is_output) b.output("e");
  auto constant = [&](const std::string& name, float value) {
    OnnxBuilder::float_attr(b.node("Constant", name, {}, {name}), "value_float", value);
  };
  constant("root2", s.divisor);
  constant("one", 1.0f);
  constant("half", 0.5f);
  b.node("Div", "div", {"x", "root2"}, {"d"});
  b.node("Erf", "erf", {"d"}, {"e"});
  auto ordered = [&](const std::string& a, const std::string& c) {
    return s.operands_swapped ? std::vector<std::string>{c, a} : std::vector<std::string>{a, c};
  };
  b.node("Add", "add", ordered("e", "one"), {"a"});
  b.node("Mul", "mul", ordered("x", "a"), {"m"});
  b.node("Mul", "mul_1", ordered("m", "half"), {"y"});
  return b.bytes();
}

TEST_CASE("fuse_gelu: PyTorch's five GELU ops become one Gelu, with operands in either order") {
  for (bool swapped : {false, true}) {
    CAPTURE(swapped);
    const compiler::CompileResult result = compile_for_inference(gelu_model({.operands_swapped = swapped}));
    INFO(result.ir_text);
    CHECK(result.ir_text.find("mul_1:f32[2,6] = Unary(x)") != std::string::npos);
    CHECK(result.ir_text.find("Binary") == std::string::npos);
    CHECK(vertices_of(result.executable, format::Codelet::kBinary) == 0);
    CHECK(vertices_of(result.executable, format::Codelet::kUnary) > 0);
  }
}

TEST_CASE("fuse_gelu: another divisor, or an intermediate read elsewhere, keeps the five ops") {
  for (const GeluSpelling& s : {GeluSpelling{.divisor = 1.4142f}, GeluSpelling{.erf_is_output = true}}) {
    CAPTURE(s.divisor);
    const compiler::CompileResult result = compile_for_inference(gelu_model(s));
    INFO(result.ir_text);
    CHECK(result.ir_text.find("= Unary(x)") == std::string::npos);
    CHECK(result.ir_text.find("mul_1:f32[2,6] = Binary(mul, half)") != std::string::npos);
    CHECK(vertices_of(result.executable, format::Codelet::kBinary) > 0);
  }
}

} // namespace
