// The generic tensor converters (onnx_ops_elementwise.cpp, onnx_ops_shape.cpp,
// onnx_ops_reduce.cpp): output shapes, the IR ops chosen, version-dependent semantics, dtypes,
// compile-time folding and precise unsupported reasons.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "compiler/frontend/onnx_import.h"
#include "runtime/format/tensor_kinds.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/test_strings.h"

namespace ipu::testing {
namespace {

using frontend::import_onnx;
using frontend::OnnxImportOptions;

StatusOr<frontend::ForwardGraph> import_tensor_ops(const OnnxBuilder& b, int64_t batch = 2) {
  return import_onnx(b.bytes(), "net.onnx", OnnxImportOptions{batch, {}, false, {}});
}

// The shape of the model's first output.
std::vector<int64_t> output_shape(const frontend::ForwardGraph& g) {
  return g.graph.value(g.scores()).type.shape;
}

// The kind of the op producing the model's first output.
ir::OpKind output_op(const frontend::ForwardGraph& g) {
  return g.graph.op(g.graph.value(g.scores()).producer).kind;
}

TEST_CASE("binary ops broadcast numpy-style and comparisons report a bool output") {
  OnnxBuilder b;
  b.input("x", {3, 1}).output("y");
  b.floats("w", {4}, wave(4, 1, 0));
  b.node("Less", "less", {"x", "w"}, {"y"});
  b.model().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::BOOL);
  auto imported = import_tensor_ops(b);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  CHECK(output_shape(*imported) == std::vector<int64_t>{2, 3, 4});
  CHECK(output_op(*imported) == ir::OpKind::kBinary);
  CHECK(imported->outputs[0].dtype == "b1");
}

TEST_CASE("a bias row keeps BiasAdd; other Adds broadcast") {
  OnnxBuilder b;
  b.input("x", {4}).output("y").output("z");
  b.floats("bias", {4}, wave(4, 1, 0));
  b.floats("col", {2, 1}, wave(2, 1, 0));
  b.node("Add", "bias_add", {"bias", "x"}, {"y"});
  b.node("Add", "col_add", {"x", "col"}, {"z"});
  auto imported = import_tensor_ops(b);
  REQUIRE(imported.ok());
  CHECK(output_op(*imported) == ir::OpKind::kBiasAdd);
  CHECK(imported->graph.op(imported->graph.value(imported->outputs[1].value).producer).kind ==
        ir::OpKind::kBinary);
}

TEST_CASE("Softmax coerces to 2-D before version 13 and takes one axis from 13") {
  for (int opset : {11, 13}) {
    CAPTURE(opset);
    OnnxBuilder b(opset);
    b.input("x", {3, 4}).output("y");
    OnnxBuilder::int_attr(b.node("Softmax", "sm", {"x"}, {"y"}), "axis", 1);
    auto imported = import_tensor_ops(b);
    REQUIRE(imported.ok());
    // The AxisSoftmax sees [outer, n, inner]: [2, 12, 1] coerced, [2, 3, 4] for one axis.
    const ir::Graph& g = imported->graph;
    const ir::Op* softmax = nullptr;
    for (const ir::Op& op : g.ops()) {
      if (op.kind == ir::OpKind::kAxisSoftmax) softmax = &op;
    }
    REQUIRE(softmax != nullptr);
    CHECK(g.value(softmax->inputs[0]).type.shape ==
          (opset == 11 ? std::vector<int64_t>{2, 12, 1} : std::vector<int64_t>{2, 3, 4}));
    CHECK(output_shape(*imported) == std::vector<int64_t>{2, 3, 4});
  }
}

TEST_CASE("MatMul broadcasts batch axes and follows numpy for rank-1 operands") {
  OnnxBuilder b;
  b.input("x", {1, 3, 4}).output("y").output("v");
  b.floats("w", {5, 4, 2}, wave(40, 1, 0));
  b.floats("u", {4}, wave(4, 1, 0));
  b.node("MatMul", "mm", {"x", "w"}, {"y"});
  b.node("MatMul", "mv", {"x", "u"}, {"v"});
  auto imported = import_tensor_ops(b);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  CHECK(output_shape(*imported) == std::vector<int64_t>{2, 5, 3, 2});
  CHECK(imported->graph.value(imported->outputs[1].value).type.shape == std::vector<int64_t>{2, 1, 3});
}

TEST_CASE("Transpose, Slice with negative steps, Split and Unsqueeze give ONNX's shapes") {
  OnnxBuilder b;
  b.input("x", {3, 4}).output("t").output("s").output("p0").output("p1").output("u");
  b.ints("starts", {-1, 3}).ints("ends", {-100, 0}).ints("axes", {1, 2}).ints("steps", {-2, -1});
  b.ints("split", {1, 3}).ints("where", {0, 3});
  OnnxBuilder::ints_attr(b.node("Transpose", "tr", {"x"}, {"t"}), "perm", {2, 0, 1});
  b.node("Slice", "sl", {"x", "starts", "ends", "axes", "steps"}, {"s"});
  OnnxBuilder::int_attr(b.node("Split", "sp", {"x", "split"}, {"p0", "p1"}), "axis", -1);
  b.node("Unsqueeze", "un", {"x", "where"}, {"u"});
  auto imported = import_tensor_ops(b);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  auto shape = [&](int i) {
    return imported->graph.value(imported->outputs[static_cast<size_t>(i)].value).type.shape;
  };
  CHECK(shape(0) == std::vector<int64_t>{4, 2, 3});
  CHECK(shape(1) == std::vector<int64_t>{2, 2, 3});
  CHECK(shape(2) == std::vector<int64_t>{2, 3, 1});
  CHECK(shape(3) == std::vector<int64_t>{2, 3, 3});
  CHECK(shape(4) == std::vector<int64_t>{1, 2, 3, 1, 4});
}

TEST_CASE("Shape and Size fold to constants; Cast records the output dtype") {
  OnnxBuilder b;
  b.input("x", {3}).output("s").output("c");
  b.node("Shape", "shape", {"x"}, {"s"});
  OnnxBuilder::int_attr(b.node("Cast", "cast", {"x"}, {"c"}), "to", onnx::TensorProto::INT64);
  for (int i = 0; i < 2; ++i)
    b.model().mutable_graph()->mutable_output(i)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT64);
  auto imported = import_tensor_ops(b);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  const ir::Value& s = imported->graph.value(imported->outputs[0].value);
  CHECK(s.role == ir::Role::kConstant);
  CHECK(s.initial == std::vector<float>{2, 3});
  const ir::Op& cast = imported->graph.op(imported->graph.value(imported->outputs[1].value).producer);
  CHECK(cast.attrs<ir::UnaryAttrs>().kind == format::UnaryKind::kTrunc);
}

// Edge, reflect and wrap repeat input elements: one Gather per padded axis, by constant indices.
TEST_CASE("Pad in edge, reflect and wrap mode gathers the source index of every output position") {
  const std::map<std::string, std::vector<float>> expected = {
      {"edge", {0, 0, 0, 1, 2, 3, 3, 3}},
      {"reflect", {2, 1, 0, 1, 2, 3, 2, 1}},
      {"wrap", {2, 3, 0, 1, 2, 3, 0, 1}},
  };
  for (const auto& mode_and_indices : expected) {
    const std::string& mode = mode_and_indices.first;
    const std::vector<float>& indices = mode_and_indices.second;
    CAPTURE(mode);
    OnnxBuilder b(19);
    b.input("x", {4}).output("y");
    b.ints("pads", {0, 2, 0, 2});
    OnnxBuilder::string_attr(b.node("Pad", "pad", {"x", "pads"}, {"y"}), "mode", mode);
    auto imported = import_tensor_ops(b);
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    CHECK(output_shape(*imported) == std::vector<int64_t>{2, 8});
    const ir::Op& gather = imported->graph.op(imported->graph.value(imported->scores()).producer);
    REQUIRE(gather.kind == ir::OpKind::kGather);
    CHECK(gather.attrs<ir::AxisAttrs>().axis == 1);
    CHECK(imported->graph.value(gather.inputs[1]).initial == indices);
  }
}

TEST_CASE("forms whose semantics are not implemented are unsupported with the reason") {
  OnnxBuilder b(16);
  b.input("x", {3}).output("a").output("p").output("c");
  b.ints("pads", {0, -1, 0, 1});
  b.ints("at", {1});
  OnnxBuilder::string_attr(b.node("ScatterND", "scatter", {"x", "at", "x"}, {"a"}), "reduction", "add");
  OnnxBuilder::string_attr(b.node("Pad", "pad", {"x", "pads"}, {"p"}), "mode", "reflect");
  OnnxBuilder::int_attr(b.node("Cast", "cast", {"x"}, {"c"}), "to", onnx::TensorProto::DOUBLE);
  b.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  auto imported = import_tensor_ops(b);
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().code() == StatusCode::kUnsupported);
  const std::string m = imported.status().message();
  CHECK(contains(
      m, "node 'scatter' (ScatterND): ScatterND with reduction 'add' is not supported (only 'none')"));
  CHECK(contains(
      m, "node 'pad' (Pad): negative pads (cropping) are supported in constant mode only, not 'reflect'"));
  CHECK(contains(m, "node 'cast' (Cast): Cast to element type DOUBLE is not supported"));
}

// Celu divides by its alpha (e^(x/alpha)): alpha 0 defines no function (NaN at x = 0).
TEST_CASE("Celu with alpha 0 is invalid, naming the node") {
  OnnxBuilder b(13);
  b.input("x", {3}).output("y");
  OnnxBuilder::float_attr(b.node("Celu", "celu", {"x"}, {"y"}), "alpha", 0.0f);
  auto imported = import_tensor_ops(b);
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().code() == StatusCode::kInvalidArgument);
  CHECK(contains(imported.status().message(), "node 'celu' (Celu): alpha must not be 0"));
}

} // namespace
} // namespace ipu::testing
