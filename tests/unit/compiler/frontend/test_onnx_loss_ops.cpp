// The loss converters (onnx_ops_loss.cpp): NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// give an NllLoss over the input viewed as [N, C, D] with ONNX's output shapes, read reduction
// and ignore_index, take class weights, and reject what ONNX does not define.
#include <doctest/doctest.h>

#include <string>

#include "compiler/frontend/onnx_import.h"
#include "runtime/format/tensor_kinds.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/test_strings.h"

namespace ipu::testing {
namespace {

using format::LossReduction;
using frontend::import_onnx;
using frontend::OnnxImportOptions;

// x [2, 3, 4] (fixed) and int64 targets y [2, 4]; one loss node writing `outputs`.
OnnxBuilder loss_model(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs, int opset = 13) {
  OnnxBuilder b(opset);
  b.input("x", {3, 4}, 2).input("y", {4}, 2);
  b.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  for (const auto& o : outputs)
    b.output(o);
  b.node(op_type, "loss", inputs, outputs);
  return b;
}

StatusOr<frontend::ForwardGraph> import_loss(const OnnxBuilder& b) {
  return import_onnx(b.bytes(), "net.onnx", OnnxImportOptions{2, {}, false, {}});
}

const ir::Op& producer(const frontend::ForwardGraph& g, int value) {
  return g.graph.op(g.graph.value(value).producer);
}

// The NllLoss op of the import (there is one).
const ir::Op& nll_op(const frontend::ForwardGraph& g) {
  for (const ir::Op& op : g.graph.ops()) {
    if (op.kind == ir::OpKind::kNllLoss) return op;
  }
  FAIL("no NllLoss op");
  return g.graph.ops().front();
}

TEST_CASE("NegativeLogLikelihoodLoss: shapes, reduction, ignore_index and weights") {
  SUBCASE("mean by default: a scalar over the [2,3,4] input viewed as [2,3,4]") {
    auto imported = import_loss(loss_model("NegativeLogLikelihoodLoss", {"x", "y"}, {"z"}));
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    CHECK(imported->graph.value(imported->outputs[0].value).type.shape.empty());
    const ir::Op& op = nll_op(*imported);
    CHECK(op.attrs<ir::NllLossAttrs>().reduction == LossReduction::kMean);
    CHECK(!op.attrs<ir::NllLossAttrs>().ignore_index.has_value());
    CHECK(op.inputs.size() == 2);
  }
  SUBCASE("none keeps the target's shape; ignore_index and weights are read") {
    OnnxBuilder b = loss_model("NegativeLogLikelihoodLoss", {"x", "y", "w"}, {"z"}, 22);
    b.floats("w", {3}, {0.5f, 1.0f, 2.0f});
    auto& node = *b.model().mutable_graph()->mutable_node(0);
    OnnxBuilder::string_attr(node, "reduction", "none");
    OnnxBuilder::int_attr(node, "ignore_index", -1);
    auto imported = import_loss(b);
    INFO(imported.status().message());
    REQUIRE(imported.ok());
    CHECK(imported->graph.value(imported->outputs[0].value).type.shape == std::vector<int64_t>{2, 4});
    const ir::Op& op = nll_op(*imported);
    CHECK(op.attrs<ir::NllLossAttrs>().reduction == LossReduction::kNone);
    CHECK(op.attrs<ir::NllLossAttrs>().ignore_index == -1);
    REQUIRE(op.inputs.size() == 3);
    CHECK(imported->graph.value(op.inputs[2]).name == "w");
  }
}

TEST_CASE("SoftmaxCrossEntropyLoss is a log-softmax over the classes, whose result is log_prob") {
  OnnxBuilder b = loss_model("SoftmaxCrossEntropyLoss", {"x", "y"}, {"z", "log_prob"});
  OnnxBuilder::string_attr(*b.model().mutable_graph()->mutable_node(0), "reduction", "sum");
  auto imported = import_loss(b);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  const ir::Op& op = nll_op(*imported);
  CHECK(op.attrs<ir::NllLossAttrs>().reduction == LossReduction::kSum);
  const ir::Op& softmax = producer(*imported, op.inputs[0]);
  CHECK(softmax.kind == ir::OpKind::kAxisSoftmax);
  CHECK(softmax.attrs<ir::SoftmaxAttrs>().kind == format::SoftmaxKind::kLogSoftmax);
  CHECK(imported->graph.value(imported->outputs[1].value).type.shape == std::vector<int64_t>{2, 3, 4});
}

TEST_CASE("loss converters reject what ONNX does not define") {
  SUBCASE("an unknown reduction") {
    OnnxBuilder b = loss_model("NegativeLogLikelihoodLoss", {"x", "y"}, {"z"});
    OnnxBuilder::string_attr(*b.model().mutable_graph()->mutable_node(0), "reduction", "max");
    auto imported = import_loss(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(imported.status().message(),
                   "node 'loss' (NegativeLogLikelihoodLoss): reduction 'max' is not one of none, sum, mean"));
  }
  SUBCASE("float targets") {
    OnnxBuilder b = loss_model("SoftmaxCrossEntropyLoss", {"x", "y"}, {"z"});
    b.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
    auto imported = import_loss(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "target must hold integers (int32 or int64), it holds 'f4'"));
  }
  SUBCASE("targets of the wrong shape") {
    OnnxBuilder b(13);
    b.input("x", {3, 4}, 2).input("y", {3}, 2).output("z");
    b.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT64);
    b.node("NegativeLogLikelihoodLoss", "loss", {"x", "y"}, {"z"});
    auto imported = import_loss(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "target [2,3] must be [2,4] for input [2,3,4]"));
  }
  SUBCASE("weights that are not one per class") {
    OnnxBuilder b = loss_model("NegativeLogLikelihoodLoss", {"x", "y", "w"}, {"z"});
    b.floats("w", {4}, {1, 1, 1, 1});
    auto imported = import_loss(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "weights [4] must have one value per class, [3]"));
  }
}

} // namespace
} // namespace ipu::testing
