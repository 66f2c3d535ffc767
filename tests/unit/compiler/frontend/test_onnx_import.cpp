// The ONNX front end (compiler/frontend/onnx_import.cpp, onnx_ops.cpp): models import into the
// forward IR graph, a dynamic batch is bound, PopART stage attributes are read and checked, and
// every unsupported or malformed node is reported at once, naming the file and the node.
#include <doctest/doctest.h>

#include <string>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/onnx_ops.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/test_strings.h"

namespace ipu::testing {
namespace {

using frontend::import_onnx;
using frontend::OnnxImportOptions;

const std::string kPath = "models/net.onnx";

StatusOr<frontend::ForwardGraph> import(const OnnxBuilder& b, int64_t batch = 2,
                                        std::vector<int> stages = {}) {
  return import_onnx(b.bytes(), kPath, OnnxImportOptions{batch, std::move(stages), false, {}});
}

// x [N,2,3] → Flatten → Gemm(transB) with W [4,6], b [4] → Relu → y [N,4].
OnnxBuilder small_mlp() {
  OnnxBuilder b;
  b.input("x", {2, 3}).output("y");
  b.floats("W", {4, 6}, wave(24, 0.5f, 0.0f)).floats("b", {4}, wave(4, 0.1f, 1.0f));
  b.node("Flatten", "flat", {"x"}, {"f"});
  OnnxBuilder::int_attr(b.node("Gemm", "fc", {"f", "W", "b"}, {"g"}), "transB", 1);
  b.node("Relu", "act", {"g"}, {"y"});
  return b;
}

TEST_CASE("an ONNX MLP imports with its initializers as weights and the batch bound") {
  auto imported = import(small_mlp(), 5);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  const ir::Graph& g = imported->graph;
  CHECK(g.value(imported->features()).type.shape == std::vector<int64_t>{5, 2, 3});
  CHECK(g.value(imported->scores()).type.shape == std::vector<int64_t>{5, 4});
  const auto weights = g.values_with_role(ir::Role::kWeight);
  REQUIRE(weights.size() == 2);
  CHECK(g.value(weights[0]).name == "W");
  CHECK(g.value(weights[0]).type.shape == std::vector<int64_t>{4, 6});
  CHECK(g.value(weights[0]).initial == wave(24, 0.5f, 0.0f));
  CHECK(imported->num_stages == 1);
  CHECK(imported->name == "test_graph");
}

TEST_CASE("every unsupported node is listed at once and its consumers are not") {
  OnnxBuilder b;
  b.input("x", {4}).output("y");
  b.node("Cosh", "c1", {"x"}, {"a"});
  b.node("Relu", "r", {"a"}, {"b"});
  OnnxBuilder::int_attr(b.node("Flatten", "f", {"b"}, {"c"}), "axis", 1);
  auto& gemm = b.node("Gemm", "g", {"x", "x"}, {"y"});
  OnnxBuilder::float_attr(gemm, "alpha", 2.0f);
  OnnxBuilder::int_attr(gemm, "broadcast", 1);
  auto imported = import(b);
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().code() == StatusCode::kUnsupported);
  const std::string m = imported.status().message();
  CHECK(contains(m, kPath + ": node 'c1' (Cosh): op Cosh is not supported"));
  CHECK(contains(m, "node 'g' (Gemm): attribute 'broadcast' not supported"));
  CHECK_FALSE(contains(m, "'r'"));
  CHECK_FALSE(contains(m, "'f'"));
}

TEST_CASE("an op version outside the implemented ones is unsupported, naming the versions") {
  OnnxBuilder b(1); // Add-1 had 'consumed_inputs' and its own broadcasting
  b.input("x", {3}).output("y").floats("W", {3}, wave(3, 1.0f, 0.0f));
  b.node("Add", "a", {"x", "W"}, {"y"});
  auto imported = import(b);
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().code() == StatusCode::kUnsupported);
  CHECK(contains(imported.status().message(),
                 "version 1 of Add (opset 1) is not supported; supported versions: 6, 7, 13, 14"));
}

// Opset 6-8 versions whose semantics equal a later one import as it (docs/onnx.md): explicit
// broadcasting becomes numpy's, and what the old version forbade stays an error.
TEST_CASE("opset 6 ops import where they mean what a later version means") {
  SUBCASE("Add-6 with broadcast and axis pads B to A's rank") {
    OnnxBuilder b(6);
    b.input("x", {3, 2}).output("y").floats("B", {3}, wave(3, 1.0f, 0.0f));
    auto& add = b.node("Add", "a", {"x", "B"}, {"y"});
    OnnxBuilder::int_attr(add, "broadcast", 1);
    OnnxBuilder::int_attr(add, "axis", 1);
    auto imported = import(b);
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    const auto& g = imported->graph;
    CHECK(g.value(imported->scores()).type.shape == std::vector<int64_t>{2, 3, 2});
    const ir::Op& op = g.op(g.value(imported->scores()).producer);
    CHECK(g.value(op.inputs[1]).type.shape == std::vector<int64_t>{1, 3, 1});
  }
  SUBCASE("without broadcast the shapes must be equal") {
    OnnxBuilder b(6);
    b.input("x", {3}).output("y").floats("B", {3}, wave(3, 1.0f, 0.0f));
    b.node("Mul", "m", {"x", "B"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(
        imported.status().message(),
        "node 'm' (Mul): without 'broadcast' (version 6) the inputs must have one shape, got [2,3] and [3]"));
  }
  SUBCASE("B must be a run of A's dims at axis") {
    OnnxBuilder b(6);
    b.input("x", {3, 2}).output("y").floats("B", {2}, wave(2, 1.0f, 0.0f));
    auto& s = b.node("Sub", "s", {"x", "B"}, {"y"});
    OnnxBuilder::int_attr(s, "broadcast", 1);
    OnnxBuilder::int_attr(s, "axis", 1);
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "B [2] is not a run of A [2,3,2] at axis 1"));
  }
  SUBCASE("Sum-6 does not broadcast") {
    OnnxBuilder b(6);
    b.input("x", {3}).output("y").floats("B", {1, 3}, wave(3, 1.0f, 0.0f));
    b.node("Sum", "sum", {"x", "B"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(),
                   "version 6 does not broadcast: input 1 is [1,3], input 0 [2,3]"));
  }
  SUBCASE("Gemm-6 without broadcast needs C of the output's shape") {
    OnnxBuilder b(6);
    b.input("x", {3})
        .output("y")
        .floats("W", {3, 2}, wave(6, 1.0f, 0.0f))
        .floats("C", {2}, wave(2, 1.0f, 0.0f));
    b.node("Gemm", "g", {"x", "W", "C"}, {"y"});
    auto refused = import(b);
    REQUIRE_FALSE(refused.ok());
    CHECK(contains(refused.status().message(), "without 'broadcast' (version 6) C must be [2,2], got [2]"));
    OnnxBuilder::int_attr(*b.model().mutable_graph()->mutable_node(0), "broadcast", 1);
    auto imported = import(b);
    INFO(imported.status().message());
    CHECK(imported.ok());
  }
  SUBCASE("BatchNormalization-7 with spatial 0 is refused by name") {
    OnnxBuilder b(7);
    b.input("x", {2, 3, 3}).output("y");
    for (const char* name : {"scale", "bias", "mean", "var"})
      b.floats(name, {2}, wave(2, 1.0f, 1.0f));
    auto& bn = b.node("BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"}, {"y"});
    OnnxBuilder::int_attr(bn, "spatial", 0);
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kUnsupported);
    CHECK(contains(imported.status().message(), "spatial 0 (per-element statistics) is not supported"));
  }
  SUBCASE("an attribute of an older version is not read on a later one") {
    OnnxBuilder b(7);
    b.input("x", {3}).output("y").floats("B", {3}, wave(3, 1.0f, 0.0f));
    OnnxBuilder::int_attr(b.node("Add", "a", {"x", "B"}, {"y"}), "broadcast", 1);
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'a' (Add): attribute 'broadcast' not supported"));
  }
}

// ONNX's training ops (ai.onnx.preview.training: Adagrad, Adam, Momentum) are valid models ipucc
// does not implement: unsupported, with or without an ai.onnx import beside their domain's.
TEST_CASE("ops of another domain are unsupported, naming the node and the domain") {
  for (bool with_ai_onnx : {true, false}) {
    CAPTURE(with_ai_onnx);
    OnnxBuilder b;
    auto& model = b.model();
    if (!with_ai_onnx) model.clear_opset_import();
    auto* training = model.add_opset_import();
    training->set_domain("ai.onnx.preview.training");
    training->set_version(1);
    b.input("x", {4}).output("y");
    auto& momentum = b.node("Momentum", "step", {"x"}, {"y"});
    momentum.set_domain("ai.onnx.preview.training");
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kUnsupported);
    CHECK(contains(imported.status().message(), kPath + ": node 'step' (Momentum): op Momentum of domain "
                                                        "'ai.onnx.preview.training' is not supported"));
  }
  // A default-domain node without the ai.onnx import is a malformed model.
  OnnxBuilder b;
  b.model().clear_opset_import();
  b.input("x", {4}).output("y");
  b.node("Relu", "r", {"x"}, {"y"});
  auto imported = import(b);
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().code() == StatusCode::kInvalidArgument);
  CHECK(
      contains(imported.status().message(), "the model imports no ai.onnx opset, which its Relu nodes need"));
}

TEST_CASE("malformed models are invalid input naming the file") {
  SUBCASE("not a protobuf") {
    auto imported = import_onnx("\xff\xff\xff garbage", kPath, {});
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(), kPath + ": not an ONNX model"));
  }
  SUBCASE("dangling input") {
    OnnxBuilder b;
    b.input("x", {3}).output("y");
    b.node("Relu", "r", {"nowhere"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'r' (Relu): input 'nowhere' is not a graph input"));
  }
  SUBCASE("an initializer whose data does not match its dims") {
    OnnxBuilder b;
    b.input("x", {3}).output("y").floats("W", {3, 2}, {1, 2, 3});
    b.node("MatMul", "m", {"x", "W"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(), "initializer 'W': holds 3 values, its dims need 6"));
  }
}

TEST_CASE("a value written twice is invalid input naming both writers (onnx.checker's SSA rule)") {
  OnnxBuilder b;
  b.input("x", {4}).output("y").floats("w", {4}, wave(4, 1.0f, 0.0f));
  SUBCASE("two nodes write one output") {
    b.node("Relu", "first", {"x"}, {"y"});
    b.node("Neg", "second", {"x"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(imported.status().message() ==
          kPath + ": node 'first' (Relu) and node 'second' (Neg) both write 'y': a value of an ONNX graph "
                  "has one producer (SSA form)");
  }
  SUBCASE("a node lists one output twice") {
    OnnxBuilder::int_attr(b.node("Split", "split", {"x"}, {"y", "y"}), "axis", 1);
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), kPath + ": node 'split' (Split) writes 'y' twice"));
  }
  SUBCASE("a node output shadows a graph input") {
    b.node("Relu", "first", {"x"}, {"x"});
    b.node("Add", "second", {"x", "w"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(),
                   kPath + ": node 'first' (Relu) writes 'x', which is a graph input"));
  }
  SUBCASE("a node output shadows an initializer") {
    b.node("Relu", "first", {"x"}, {"w"});
    b.node("Add", "second", {"x", "w"}, {"y"});
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(),
                   kPath + ": node 'first' (Relu) writes 'w', which is an initializer"));
  }
  SUBCASE("every such value is listed, even beside an unsupported op") {
    b.node("Relu", "first", {"x"}, {"y"});
    b.node("Relu", "", {"x"}, {"y"});
    b.node("NoSuchOp", "odd", {"x"}, {"x"});
    b.floats("w", {4}, wave(4, 1.0f, 1.0f));
    auto imported = import(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    const std::string message = imported.status().message();
    CHECK(contains(message, kPath + ": initializer 'w' is defined twice"));
    CHECK(contains(message, kPath + ": node 'first' (Relu) and node #1 (Relu) both write 'y'"));
    CHECK(contains(message, kPath + ": node 'odd' (NoSuchOp) writes 'x', which is a graph input"));
  }
  SUBCASE("an initializer also listed as a graph input (IR < 4) is one value") {
    b.model().mutable_graph()->add_input()->set_name("w");
    b.node("Add", "sum", {"x", "w"}, {"y"});
    CHECK(import(b).ok());
  }
}

TEST_CASE("a name that is not UTF-8 is invalid input: the executable could not hold it") {
  OnnxBuilder b;
  b.input("x", {4}).output("y").floats("w\xff", {4}, wave(4, 1.0f, 0.0f));
  b.node("Add", "sum\xc3", {"x", "w\xff"}, {"y"});
  auto imported = import(b);
  REQUIRE_FALSE(imported.ok());
  CHECK(imported.status().code() == StatusCode::kInvalidArgument);
  CHECK(imported.status().message() == kPath + ": initializer 'w\\xff': the name is not UTF-8\n" + kPath +
                                           ": node #0 (Add) 'sum\\xc3': the name is not UTF-8");
}

TEST_CASE("inputs with fixed dims are static, a dynamic first axis is the batch") {
  OnnxBuilder b;
  b.input("x", {3}, 4).input("bias", {3}).output("y").output("z");
  b.node("Relu", "static", {"x"}, {"y"});
  b.node("Relu", "batched", {"bias"}, {"z"});
  auto imported = import(b, 2);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  REQUIRE(imported->inputs.size() == 2);
  CHECK_FALSE(imported->inputs[0].batched);
  CHECK(imported->graph.value(imported->inputs[0].value).type.shape == std::vector<int64_t>{4, 3});
  CHECK(imported->inputs[1].batched);
  CHECK(imported->graph.value(imported->inputs[1].value).type.shape == std::vector<int64_t>{2, 3});
  REQUIRE(imported->outputs.size() == 2);
  CHECK(imported->outputs[0].name == "y");
  CHECK(imported->outputs[1].name == "z");
  CHECK_FALSE(imported->outputs[0].batched);
  CHECK(imported->outputs[1].batched);
}

// What torch.onnx.export writes without dynamic_axes: the traced batch fixed in the input and the
// output. Training takes it as the batch when it is the batch size; inference keeps it static.
TEST_CASE("a training import takes a first dimension fixed at the batch size as the batch") {
  OnnxBuilder b;
  b.input("x", {3}, 4).output("y");
  b.node("Relu", "r", {"x"}, {"y"});
  auto* declared = b.model().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type();
  declared->mutable_shape()->add_dim()->set_dim_value(4);
  declared->mutable_shape()->add_dim()->set_dim_value(3);
  for (int64_t batch_size : {4, 2}) {
    for (bool training : {false, true}) {
      CAPTURE(batch_size);
      CAPTURE(training);
      auto imported = import_onnx(b.bytes(), kPath, OnnxImportOptions{batch_size, {}, training, {}});
      INFO(imported.status().message());
      REQUIRE(imported.ok());
      const bool batched = training && batch_size == 4;
      CHECK(imported->inputs[0].batched == batched);
      CHECK(imported->outputs[0].batched == batched);
      CHECK(imported->graph.value(imported->inputs[0].value).type.shape == std::vector<int64_t>{4, 3});
    }
  }
}

TEST_CASE("an input with a zero dimension must be bound: empty tensors cannot be runtime inputs") {
  OnnxBuilder b;
  b.input("x", {0, 3}, 2).output("y");
  b.node("Relu", "r", {"x"}, {"y"});
  auto imported = import(b);
  REQUIRE(imported.status().code() == StatusCode::kUnsupported);
  CHECK(contains(
      imported.status().message(),
      "graph input 'x' must be a compile-time constant: it has shape [2,0,3] and empty tensors cannot be "
      "runtime inputs; bind it with --constant-input x=FILE"));
  CHECK_FALSE(contains(imported.status().message(), "node 'r'"));
}

TEST_CASE("Reshape takes a constant shape with 0 and -1 and rejects a mismatch") {
  OnnxBuilder b;
  b.input("x", {2, 3}).output("y").ints("shape", {0, -1});
  b.node("Reshape", "r", {"x", "shape"}, {"y"});
  auto imported = import(b, 7);
  REQUIRE(imported.ok());
  CHECK(imported->graph.value(imported->scores()).type.shape == std::vector<int64_t>{7, 6});

  OnnxBuilder bad;
  bad.input("x", {2, 3}).output("y").ints("shape", {5, 5});
  bad.node("Reshape", "r", {"x", "shape"}, {"y"});
  auto failed = import(bad, 7);
  REQUIRE_FALSE(failed.ok());
  CHECK(contains(failed.status().message(),
                 "node 'r' (Reshape): cannot reshape [7,2,3] (42 elements) to [5,5]"));
}

// PopART's attributes on the small MLP's three nodes.
OnnxBuilder staged_mlp(const std::vector<std::pair<int, int>>& stage_ipu) {
  OnnxBuilder b = small_mlp();
  auto& graph = *b.model().mutable_graph();
  for (int i = 0; i < graph.node_size() && i < static_cast<int>(stage_ipu.size()); ++i) {
    if (stage_ipu[i].first >= 0)
      OnnxBuilder::int_attr(*graph.mutable_node(i), "__pipeline_stage", stage_ipu[i].first);
    if (stage_ipu[i].second >= 0)
      OnnxBuilder::int_attr(*graph.mutable_node(i), "__ipu_number", stage_ipu[i].second);
  }
  return b;
}

TEST_CASE("pipeline stages come from __pipeline_stage / __ipu_number with PopART's rules") {
  SUBCASE("valid: two stages, copies inserted between them") {
    auto imported = import(staged_mlp({{0, 0}, {0, 0}, {1, 1}}));
    REQUIRE(imported.ok());
    CHECK(imported->num_stages == 2);
    CHECK(contains(imported->graph.to_string(), "StageCopy"));
  }
  SUBCASE("on some nodes only") {
    auto imported = import(staged_mlp({{0, 0}, {1, 1}}));
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "on every node or on none (2 of 3 nodes have one)"));
  }
  SUBCASE("a stage on another IPU number") {
    auto imported = import(staged_mlp({{0, 0}, {1, 0}, {1, 0}}));
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'fc' (Gemm): stage 1 on IPU 0"));
  }
  SUBCASE("reading from a later stage") {
    auto imported = import(staged_mlp({{1, 1}, {0, 0}, {1, 1}}));
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'fc' (Gemm): stage 0 reads 'f' from later stage 1"));
  }
  SUBCASE("gaps in the numbering") {
    auto imported = import(staged_mlp({{0, 0}, {2, 2}, {2, 2}}));
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "stages must be numbered 0..1 without gaps"));
  }
  SUBCASE("--stage-assignment overrides the attributes") {
    auto imported = import(staged_mlp({{0, 0}, {0, 0}, {0, 0}}), 2, {0, 1, 1});
    REQUIRE(imported.ok());
    CHECK(imported->num_stages == 2);
    auto wrong_length = import(small_mlp(), 2, {0, 1});
    REQUIRE_FALSE(wrong_length.ok());
    CHECK(contains(wrong_length.status().message(), "--stage-assignment has 2 entries for 3 nodes"));
  }
}

// Dropout-13 without training_mode is in inference mode in every program; Dropout-10 leaves the
// mode to the runtime, so a training program drops with its ratio attribute (0.5 by default).
TEST_CASE("Dropout is the identity unless a training program would drop") {
  OnnxBuilder v13;
  v13.input("x", {3}).output("y");
  v13.node("Dropout", "d", {"x"}, {"y"});
  for (bool training : {false, true}) {
    auto imported = import_onnx(v13.bytes(), kPath, OnnxImportOptions{2, {}, training, {}});
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    CHECK(imported->scores() == imported->features());
  }
  auto v10 = [](float ratio) {
    OnnxBuilder b(10);
    b.input("x", {3}).output("y");
    OnnxBuilder::float_attr(b.node("Dropout", "d", {"x"}, {"y"}), "ratio", ratio);
    return b;
  };
  REQUIRE(import(v10(0.5f)).ok());
  auto dropping = import_onnx(v10(0.5f).bytes(), kPath, OnnxImportOptions{2, {}, true, {}});
  REQUIRE_FALSE(dropping.ok());
  CHECK(dropping.status().code() == StatusCode::kUnsupported);
  CHECK(contains(dropping.status().message(),
                 "node 'd' (Dropout): Dropout in training mode with ratio 0.500000 drops a random mask"));
  CHECK(contains(dropping.status().message(), "export the model with the dropout's probability set to 0"));
  CHECK(import_onnx(v10(0.0f).bytes(), kPath, OnnxImportOptions{2, {}, true, {}}).ok());
}

// training_mode true is deterministic only with ratio 0; the mask is then all ones.
TEST_CASE("Dropout in training mode: ratio 0 is the identity with a mask of ones, other ratios are refused") {
  auto model = [](float ratio) {
    OnnxBuilder b(13);
    b.input("x", {3}).output("y").output("mask");
    b.floats("ratio", {}, {ratio});
    auto* mode = b.model().mutable_graph()->add_initializer();
    mode->set_name("training_mode");
    mode->set_data_type(onnx::TensorProto::BOOL);
    mode->add_int32_data(1);
    b.node("Dropout", "d", {"x", "ratio", "training_mode"}, {"y", "mask"});
    b.model().mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::BOOL);
    return b;
  };
  auto zero = import(model(0.0f));
  INFO(zero.status().message());
  REQUIRE(zero.ok());
  CHECK(zero->outputs[0].value == zero->features());
  CHECK(zero->outputs[1].dtype == "b1");
  const auto& mask = zero->graph.value(zero->outputs[1].value);
  CHECK(mask.type.shape == std::vector<int64_t>{2, 3});
  CHECK(mask.initial == std::vector<float>(6, 1.0f));
  auto random = import(model(0.5f));
  CHECK(random.status().code() == StatusCode::kUnsupported);
  CHECK(contains(random.status().message(), "drops a random mask"));
}

// [N, C, D, H, W] pools over (H, W) on [N, C*D, H, W], then over D (separable, onnx_ops_conv.cpp).
TEST_CASE("3-D pooling is a pool over (H, W) then one over D, with ONNX's output shape") {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    CAPTURE(op);
    OnnxBuilder b;
    b.input("x", {2, 5, 6, 7}, 1).output("y");
    auto& node = b.node(op, "pool", {"x"}, {"y"});
    OnnxBuilder::ints_attr(node, "kernel_shape", {3, 2, 2});
    OnnxBuilder::ints_attr(node, "strides", {2, 1, 2});
    OnnxBuilder::ints_attr(node, "pads", {1, 0, 1, 1, 0, 0});
    auto imported = import(b);
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    const auto& g = imported->graph;
    // D: (5 + 2 - 3) / 2 + 1 = 3; H: (6 - 2) + 1 = 5; W: (7 + 1 - 2) / 2 + 1 = 4.
    CHECK(g.value(imported->scores()).type.shape == std::vector<int64_t>{1, 2, 3, 5, 4});
    std::vector<std::vector<int64_t>> pool_inputs;
    for (const auto& o : g.ops()) {
      if (o.kind == ir::OpKind::kMaxPool || o.kind == ir::OpKind::kAveragePool) {
        pool_inputs.push_back(g.value(o.inputs[0]).type.shape);
      }
    }
    CHECK(pool_inputs == std::vector<std::vector<int64_t>>{{1, 10, 6, 7}, {1, 2, 5, 20}});
  }
}

// A pool's vertices own whole planes: one whose plane would take more than half a tile runs as a
// pool along W over rows, then one along H over the columns made rows (tests/e2e/test_onnx.sh
// checks the values).
TEST_CASE("a pool whose plane crowds a tile runs as two pools over rows") {
  OnnxBuilder b;
  b.input("x", {1, 20, 30}, 1).output("y");
  auto& node = b.node("MaxPool", "pool", {"x"}, {"y"});
  OnnxBuilder::ints_attr(node, "kernel_shape", {3, 2});
  OnnxBuilder::ints_attr(node, "strides", {2, 2});
  for (uint64_t tile : {uint64_t{4096}, uint64_t{1} << 20}) {
    CAPTURE(tile);
    auto imported = import_onnx(b.bytes(), kPath, OnnxImportOptions{1, {}, false, {}, tile});
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    const auto& g = imported->graph;
    CHECK(g.value(imported->scores()).type.shape == std::vector<int64_t>{1, 1, 9, 15});
    std::vector<std::vector<int64_t>> pool_inputs;
    for (const auto& o : g.ops()) {
      if (o.kind == ir::OpKind::kMaxPool) pool_inputs.push_back(g.value(o.inputs[0]).type.shape);
    }
    // Twice the 20·30-float plane (its input and an output no larger) is 4,800 bytes: more than
    // half of 4 KiB, not of 1 MiB.
    if (tile == 4096) {
      CHECK(pool_inputs == std::vector<std::vector<int64_t>>{{1, 20, 1, 30}, {1, 15, 1, 20}});
    } else {
      CHECK(pool_inputs == std::vector<std::vector<int64_t>>{{1, 1, 20, 30}});
    }
  }
}

TEST_CASE("looks_like_onnx goes by the extension, then by the content") {
  CHECK(frontend::looks_like_onnx("{", "m.onnx"));
  CHECK_FALSE(frontend::looks_like_onnx("\x08\x07", "m.json"));
  CHECK_FALSE(frontend::looks_like_onnx("  {\"layers\": []}", "model"));
  CHECK(frontend::looks_like_onnx("\x08\x07", "model"));
}

} // namespace
} // namespace ipu::testing
