// Constant folding's evaluator (compiler/driver/evaluate_constants.h) and what it makes of ONNX
// shape arithmetic: values computed from constants run on the runtime's kernels at compile time.
#include <doctest/doctest.h>

#include <string>

#include "compiler/driver/evaluate_constants.h"
#include "compiler/frontend/onnx_import.h"
#include "tests/unit/compiler/onnx_builder.h"

namespace ipu::testing {
namespace {

using format::BinaryKind;

int constant(ir::Graph& g, const std::string& name, std::vector<float> values) {
  const int v =
      g.add_value(name, {ir::DType::kFloat32, {static_cast<int64_t>(values.size())}}, ir::Role::kConstant);
  g.value(v).initial = std::move(values);
  g.value(v).keeps_float32 = true;
  return v;
}

int op(ir::Graph& g, ir::OpKind kind, const std::string& name, std::vector<int> inputs, ir::OpAttrs attrs) {
  const StatusOr<int> id = g.add_op(kind, name, std::move(inputs), std::move(attrs), ir::Phase::kForward);
  REQUIRE(id.ok());
  return g.op(*id).outputs[0];
}

TEST_CASE("evaluate_on_device computes integer remainders and quotients as ONNX defines them") {
  ir::Graph g;
  const int a = constant(g, "a", {7, -7, 7, -7, 6});
  const int b = constant(g, "b", {3, 3, -3, -3, 3});
  auto binary = [&](BinaryKind kind, const std::string& name) {
    ir::BinaryAttrs attrs;
    attrs.kind = kind;
    return op(g, ir::OpKind::kBinary, name, {a, b}, attrs);
  };
  const int mod = binary(BinaryKind::kMod, "mod");
  const int fmod = binary(BinaryKind::kFmod, "fmod");
  ir::UnaryAttrs trunc;
  trunc.kind = format::UnaryKind::kTrunc;
  const int quotient = op(g, ir::OpKind::kUnary, "div", {binary(BinaryKind::kDiv, "ratio")}, trunc);
  const auto values = compiler::evaluate_on_device(g, {mod, fmod, quotient});
  REQUIRE(values.ok());
  CHECK((*values)[0] == std::vector<float>{1, 2, -2, -1, 0}); // the divisor's sign (Python's %)
  CHECK((*values)[1] == std::vector<float>{1, -1, 1, -1, 0}); // the dividend's sign (C's fmod)
  CHECK((*values)[2] == std::vector<float>{2, -2, -2, 2, 2}); // toward zero
}

TEST_CASE("evaluate_on_device reports a run-time error of what it evaluates") {
  ir::Graph g;
  const int table = constant(g, "table", {1, 2, 3});
  const int index = constant(g, "index", {5});
  ir::AxisAttrs axis;
  axis.axis = 0;
  const int gathered = op(g, ir::OpKind::kGather, "lookup", {table, index}, axis);
  const auto values = compiler::evaluate_on_device(g, {gathered});
  REQUIRE_FALSE(values.ok());
  CHECK(values.status().message().find("lookup") != std::string::npos);
}

// x [N,2,3] viewed as [N, -1], the shape written as torch exports x.view(x.size(0), -1) with a
// dynamic batch: Shape → Gather → Concat → Reshape.
OnnxBuilder dynamic_view() {
  OnnxBuilder b;
  b.input("x", {2, 3}).output("y");
  b.ints("first", {0});
  b.ints("rest", {-1});
  b.node("Shape", "shape", {"x"}, {"s"});
  OnnxBuilder::int_attr(b.node("Gather", "batch", {"s", "first"}, {"n"}), "axis", 0);
  OnnxBuilder::int_attr(b.node("Concat", "view_shape", {"n", "rest"}, {"shape"}), "axis", 0);
  b.node("Reshape", "view", {"x", "shape"}, {"y"});
  return b;
}

TEST_CASE("an ONNX view of a dynamic batch imports once its shape arithmetic is folded") {
  frontend::OnnxImportOptions options;
  options.batch_size = 4;
  options.evaluate_constants = compiler::evaluate_on_device;
  const auto imported = frontend::import_onnx(dynamic_view().bytes(), "view.onnx", options);
  REQUIRE(imported.ok());
  CHECK(imported->folded_nodes == 3); // Shape, Gather and Concat
  CHECK(imported->folding_note.empty());
  // Only the view reaches the device, and nothing is left of the shape's computation.
  REQUIRE(imported->graph.ops().size() == 1);
  CHECK(imported->graph.ops()[0].kind == ir::OpKind::kReshape);
  CHECK(imported->graph.value(imported->scores()).type.shape == std::vector<int64_t>{4, 6});
  CHECK(imported->graph.values().size() == 2);
  CHECK(imported->graph.value(imported->features()).name == "x");

  options.evaluate_constants = nullptr;
  const auto unfolded = frontend::import_onnx(dynamic_view().bytes(), "view.onnx", options);
  REQUIRE_FALSE(unfolded.ok());
  CHECK(unfolded.status().message().find("node 'view' (Reshape): input 'shape' must be a constant known at "
                                         "compile time") != std::string::npos);
}

TEST_CASE("integer Div and Mod of an ONNX model fold to ONNX's values") {
  OnnxBuilder b;
  b.input("x", {3}).output("y");
  b.ints("a", {7, -7, 9});
  b.ints("b", {2, 2, -4});
  b.node("Div", "quotient", {"a", "b"}, {"q"});
  OnnxBuilder::int_attr(b.node("Mod", "remainder", {"a", "b"}, {"r"}), "fmod", 0);
  b.node("Add", "sum", {"q", "r"}, {"qr"});
  OnnxBuilder::int_attr(b.node("Cast", "as_float", {"qr"}, {"f"}), "to", onnx::TensorProto::FLOAT);
  b.node("Add", "y", {"x", "f"}, {"y"});
  frontend::OnnxImportOptions options;
  options.evaluate_constants = compiler::evaluate_on_device;
  const auto imported = frontend::import_onnx(b.bytes(), "int.onnx", options);
  REQUIRE(imported.ok());
  CHECK(imported->folded_nodes == 4);
  REQUIRE(imported->graph.ops().size() == 1);
  const ir::Value& folded = imported->graph.value(imported->graph.ops()[0].inputs[1]);
  // 7/2 → 3 r 1; -7/2 → -3 (toward zero) r 1 (the divisor's sign); 9/-4 → -2 r -3.
  CHECK(folded.initial == std::vector<float>{4, -2, -5});
}

// The folded constant that `y = x + Cast(constant)` adds, after importing `b` with folding.
std::vector<float> folded_addend(const OnnxBuilder& b) {
  frontend::OnnxImportOptions options;
  options.evaluate_constants = compiler::evaluate_on_device;
  const auto imported = frontend::import_onnx(b.bytes(), "scatter.onnx", options);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  REQUIRE(imported->graph.ops().size() == 1);
  return imported->graph.value(imported->graph.ops()[0].inputs[1]).initial;
}

TEST_CASE("ScatterND writes its updates where constant indices say, the later of two winning") {
  OnnxBuilder b;
  b.input("x", {2, 3}).output("y");
  b.ints("data", {0, 1, 2, 3, 4, 5});
  b.ints("shape", {2, 3});
  b.ints("at", {0, 1, 1, -1, 0, 1}); // (0,1), (1,2), (0,1) again
  b.ints("at_shape", {3, 2});
  b.ints("updates", {10, 20, 30});
  b.node("Reshape", "table", {"data", "shape"}, {"table2d"});
  b.node("Reshape", "where", {"at", "at_shape"}, {"at2d"});
  b.node("ScatterND", "scatter", {"table2d", "at2d", "updates"}, {"s"});
  OnnxBuilder::int_attr(b.node("Cast", "as_float", {"s"}, {"f"}), "to", onnx::TensorProto::FLOAT);
  b.node("Add", "y", {"x", "f"}, {"y"});
  CHECK(folded_addend(b) == std::vector<float>{0, 30, 2, 3, 4, 20});

  OnnxBuilder rows; // k = 1: whole rows
  rows.input("x", {2, 3}).output("y");
  rows.ints("data", {0, 1, 2, 3, 4, 5});
  rows.ints("shape", {2, 3});
  rows.ints("at", {1});
  rows.ints("at_shape", {1, 1});
  rows.ints("updates", {7, 8, 9});
  rows.ints("update_shape", {1, 3});
  rows.node("Reshape", "table", {"data", "shape"}, {"table2d"});
  rows.node("Reshape", "where", {"at", "at_shape"}, {"at2d"});
  rows.node("Reshape", "rows", {"updates", "update_shape"}, {"row"});
  rows.node("ScatterND", "scatter", {"table2d", "at2d", "row"}, {"s"});
  OnnxBuilder::int_attr(rows.node("Cast", "as_float", {"s"}, {"f"}), "to", onnx::TensorProto::FLOAT);
  rows.node("Add", "y", {"x", "f"}, {"y"});
  CHECK(folded_addend(rows) == std::vector<float>{0, 1, 2, 7, 8, 9});
}

TEST_CASE("Mod of floats needs fmod 1, as ONNX requires") {
  OnnxBuilder b;
  b.input("x", {3}).output("y");
  b.node("Mod", "remainder", {"x", "x"}, {"y"});
  const auto imported = frontend::import_onnx(b.bytes(), "mod.onnx", frontend::OnnxImportOptions{});
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().message().find("node 'remainder' (Mod): Mod of dtype 'f4' needs fmod 1") !=
        std::string::npos);
}

} // namespace
} // namespace ipu::testing
