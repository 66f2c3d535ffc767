// Epilogue fusion: which BiasAdds and Relus fold into the product before them, and that the
// executable of a fused model has no BiasAdd or Activation vertices left for them.
#include <doctest/doctest.h>

#include <string>

#include "compiler/driver/compile.h"
#include "compiler/passes/fuse_epilogues.h"
#include "runtime/base/half.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/passes/fusion_test_support.h"

namespace {

using namespace ipu;
using ipu::testing::compile_for_inference;
using ipu::testing::OnnxBuilder;
using ipu::testing::vertices_of;

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

int activation_vertices(const format::Executable& exe) {
  return vertices_of(exe, format::Codelet::kActivation);
}

// x [N,3] → Gemm (bias, transB) → `h` → `activation` → y.
std::string gemm_model(const std::string& activation) {
  OnnxBuilder b;
  b.input("x", {3}).output("y");
  b.floats("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.floats("b", {4}, std::vector<float>(4, -0.25f));
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"x", "w", "b"}, {"h"}), "transB", 1);
  b.node(activation, "act", {"h"}, {"y"});
  return b.bytes();
}

TEST_CASE("fuse_epilogues: a Relu that alone reads a Conv's output folds into the Conv") {
  const compiler::CompileResult fused = compile_for_inference(conv_relu_model(false, false));
  CHECK(fused.ir_text.find("= Conv+Relu(x, w)") != std::string::npos);
  CHECK(fused.ir_text.find("= Relu(") == std::string::npos);
  CHECK(activation_vertices(fused.executable) == 0);
}

TEST_CASE("fuse_epilogues: a Conv output read elsewhere, or a graph output, stays unfused") {
  for (const auto& read_and_output : {std::pair{true, false}, std::pair{false, true}}) {
    const bool also_read = read_and_output.first;
    CAPTURE(also_read);
    const compiler::CompileResult result =
        compile_for_inference(conv_relu_model(also_read, read_and_output.second));
    CHECK(result.ir_text.find("Conv+Relu") == std::string::npos);
    CHECK(result.ir_text.find("= Relu(") != std::string::npos);
    CHECK(activation_vertices(result.executable) > 0);
  }
}

TEST_CASE("fuse_epilogues: a Gemm's bias and the Relu after it fold into its MatMul") {
  const compiler::CompileResult relu = compile_for_inference(gemm_model("Relu"));
  CHECK(relu.ir_text.find("= MatMul+Relu(x, w, b)") != std::string::npos);
  CHECK(relu.ir_text.find("BiasAdd") == std::string::npos);
  CHECK(vertices_of(relu.executable, format::Codelet::kBiasAdd) == 0);
  CHECK(activation_vertices(relu.executable) == 0);
  // An activation other than Relu stays an op of its own; the bias still folds.
  const compiler::CompileResult tanh = compile_for_inference(gemm_model("Tanh"));
  CHECK(tanh.ir_text.find("= MatMul(x, w, b)") != std::string::npos);
  CHECK(tanh.ir_text.find("= Tanh(") != std::string::npos);
  CHECK(vertices_of(tanh.executable, format::Codelet::kBiasAdd) == 0);
}

// gemm_model(activation) with every value float16: its input, output and initializers.
std::string half_gemm_model(const std::string& activation) {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(gemm_model(activation)));
  onnx::GraphProto& g = *model.mutable_graph();
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    t.set_data_type(onnx::TensorProto::FLOAT16);
    for (float v : std::vector<float>(t.float_data().begin(), t.float_data().end()))
      t.add_int32_data(float_to_half_bits(v));
    t.clear_float_data();
  }
  return model.SerializeAsString();
}

TEST_CASE("fuse_epilogues: a value the model declares float16 is never folded away") {
  // The Gemm's output is float16, rounded where it is written: the Relu reading it stays. The
  // bias inside the Gemm (one ONNX node, its sum never rounded) still folds.
  const compiler::CompileResult result = compile_for_inference(half_gemm_model("Relu"));
  CHECK(result.ir_text.find("= MatMul(x, w, b)") != std::string::npos);
  CHECK(result.ir_text.find("= Relu(") != std::string::npos);
  CHECK(activation_vertices(result.executable) > 0);
}

// x [N,3,4] → MatMul with w [4,5] → Add of `bias` (either operand order) → y: ONNX MatMul + Add on
// 3-D activations, which imports as Reshape → MatMul → Reshape → Add.
std::string matmul_add_model(const std::vector<int64_t>& bias_shape, bool bias_first) {
  OnnxBuilder b;
  b.input("x", {3, 4}).output("y");
  b.floats("w", {4, 5}, std::vector<float>(20, 0.5f));
  int64_t bias_elements = 1;
  for (int64_t d : bias_shape)
    bias_elements *= d;
  b.floats("b", bias_shape, std::vector<float>(static_cast<size_t>(bias_elements), -0.25f));
  b.node("MatMul", "mm", {"x", "w"}, {"h"});
  b.node("Add", "add", bias_first ? std::vector<std::string>{"b", "h"} : std::vector<std::string>{"h", "b"},
         {"y"});
  return b.bytes();
}

TEST_CASE("fuse_epilogues: a bias vector added after a reshaped MatMul folds into the MatMul") {
  for (const auto& shape_and_order :
       {std::pair{std::vector<int64_t>{5}, false}, std::pair{std::vector<int64_t>{1, 1, 5}, true}}) {
    const bool bias_first = shape_and_order.second;
    CAPTURE(bias_first);
    const compiler::CompileResult result =
        compile_for_inference(matmul_add_model(shape_and_order.first, bias_first));
    INFO(result.ir_text);
    CHECK(result.ir_text.find("= MatMul(mm/flatten, w, b)") != std::string::npos);
    CHECK(result.ir_text.find("add:f32[2,3,5] = Reshape(mm)") != std::string::npos);
    CHECK(result.ir_text.find("Binary") == std::string::npos);
    CHECK(vertices_of(result.executable, format::Codelet::kBinary) == 0);
  }
  // A bias that varies along another axis is not a column bias of the product: the Add stays.
  const compiler::CompileResult per_row = compile_for_inference(matmul_add_model({3, 5}, false));
  INFO(per_row.ir_text);
  CHECK(per_row.ir_text.find("= MatMul(mm/flatten, w)") != std::string::npos);
  CHECK(per_row.ir_text.find("add:f32[2,3,5] = Binary(") != std::string::npos);
}

// The pass on a graph built by hand: the ops after the removed Relu are renumbered and their
// outputs' producers follow.
TEST_CASE("fuse_epilogues: the ops after a fusion renumber, and their producers follow") {
  ir::Graph g;
  const int x = g.add_value("x", {ir::DType::kFloat32, {1, 1, 3, 3}}, ir::Role::kInput);
  const int w = g.add_value("w", {ir::DType::kFloat32, {1, 1, 2, 2}}, ir::Role::kWeight);
  ir::ConvAttrs conv_attrs;
  conv_attrs.window.kernel = {2, 2};
  auto conv = g.add_op(ir::OpKind::kConv, "conv", {x, w}, conv_attrs, ir::Phase::kForward);
  REQUIRE(conv.ok());
  auto relu = g.add_op(ir::OpKind::kRelu, "relu", {g.op(*conv).outputs[0]}, {}, ir::Phase::kForward);
  REQUIRE(relu.ok());
  const int relu_out = g.op(*relu).outputs[0];
  auto tanh = g.add_op(ir::OpKind::kTanh, "tanh", {relu_out}, {}, ir::Phase::kForward);
  REQUIRE(tanh.ok());
  const int tanh_out = g.op(*tanh).outputs[0];

  CHECK(passes::fuse_epilogues(g, {x, tanh_out}) == 1);
  REQUIRE(g.ops().size() == 2);
  CHECK(g.op(0).attrs<ir::ConvAttrs>().fused_relu);
  CHECK(g.op(0).outputs[0] == relu_out);
  CHECK(g.value(relu_out).producer == 0);
  CHECK(g.op(1).kind == ir::OpKind::kTanh);
  CHECK(g.op(1).id == 1);
  CHECK(g.value(tanh_out).producer == 1);
}

// A Gemm whose bias is computed after its product (a Reshape of a graph input, as the ONNX
// importer writes it): the fused MatMul moves to the BiasAdd's place, after the bias's producer,
// so the BSP schedule runs it a compute set after the bias exists.
TEST_CASE("fuse_epilogues: the fused op takes the folded op's place in the op order") {
  ir::Graph g;
  const int x = g.add_value("x", {ir::DType::kFloat32, {2, 3}}, ir::Role::kInput);
  const int w = g.add_value("w", {ir::DType::kFloat32, {3, 4}}, ir::Role::kWeight);
  const int c = g.add_value("c", {ir::DType::kFloat32, {1, 4}}, ir::Role::kInput);
  auto matmul = g.add_op(ir::OpKind::kMatMul, "fc/matmul", {x, w}, ir::MatMulAttrs{}, ir::Phase::kForward);
  REQUIRE(matmul.ok());
  ir::ReshapeAttrs reshape_attrs;
  reshape_attrs.shape = {4};
  auto bias = g.add_op(ir::OpKind::kReshape, "fc/bias_shape", {c}, reshape_attrs, ir::Phase::kForward);
  REQUIRE(bias.ok());
  auto add = g.add_op(ir::OpKind::kBiasAdd, "fc/bias_add", {g.op(*matmul).outputs[0], g.op(*bias).outputs[0]},
                      {}, ir::Phase::kForward);
  REQUIRE(add.ok());
  const int y = g.op(*add).outputs[0], b = g.op(*bias).outputs[0];

  CHECK(passes::fuse_epilogues(g, {x, c, y}) == 1);
  REQUIRE(g.ops().size() == 2);
  CHECK(g.op(0).kind == ir::OpKind::kReshape);
  CHECK(g.value(b).producer == 0);
  CHECK(g.op(1).kind == ir::OpKind::kMatMul);
  CHECK(g.op(1).inputs == std::vector<int>{x, w, b});
  CHECK(g.value(y).producer == 1);
}

} // namespace
