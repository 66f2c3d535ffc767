// The logits behind a Softmax or Sigmoid output (passes/output_logits.h), which a Keras
// cross-entropy of an ONNX model reads instead of squashing the output twice.
#include <doctest/doctest.h>

#include "compiler/passes/output_logits.h"

namespace ipu::passes {
namespace {

// `op` of x [4, 3] (through reshapes to `through` and back, when given), and its output.
struct Squash {
  ir::Graph graph;
  int x = -1;
  int output = -1;
};

Squash squash(ir::OpKind kind, ir::OpAttrs attrs, const std::vector<int64_t>& through = {}) {
  Squash s;
  s.x = s.graph.add_value("x", ir::TensorType{ir::DType::kFloat32, {4, 3}}, ir::Role::kInput);
  int in = s.x;
  auto add = [&](ir::OpKind k, const std::string& name, int input, ir::OpAttrs a) {
    const StatusOr<int> op = s.graph.add_op(k, name, {input}, std::move(a), ir::Phase::kForward);
    REQUIRE(op.ok());
    return s.graph.op(*op).outputs[0];
  };
  if (!through.empty()) in = add(ir::OpKind::kReshape, "view", in, ir::ReshapeAttrs{through});
  int out = add(kind, "squash", in, std::move(attrs));
  if (!through.empty()) out = add(ir::OpKind::kReshape, "shape", out, ir::ReshapeAttrs{{4, 3}});
  s.output = out;
  return s;
}

TEST_CASE("passes::squashed_output finds the logits a cross-entropy of the output should read") {
  SUBCASE("a Softmax of the rows, under either categorical cross-entropy") {
    const Squash s = squash(ir::OpKind::kSoftmax, ir::NoAttrs{});
    for (LossKind kind : {LossKind::kSparseCategoricalCrossEntropy, LossKind::kCategoricalCrossEntropy}) {
      const auto found = squashed_output(s.graph, s.output, kind);
      REQUIRE(found.has_value());
      CHECK(found->logits == s.x);
      CHECK(found->op == "Softmax");
      CHECK(found->op_name == "squash");
    }
    CHECK_FALSE(squashed_output(s.graph, s.output, LossKind::kBinaryCrossEntropy).has_value());
    CHECK_FALSE(squashed_output(s.graph, s.output, LossKind::kMeanSquaredError).has_value());
  }
  SUBCASE("a softmax over the last axis behind reshapes, not over another axis nor a LogSoftmax") {
    ir::SoftmaxAttrs softmax;
    const Squash last = squash(ir::OpKind::kAxisSoftmax, softmax, {4, 3, 1});
    const auto found = squashed_output(last.graph, last.output, LossKind::kSparseCategoricalCrossEntropy);
    REQUIRE(found.has_value());
    CHECK(found->logits == last.x);
    const Squash across = squash(ir::OpKind::kAxisSoftmax, softmax, {1, 4, 3});
    CHECK_FALSE(squashed_output(across.graph, across.output, LossKind::kSparseCategoricalCrossEntropy));
    softmax.kind = format::SoftmaxKind::kLogSoftmax; // log-probabilities already act as logits
    const Squash log = squash(ir::OpKind::kAxisSoftmax, softmax, {4, 3, 1});
    CHECK_FALSE(squashed_output(log.graph, log.output, LossKind::kSparseCategoricalCrossEntropy));
  }
  SUBCASE("a Sigmoid under binary cross-entropy only") {
    const Squash s = squash(ir::OpKind::kSigmoid, ir::NoAttrs{});
    const auto found = squashed_output(s.graph, s.output, LossKind::kBinaryCrossEntropy);
    REQUIRE(found.has_value());
    CHECK(found->logits == s.x);
    CHECK(found->op == "Sigmoid");
    CHECK_FALSE(squashed_output(s.graph, s.output, LossKind::kSparseCategoricalCrossEntropy));
  }
  SUBCASE("logits are not squashed") {
    const Squash s = squash(ir::OpKind::kRelu, ir::NoAttrs{});
    CHECK_FALSE(squashed_output(s.graph, s.output, LossKind::kSparseCategoricalCrossEntropy));
    CHECK_FALSE(squashed_output(s.graph, s.x, LossKind::kSparseCategoricalCrossEntropy));
  }
}

} // namespace
} // namespace ipu::passes
