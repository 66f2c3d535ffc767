// SiLU recognition: PyTorch's exported x · Sigmoid(x) becomes one Unary Silu, and a sigmoid gate
// of another value, or a sigmoid something else reads, keeps its ops (the kernel's bitwise
// agreement with the two ops is tested in tests/unit/runtime/kernels/test_tensor_kernels.cpp).
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

struct SiluSpelling {
  bool operands_swapped = false; // Mul(s, x)
  bool gate = false;             // Mul(x, Sigmoid(Neg(x))): a gate of another value
  bool sigmoid_is_output = false;
};

// x [N,6] → x · Sigmoid(x) → y.
std::string silu_model(const SiluSpelling& s) {
  OnnxBuilder b;
  b.input("x", {6}).output("y");
  if (s.sigmoid_is_output) b.output("s");
  std::string gated = "x";
  if (s.gate) {
    b.node("Neg", "neg", {"x"}, {"n"});
    gated = "n";
  }
  b.node("Sigmoid", "sigmoid", {gated}, {"s"});
  b.node("Mul", "mul",
         s.operands_swapped ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"}, {"y"});
  return b.bytes();
}

TEST_CASE("fuse_silu: x times Sigmoid(x) becomes one Silu, with the Mul's operands in either order") {
  for (bool swapped : {false, true}) {
    CAPTURE(swapped);
    const compiler::CompileResult result = compile_for_inference(silu_model({.operands_swapped = swapped}));
    INFO(result.ir_text);
    CHECK(result.ir_text.find("mul:f32[2,6] = Unary(x)") != std::string::npos);
    CHECK(result.ir_text.find("Sigmoid") == std::string::npos);
    CHECK(vertices_of(result.executable, format::Codelet::kActivation) == 0);
    CHECK(vertices_of(result.executable, format::Codelet::kBinary) == 0);
    CHECK(vertices_of(result.executable, format::Codelet::kUnary) > 0);
  }
}

TEST_CASE("fuse_silu: a sigmoid gate of another value, or a sigmoid read elsewhere, keeps both ops") {
  for (const SiluSpelling& s : {SiluSpelling{.gate = true}, SiluSpelling{.sigmoid_is_output = true}}) {
    CAPTURE(s.gate);
    const compiler::CompileResult result = compile_for_inference(silu_model(s));
    INFO(result.ir_text);
    CHECK(result.ir_text.find("Sigmoid") != std::string::npos);
    CHECK(vertices_of(result.executable, format::Codelet::kActivation) > 0);
    CHECK(vertices_of(result.executable, format::Codelet::kBinary) > 0);
  }
}

} // namespace
