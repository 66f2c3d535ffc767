// A model whose ONNX graph computes its loss (passes/graph_loss.h): what becomes the labels, the
// loss phase and the prediction, compiled through the driver as `ipucc compile` does.
#include <doctest/doctest.h>

#include <string>

#include "compiler/driver/compile.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/compiler/test_support.h"

namespace {

using namespace ipu;
using ipu::testing::OnnxBuilder;

// x [N,4] → Gemm → "logits" [N,3]; with `loss`, SoftmaxCrossEntropyLoss(logits, labels) → "loss".
std::string classifier(bool loss) {
  OnnxBuilder b;
  b.input("x", {4});
  b.floats("w", {3, 4}, ipu::testing::wave(12, 0.5f, 0.1f)).floats("b", {3}, {0.1f, -0.2f, 0.3f});
  OnnxBuilder::int_attr(b.node("Gemm", "dense", {"x", "w", "b"}, {"logits"}), "transB", 1);
  if (!loss) {
    b.output("logits");
    return b.bytes();
  }
  b.input("labels", {});
  b.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  b.node("SoftmaxCrossEntropyLoss", "xent", {"logits", "labels"}, {"loss"});
  b.output("loss");
  return b.bytes();
}

// x [N,4] → Gemm → "prediction" [N,3]; "loss" = ReduceMean((prediction − y)²), y [N,3].
std::string regression() {
  OnnxBuilder b;
  b.input("x", {4}).input("y", {3});
  b.floats("w", {3, 4}, ipu::testing::wave(12, 0.5f, 0.1f)).floats("b", {3}, {0.1f, -0.2f, 0.3f});
  OnnxBuilder::int_attr(b.node("Gemm", "dense", {"x", "w", "b"}, {"prediction"}), "transB", 1);
  b.node("Sub", "error", {"prediction", "y"}, {"e"});
  b.node("Mul", "square", {"e", "e"}, {"s"});
  OnnxBuilder::int_attr(b.node("ReduceMean", "mean", {"s"}, {"loss"}), "keepdims", 0);
  b.output("prediction").output("loss");
  return b.bytes();
}

compiler::CompileOptions train_options() {
  auto options = ipu::testing::small_target_options(2);
  options.model_path = "test.onnx";
  return options;
}

const format::Stream& stream(const format::Executable& exe, const std::string& name) {
  for (const auto& s : exe.streams()) {
    if (s.name() == name) return s;
  }
  FAIL("no stream " << name);
  return exe.streams(0);
}

TEST_CASE("graph_loss: a SoftmaxCrossEntropyLoss output trains as --loss sparse_categorical_crossentropy") {
  auto added = train_options();
  added.loss = passes::LossKind::kSparseCategoricalCrossEntropy;
  auto with_added_loss = compiler::compile_model(classifier(false), added);
  REQUIRE_MESSAGE(with_added_loss.ok(), with_added_loss.status().message());
  auto own = compiler::compile_model(classifier(true), train_options());
  REQUIRE_MESSAGE(own.ok(), own.status().message());
  // The same ops on the same values: the loss node's own ops are gone, its target is the labels.
  CHECK(own->ir_text == with_added_loss->ir_text);
  CHECK(own->ir_text.find("NllLoss") == std::string::npos);
  const format::Executable& exe = own->executable;
  REQUIRE(exe.inputs_size() == 1);
  CHECK(exe.inputs(0).name() == "x");
  REQUIRE(exe.outputs_size() == 1);
  CHECK(exe.outputs(0).name() == "logits");
  CHECK(exe.num_classes() == 3);
  const format::Stream& labels = stream(exe, std::string(format::kLabelsStream));
  CHECK(labels.dtype() == format::INT32);
  CHECK(std::vector<int64_t>(labels.shape().begin(), labels.shape().end()) == std::vector<int64_t>{2});
  CHECK_FALSE(exe.loss_counts_padding());
}

TEST_CASE("graph_loss: --loss-output trains the graph's scalar, its only-loss ops in the loss phase") {
  auto options = train_options();
  options.loss_output = "loss";
  auto compiled = compiler::compile_model(regression(), options);
  REQUIRE_MESSAGE(compiled.ok(), compiled.status().message());
  const std::string& ir = compiled->ir_text;
  CHECK(ir.find("forward stage 0: dense/bias_add:f32[2,3] = MatMul(x, w, b)") != std::string::npos);
  CHECK(ir.find("loss stage 0: error:f32[2,3] = Binary(dense/bias_add, y)") != std::string::npos);
  CHECK(ir.find("loss stage 0: mean:f32[] = Reduce(square)") != std::string::npos);
  CHECK(ir.find("mean/gradient_seed") != std::string::npos);
  CHECK(ir.find("update stage 0:  = SgdUpdate(w,") != std::string::npos);
  const format::Executable& exe = compiled->executable;
  REQUIRE(exe.inputs_size() == 1);
  CHECK(exe.inputs(0).name() == "x");
  REQUIRE(exe.outputs_size() == 1);
  CHECK(exe.outputs(0).name() == "prediction");
  const format::Stream& labels = stream(exe, std::string(format::kLabelsStream));
  CHECK(labels.dtype() == format::FLOAT32);
  CHECK(std::vector<int64_t>(labels.shape().begin(), labels.shape().end()) == std::vector<int64_t>{2, 3});
  CHECK(exe.loss_counts_padding());
}

TEST_CASE("graph_loss: the labels are the one input only the loss reads") {
  SUBCASE("an input the prediction reads is not the labels") {
    auto options = train_options();
    options.loss_output = "loss";
    OnnxBuilder b;
    b.input("x", {3});
    b.node("Sub", "error", {"x", "x"}, {"e"});
    OnnxBuilder::int_attr(b.node("ReduceMean", "mean", {"e"}, {"loss"}), "keepdims", 0);
    b.node("Identity", "same", {"x"}, {"prediction"});
    b.output("prediction").output("loss");
    auto compiled = compiler::compile_model(b.bytes(), options);
    REQUIRE_FALSE(compiled.ok());
    CHECK(compiled.status().code() == StatusCode::kInvalidArgument);
    CHECK(compiled.status().message() ==
          "test.onnx: the loss 'loss' reads no graph input that the prediction 'prediction' does not: the "
          "labels are the input only the loss reads");
  }
  SUBCASE("float labels travel flattened per sample, whatever shape the loss reads") {
    auto options = train_options();
    options.loss_output = "loss";
    OnnxBuilder b;
    b.input("x", {4}).input("y", {1, 1});
    b.floats("w", {3, 4}, ipu::testing::wave(12, 0.5f, 0.1f));
    OnnxBuilder::int_attr(b.node("Gemm", "dense", {"x", "w"}, {"prediction"}), "transB", 1);
    b.node("Sub", "error", {"prediction", "y"}, {"e"}); // y [N,1,1] broadcast to [N,N,3]
    OnnxBuilder::int_attr(b.node("ReduceMean", "mean", {"e"}, {"loss"}), "keepdims", 0);
    b.output("prediction").output("loss");
    auto compiled = compiler::compile_model(b.bytes(), options);
    REQUIRE_MESSAGE(compiled.ok(), compiled.status().message());
    const format::Stream& labels = stream(compiled->executable, std::string(format::kLabelsStream));
    CHECK(labels.dtype() == format::FLOAT32);
    CHECK(std::vector<int64_t>(labels.shape().begin(), labels.shape().end()) == std::vector<int64_t>{2, 1});
    CHECK(compiled->executable.num_classes() == 1);
  }
  SUBCASE("a computed target is refused naming the node") {
    OnnxBuilder b;
    b.input("x", {4});
    b.floats("w", {3, 4}, ipu::testing::wave(12, 0.5f, 0.1f));
    OnnxBuilder::int_attr(b.node("Gemm", "dense", {"x", "w"}, {"logits"}), "transB", 1);
    onnx::NodeProto& pick = b.node("ArgMax", "pick", {"logits"}, {"targets"});
    OnnxBuilder::int_attr(pick, "axis", 1);
    OnnxBuilder::int_attr(pick, "keepdims", 0);
    b.node("SoftmaxCrossEntropyLoss", "xent", {"logits", "targets"}, {"loss"});
    b.output("loss");
    auto compiled = compiler::compile_model(b.bytes(), train_options());
    REQUIRE_FALSE(compiled.ok());
    CHECK(compiled.status().code() == StatusCode::kUnsupported);
    CHECK(compiled.status().message() ==
          "test.onnx: node 'xent': training on this loss needs its target to be a "
          "graph input (the labels), not computed");
  }
}

} // namespace
