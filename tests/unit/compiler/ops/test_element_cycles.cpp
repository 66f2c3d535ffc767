// Per-function element costs (target::FunctionCycles, from popops' cycle estimator tables) on
// hand-computed cases, and a compiled vertex charged by them.
#include <doctest/doctest.h>

#include <string>

#include "compiler/ops/element_cycles.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

using format::BinaryKind;
using format::UnaryKind;

TEST_CASE("element cycles: popops' per-function float costs, per element per tile") {
  const target::CycleModel m = target::target_preset("mk2")->cycles;
  // A vector op: 2 floats per 3 cycles. EXPONENT 6 per 2, LOGARITHM 12 per 2, ERF 41 per 1,
  // GELU_ERF 22 per 1, DIVIDE 10 per 2, EQUAL 14 per 4.
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kRelu, 0) == doctest::Approx(1.5));
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kExp, 0) == 3);
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kLog, 0) == 6);
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kErf, 0) == 41);
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kGelu, 0) == 22);
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kSoftplus, 0) == doctest::Approx(3 + 6 + 1.5));
  CHECK(ops::binary_cycles_per_element(m, BinaryKind::kAdd) == doctest::Approx(1.5));
  CHECK(ops::binary_cycles_per_element(m, BinaryKind::kDiv) == 5);
  CHECK(ops::binary_cycles_per_element(m, BinaryKind::kLess) == 3.5);
  CHECK(ops::binary_cycles_per_element(m, BinaryKind::kPow) == 312);
  // The gradients of sigmoid and tanh from their output are three vector ops.
  CHECK(ops::activation_cycles_per_element(m, format::ActivationKind::kSigmoid, false) == 6);
  CHECK(ops::activation_cycles_per_element(m, format::ActivationKind::kSigmoid, true) ==
        doctest::Approx(4.5));
  // max, subtract, exp, sum, scale.
  CHECK(ops::softmax_cycles_per_element(m) == doctest::Approx(3 + 4 * 1.5));
}

TEST_CASE("element cycles: batch norm's passes run at popops' half channel-op rates") {
  const target::CycleModel m = target::target_preset("mk2")->cycles;
  const target::CycleModel half = target::at_half_rates(m);
  using ops::BatchNormPass;
  // fp16, 64 channels: subtract 2/8, multiply in place 2/4, multiply 1/4, add 2/8 cycles.
  CHECK(ops::batch_norm_cycles_per_element(half, BatchNormPass::kNormalise, true, 64) ==
        doctest::Approx(1.25));
  // The gradient: scale multiply 1/4, whitening 3/4, multiply 1/4, add 1/4, scaledAddTo at the
  // half vector rate 3/4, multiply in place 2/4.
  CHECK(ops::batch_norm_cycles_per_element(half, BatchNormPass::kTrainGradientInput, true, 64) ==
        doctest::Approx(2.75));
  // Channels not a multiple of 4 keep BinaryOp's rate (popops binaryOpBroadcastInnerVector's
  // fallback), as does float whatever the channels: four vector ops of 1.5 cycles.
  CHECK(ops::batch_norm_cycles_per_element(half, BatchNormPass::kNormalise, true, 6) == doctest::Approx(3));
  CHECK(ops::batch_norm_cycles_per_element(m, BatchNormPass::kNormalise, false, 64) == doctest::Approx(6));
  CHECK(ops::batch_norm_cycles_per_element(m, BatchNormPass::kTrainGradientInput, false, 64) ==
        doctest::Approx(7 * 1.5));
}

TEST_CASE("element cycles: constant exponents cost what popops rewrites them to") {
  const target::CycleModel m = target::target_preset("mk2")->cycles;
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kPowScalar, 2) == doctest::Approx(1.5)); // SQUARE
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kPowScalar, 0.5) == 5);                  // SQRT
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kPowScalar, -0.5) == 4);                 // RSQRT
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kPowScalar, -1) == 3);                   // INVERSE
  CHECK(ops::unary_cycles_per_element(m, UnaryKind::kPowScalar, 3) == 312);                  // POWER
}

// The compute cycles of an op's vertices, however it is split: elements × the function's cost.
double single_op_compute_cycles(const std::string& op_type) {
  OnnxBuilder b;
  b.input("x", {16}, 1).output("y");
  b.node(op_type, "f", {"x"}, {"y"});
  compiler::CompileOptions options;
  options.model_path = "test.onnx";
  options.mode = compiler::Mode::kInfer;
  options.batch_size = 1;
  auto result = compiler::compile_model(b.bytes(), options);
  INFO(result.status().message());
  REQUIRE(result.ok());
  REQUIRE(result->executable.compute_sets_size() == 1);
  // A vertex's cycles include its launch.
  const double launch = target::target_preset("mk2")->cycles.vertex_overhead_cycles;
  double cycles = 0;
  for (const auto& v : result->executable.compute_sets(0).vertices())
    cycles += static_cast<double>(v.cycles()) - launch;
  return cycles;
}

TEST_CASE("element cycles: a compiled Erf costs ERF's 41 cycles per element, a Relu a vector op's 1.5") {
  CHECK(single_op_compute_cycles("Erf") == doctest::Approx(16 * 41));
  CHECK(single_op_compute_cycles("Exp") == doctest::Approx(16 * 3));
  CHECK(single_op_compute_cycles("Sigmoid") == doctest::Approx(16 * 6));
  // Vertex cycles are whole numbers: 1.5 per element rounds per vertex.
  CHECK(single_op_compute_cycles("Relu") == doctest::Approx(16 * 1.5).epsilon(0.1));
}

} // namespace
} // namespace ipu::testing
