// ONNX's RNN, GRU and LSTM unrolled at import (compiler/frontend/onnx_ops_recurrent.cpp): the
// outputs' shapes in both layouts, one input projection per direction and one recurrent MatMul per
// step, and bad attributes and shapes refused naming the node. tests/e2e/test_recurrent.sh checks
// the numbers against torch and ONNX's equations.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "tests/unit/compiler/onnx_builder.h"
#include "tests/unit/test_strings.h"

namespace ipu::testing {
namespace {

using frontend::import_onnx;
using frontend::OnnxImportOptions;

constexpr int64_t kSteps = 3, kBatch = 2, kFeatures = 4, kHidden = 5;

std::vector<float> small_weights(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.01f * static_cast<float>(i % 7);
  return v;
}

// X (fixed [T, B, I], or [B, T, I] with layout 1) → OP → Y, Y_h (and Y_c for LSTM).
OnnxBuilder recurrent(const std::string& op, int64_t gates, int64_t directions, bool batch_first = false) {
  OnnxBuilder b(14);
  if (batch_first) {
    b.input("x", {kSteps, kFeatures}, kBatch);
  } else {
    b.input("x", {kBatch, kFeatures}, kSteps);
  }
  std::vector<std::string> outputs = {"y", "y_h"};
  if (op == "LSTM") outputs.emplace_back("y_c");
  for (const auto& o : outputs)
    b.output(o);
  b.floats("w", {directions, gates * kHidden, kFeatures},
           small_weights(static_cast<size_t>(directions * gates * kHidden * kFeatures)));
  b.floats("r", {directions, gates * kHidden, kHidden},
           small_weights(static_cast<size_t>(directions * gates * kHidden * kHidden)));
  auto& node = b.node(op, "cell", {"x", "w", "r"}, outputs);
  OnnxBuilder::int_attr(node, "hidden_size", kHidden);
  if (directions == 2) OnnxBuilder::string_attr(node, "direction", "bidirectional");
  if (batch_first) OnnxBuilder::int_attr(node, "layout", 1);
  return b;
}

StatusOr<frontend::ForwardGraph> import_recurrent(const OnnxBuilder& b) {
  return import_onnx(b.bytes(), "models/rnn.onnx", OnnxImportOptions{kBatch, {}, false, {}});
}

std::vector<int64_t> output_shape_at(const frontend::ForwardGraph& g, size_t index) {
  return g.graph.value(g.outputs[index].value).type.shape;
}

TEST_CASE("RNN, GRU and LSTM: ONNX's output shapes, one recurrent MatMul per step and direction") {
  struct Case {
    std::string op;
    int64_t gates;
  };
  for (const Case& c : {Case{"RNN", 1}, Case{"GRU", 3}, Case{"LSTM", 4}}) {
    for (int64_t directions : {1, 2}) {
      for (bool batch_first : {false, true}) {
        CAPTURE(c.op);
        CAPTURE(directions);
        CAPTURE(batch_first);
        auto imported = import_recurrent(recurrent(c.op, c.gates, directions, batch_first));
        INFO(imported.status().message());
        REQUIRE(imported.ok());
        const std::vector<int64_t> y = batch_first
                                           ? std::vector<int64_t>{kBatch, kSteps, directions, kHidden}
                                           : std::vector<int64_t>{kSteps, directions, kBatch, kHidden};
        const std::vector<int64_t> last = batch_first ? std::vector<int64_t>{kBatch, directions, kHidden}
                                                      : std::vector<int64_t>{directions, kBatch, kHidden};
        CHECK(output_shape_at(*imported, 0) == y);
        CHECK(output_shape_at(*imported, 1) == last);
        if (c.op == "LSTM") CHECK(output_shape_at(*imported, 2) == last);
        int matmuls = 0;
        for (const ir::Op& op : imported->graph.ops())
          matmuls += op.kind == ir::OpKind::kMatMul ? 1 : 0;
        // Per direction: the input projection of every step at once, then h·Rᵀ per step, and
        // GRU's (r ⊙ h)·Rhᵀ (linear_before_reset 0, the default).
        CHECK(matmuls == directions * (1 + kSteps * (c.op == "GRU" ? 2 : 1)));
      }
    }
  }
}

TEST_CASE("recurrent ops: bad attributes and shapes are refused naming the node") {
  SUBCASE("an activation ipucc does not have") {
    OnnxBuilder b = recurrent("RNN", 1, 1);
    auto* a = b.model().mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings("ThresholdedRelu");
    auto imported = import_recurrent(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(imported.status().code() == StatusCode::kUnsupported);
    CHECK(contains(imported.status().message(), "node 'cell' (RNN): activation 'ThresholdedRelu'"));
  }
  SUBCASE("too few activations for two directions") {
    OnnxBuilder b = recurrent("GRU", 3, 2);
    auto* a = b.model().mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    for (const char* name : {"Sigmoid", "Tanh", "Sigmoid"})
      a->add_strings(name);
    auto imported = import_recurrent(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "activations has 3 functions, 4 expected (2 per direction)"));
  }
  SUBCASE("W of another hidden size") {
    OnnxBuilder b(14);
    b.input("x", {kBatch, kFeatures}, kSteps).output("y");
    b.floats("w", {1, 4 * 6, kFeatures}, small_weights(4 * 6 * kFeatures));
    b.floats("r", {1, 4 * kHidden, kHidden}, small_weights(4 * kHidden * kHidden));
    b.node("LSTM", "cell", {"x", "w", "r"}, {"y"});
    auto imported = import_recurrent(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'cell' (LSTM): W [1,24,4] must be [1,20,4]"));
  }
  SUBCASE("hidden_size that R contradicts") {
    OnnxBuilder b = recurrent("GRU", 3, 1);
    b.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(9);
    auto imported = import_recurrent(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "hidden_size 9 does not match R [1,15,5]"));
  }
  SUBCASE("an unknown direction") {
    OnnxBuilder b = recurrent("RNN", 1, 1);
    OnnxBuilder::string_attr(*b.model().mutable_graph()->mutable_node(0), "direction", "sideways");
    auto imported = import_recurrent(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(),
                   "direction 'sideways' is not forward, reverse or bidirectional"));
  }
}

} // namespace
} // namespace ipu::testing
