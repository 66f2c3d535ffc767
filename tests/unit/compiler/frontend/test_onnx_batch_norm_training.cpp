// ONNX BatchNormalization with training_mode 1 (compiler/frontend/onnx_ops_batch_norm.cpp, docs/onnx.md):
// initializer statistics become running statistics beside a statistics-mode flag, graph-input
// statistics make ONNX's function, and bad attributes and shapes are refused naming the node; the
// BatchStatistics shape rule.
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

StatusOr<frontend::ForwardGraph> import_batch_norm(const OnnxBuilder& b) {
  return import_onnx(b.bytes(), "models/bn.onnx", OnnxImportOptions{2, {}, false, {}});
}

// x [N, 2, 3] → BatchNormalization (training_mode 1) → y; `statistics`: mean and var are
// initializers, else computed values (Identity of initializers) as a graph input's would be.
OnnxBuilder training_batch_norm(bool statistics, float momentum = 0.9f) {
  OnnxBuilder b(15);
  b.input("x", {2, 3}).output("y");
  b.floats("scale", {2}, {1.0f, 2.0f}).floats("bias", {2}, {0.0f, 1.0f});
  b.floats("mean0", {2}, {0.5f, -0.5f}).floats("var0", {2}, {1.0f, 2.0f});
  if (statistics) {
    b.floats("mean", {2}, {0.5f, -0.5f}).floats("var", {2}, {1.0f, 2.0f});
  } else {
    b.node("Identity", "m", {"mean0"}, {"mean"});
    b.node("Identity", "v", {"var0"}, {"var"});
  }
  auto& bn = b.node("BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"}, {"y"});
  OnnxBuilder::int_attr(bn, "training_mode", 1);
  OnnxBuilder::float_attr(bn, "momentum", momentum);
  return b;
}

const ir::Value* value_named(const ir::Graph& g, const std::string& name) {
  for (const ir::Value& v : g.values()) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

TEST_CASE("training-mode BatchNormalization: initializer statistics become running statistics") {
  auto imported = import_batch_norm(training_batch_norm(true));
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  const ir::Graph& g = imported->graph;
  for (const char* name : {"scale", "bias"}) {
    REQUIRE(value_named(g, name) != nullptr);
    CHECK(value_named(g, name)->role == ir::Role::kWeight);
  }
  for (const char* name : {"mean", "var"}) {
    REQUIRE(value_named(g, name) != nullptr);
    CHECK(value_named(g, name)->role == ir::Role::kRunningStatistics);
    CHECK(value_named(g, name)->keeps_float32);
  }
  CHECK(g.values_with_role(ir::Role::kStatisticsMode).size() == 1);
  int statistics = 0, norms = 0;
  for (const ir::Op& op : g.ops()) {
    if (op.kind == ir::OpKind::kBatchStatistics) {
      ++statistics;
      CHECK(op.inputs.size() == 4);
      CHECK(op.attrs<ir::BatchStatisticsAttrs>().momentum == doctest::Approx(0.9f));
    }
    norms += op.kind == ir::OpKind::kBatchNorm ? 1 : 0;
  }
  CHECK(statistics == 1);
  CHECK(norms == 1);
}

TEST_CASE("training-mode BatchNormalization: graph-input statistics make ONNX's function") {
  OnnxBuilder b = training_batch_norm(false);
  // The running outputs too: momentum·input + (1 − momentum)·batch statistic.
  b.model().mutable_graph()->mutable_node(2)->add_output("running_mean");
  b.output("running_mean");
  auto imported = import_batch_norm(b);
  INFO(imported.status().message());
  REQUIRE(imported.ok());
  const ir::Graph& g = imported->graph;
  CHECK(g.values_with_role(ir::Role::kStatisticsMode).empty());
  CHECK(g.values_with_role(ir::Role::kRunningStatistics).empty());
  for (const ir::Op& op : g.ops()) {
    if (op.kind == ir::OpKind::kBatchStatistics) CHECK(op.inputs.size() == 1);
  }
  CHECK(imported->outputs.size() == 2);
}

// Versions 7 and 9 have no training_mode: the running-statistics outputs select it, as torch's
// training export writes at opset 13 (Y, mean, var, saved_mean, saved_var). saved_mean and
// saved_var are the batch's statistics; with only Y the node stays in inference mode.
TEST_CASE("BatchNormalization-9 with its running-statistics outputs is in training mode") {
  auto model = [](bool training_outputs) {
    OnnxBuilder b(13);
    b.input("x", {2, 3}).output("y");
    b.floats("scale", {2}, {1.0f, 2.0f}).floats("bias", {2}, {0.0f, 1.0f});
    b.floats("mean", {2}, {0.5f, -0.5f}).floats("var", {2}, {1.0f, 2.0f});
    std::vector<std::string> outputs = {"y"};
    if (training_outputs) {
      outputs.insert(outputs.end(), {"running_mean", "running_var", "saved_mean", "saved_var"});
      b.output("saved_mean").output("saved_var");
    }
    b.node("BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"}, outputs);
    return b;
  };
  auto training = import_batch_norm(model(true));
  INFO(training.status().message());
  REQUIRE(training.ok());
  const ir::Graph& g = training->graph;
  CHECK(g.values_with_role(ir::Role::kRunningStatistics).size() == 2);
  const ir::Op* statistics = nullptr;
  for (const ir::Op& op : g.ops()) {
    if (op.kind == ir::OpKind::kBatchStatistics) statistics = &op;
  }
  REQUIRE(statistics != nullptr);
  REQUIRE(training->outputs.size() == 3);
  CHECK(training->outputs[1].value == statistics->outputs[0]);
  CHECK(training->outputs[2].value == statistics->outputs[1]);
  auto inference = import_batch_norm(model(false));
  REQUIRE(inference.ok());
  for (const ir::Op& op : inference->graph.ops())
    CHECK(op.kind != ir::OpKind::kBatchStatistics);
}

TEST_CASE("training-mode BatchNormalization: bad attributes and shapes are refused naming the node") {
  SUBCASE("momentum outside [0, 1]") {
    auto imported = import_batch_norm(training_batch_norm(true, 1.5f));
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'bn' (BatchNormalization)"));
    CHECK(contains(imported.status().message(), "momentum 1.5"));
  }
  SUBCASE("training_mode neither 0 nor 1") {
    OnnxBuilder b = training_batch_norm(true);
    b.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(2); // training_mode
    auto imported = import_batch_norm(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'bn' (BatchNormalization)"));
    CHECK(contains(imported.status().message(), "training_mode 2"));
  }
  SUBCASE("statistics of another channel count") {
    OnnxBuilder b(15);
    b.input("x", {2, 3}).output("y");
    b.floats("scale", {2}, {1.0f, 2.0f}).floats("bias", {2}, {0.0f, 1.0f});
    b.floats("mean", {3}, {0.0f, 0.0f, 0.0f}).floats("var", {2}, {1.0f, 1.0f});
    OnnxBuilder::int_attr(b.node("BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"}, {"y"}),
                          "training_mode", 1);
    auto imported = import_batch_norm(b);
    REQUIRE_FALSE(imported.ok());
    CHECK(contains(imported.status().message(), "node 'bn' (BatchNormalization)"));
    CHECK(contains(imported.status().message(), "does not match 2 channels"));
  }
}

TEST_CASE("BatchStatistics: [C] mean and variance of [N, C, ...]; running statistics per channel") {
  ir::Graph g;
  const int x = g.add_value("x", {ir::DType::kFloat32, {4, 3, 5}}, ir::Role::kInput);
  const int flat = g.add_value("flat", {ir::DType::kFloat32, {4}}, ir::Role::kInput);
  const int mean = g.add_value("mean", {ir::DType::kFloat32, {3}}, ir::Role::kRunningStatistics);
  const int wrong = g.add_value("wrong", {ir::DType::kFloat32, {2}}, ir::Role::kRunningStatistics);
  const int flag = g.add_value("flag", {ir::DType::kFloat32, {1}}, ir::Role::kStatisticsMode);
  auto op = g.add_op(ir::OpKind::kBatchStatistics, "s", {x, mean, mean, flag}, ir::BatchStatisticsAttrs{},
                     ir::Phase::kForward);
  REQUIRE(op.ok());
  CHECK(g.value(g.op(*op).outputs[0]).type.shape == std::vector<int64_t>{3});
  CHECK(g.value(g.op(*op).outputs[1]).type.shape == std::vector<int64_t>{3});
  CHECK_FALSE(
      g.add_op(ir::OpKind::kBatchStatistics, "s", {flat}, ir::BatchStatisticsAttrs{}, ir::Phase::kForward)
          .ok());
  CHECK_FALSE(g.add_op(ir::OpKind::kBatchStatistics, "s", {x, wrong, mean, flag}, ir::BatchStatisticsAttrs{},
                       ir::Phase::kForward)
                  .ok());
  CHECK_FALSE(
      g.add_op(ir::OpKind::kBatchStatistics, "s", {x, mean}, ir::BatchStatisticsAttrs{}, ir::Phase::kForward)
          .ok());
  ir::BatchStatisticsAttrs bad;
  bad.momentum = -0.5f;
  CHECK_FALSE(g.add_op(ir::OpKind::kBatchStatistics, "s", {x}, bad, ir::Phase::kForward).ok());
}

} // namespace
} // namespace ipu::testing
