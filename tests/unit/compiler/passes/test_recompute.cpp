// Recomputation on one IPU (passes/recompute.h): which forward values stay checkpoints, that the
// recomputed ops read only checkpoints and each other, that the BSP levelling runs each segment's
// recomputation just before its backward, and that the weights it trains are bitwise those
// trained without it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ops/op_table.h"
#include "compiler/passes/recompute.h"
#include "compiler/passes/training.h"
#include "tests/unit/compiler/test_support.h"

namespace ipu::testing {
namespace {

// x [4, 8] → `layers` × (MatMul "m<i>" by an [8, 8] weight, Relu "r<i>") → MatMul "out" [4, 3],
// trained on sparse categorical cross-entropy with SGD.
struct Chain {
  ir::Graph graph;
};

Chain chain(int layers) {
  ir::install_op_table(ops::op_definitions());
  Chain c;
  ir::Graph& g = c.graph;
  int a = g.add_value("x", {ir::DType::kFloat32, {4, 8}}, ir::Role::kInput);
  auto dense = [&](const std::string& name, int in, int64_t units) {
    const int w = g.add_value(name + "/kernel", {ir::DType::kFloat32, {8, units}}, ir::Role::kWeight);
    g.value(w).initial.assign(static_cast<size_t>(8 * units), 0.1f);
    auto op = g.add_op(ir::OpKind::kMatMul, name, {in, w}, ir::MatMulAttrs{}, ir::Phase::kForward);
    REQUIRE(op.ok());
    return g.op(*op).outputs[0];
  };
  for (int i = 0; i < layers; ++i) {
    const int h = dense("m" + std::to_string(i), a, 8);
    auto relu = g.add_op(ir::OpKind::kRelu, "r" + std::to_string(i), {h}, ir::NoAttrs{}, ir::Phase::kForward);
    REQUIRE(relu.ok());
    a = g.op(*relu).outputs[0];
  }
  const int scores = dense("out", a, 3);
  auto loss = passes::add_loss(g, scores, passes::LossConfig{}, {});
  REQUIRE(loss.ok());
  REQUIRE(passes::add_gradients_and_updates(g, loss->loss, passes::OptimizerConfig{}, {}).ok());
  return c;
}

bool is_clone(const ir::Op& op) {
  return op.phase == ir::Phase::kBackward && op.name.ends_with("/recompute");
}

std::vector<std::string> names_of(const ir::Graph& g, const std::vector<int>& values) {
  std::vector<std::string> names;
  for (int v : values)
    names.push_back(g.value(v).name);
  return names;
}

// Every recomputed op reads weights, inputs, checkpoints or other recomputed values, and no backward op
// reads a forward value that is not a checkpoint.
void check_reads(const ir::Graph& g, const passes::RecomputeSummary& summary) {
  const std::set<int> checkpoints(summary.checkpoints.begin(), summary.checkpoints.end());
  for (const ir::Op& op : g.ops()) {
    if (op.phase != ir::Phase::kBackward) continue;
    for (int in : op.inputs) {
      const int producer = g.value(in).producer;
      if (producer < 0 || g.op(producer).phase != ir::Phase::kForward) continue;
      CAPTURE(op.name);
      CAPTURE(g.value(in).name);
      CHECK(checkpoints.contains(in));
    }
  }
}

TEST_CASE("recompute: Chen et al.'s cuts, round(sqrt(n)) segments whose boundaries are the checkpoints") {
  Chain c = chain(8); // 17 forward ops: 4 segments
  auto summary = passes::recompute_forward(c.graph, {});
  REQUIRE(summary.ok());
  CHECK(summary->segments == 4);
  // In a chain the backward keeps one value per cut (r1, r3 and r5 of 17 ops of equal bytes but
  // the last) and the scores, which the loss reads; all else is recomputed.
  CHECK(names_of(c.graph, summary->checkpoints) == std::vector<std::string>{"r1", "r3", "r5", "out"});
  check_reads(c.graph, *summary);
  int clones = 0;
  for (const ir::Op& op : c.graph.ops()) {
    if (!is_clone(op)) continue;
    ++clones;
    CHECK_FALSE(op.after.empty()); // each waits for the gradient reaching its segment
    for (int in : op.inputs) {
      const ir::Value& v = c.graph.value(in);
      CAPTURE(v.name);
      CHECK((v.producer < 0 || is_clone(c.graph.op(v.producer)) ||
             std::count(summary->checkpoints.begin(), summary->checkpoints.end(), in) == 1));
    }
  }
  // The 8 MatMuls and Relus but the three pairs making the kept values.
  CHECK(clones == summary->recomputed_ops);
  CHECK(clones == 16 - 2 * 3);
}

TEST_CASE("recompute: named checkpoints cut after the ops of those names or kinds") {
  Chain by_name = chain(6);
  auto named = passes::recompute_forward(by_name.graph, {{"r1", "r3"}});
  REQUIRE(named.ok());
  CHECK(named->segments == 3);
  CHECK(names_of(by_name.graph, named->checkpoints) == std::vector<std::string>{"r1", "r3", "out"});
  check_reads(by_name.graph, *named);

  // Every MatMul's output kept: only the Relus are recomputed, each from its MatMul's output.
  Chain by_kind = chain(6);
  auto matmuls = passes::recompute_forward(by_kind.graph, {{"MatMul"}});
  REQUIRE(matmuls.ok());
  CHECK(matmuls->recomputed_ops == 6);
  for (const ir::Op& op : by_kind.graph.ops()) {
    if (is_clone(op)) CHECK(op.kind == ir::OpKind::kRelu);
  }
  check_reads(by_kind.graph, *matmuls);

  Chain unknown = chain(2);
  auto refused = passes::recompute_forward(unknown.graph, {{"r1", "Gelu", "nothing"}});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kBadOption);
  CHECK(refused.status().message().find("'Gelu', 'nothing' names no op kind") != std::string::npos);
}

TEST_CASE("recompute: an op that updates state is never run twice, its output is kept") {
  ir::install_op_table(ops::op_definitions());
  ir::Graph g;
  const int x = g.add_value("x", {ir::DType::kFloat32, {4, 8}}, ir::Role::kInput);
  const int state = g.add_value("running", {ir::DType::kFloat32, {4, 8}}, ir::Role::kOptimizerState);
  auto stateful =
      g.add_op(ir::OpKind::kBinary, "stateful", {x, state}, ir::BinaryAttrs{}, ir::Phase::kForward);
  REQUIRE(stateful.ok());
  auto relu =
      g.add_op(ir::OpKind::kRelu, "relu", {g.op(*stateful).outputs[0]}, ir::NoAttrs{}, ir::Phase::kForward);
  REQUIRE(relu.ok());
  CHECK_FALSE(passes::is_recomputable(g, g.op(*stateful)));
  CHECK(passes::is_recomputable(g, g.op(*relu)));
  const int w = g.add_value("w", {ir::DType::kFloat32, {8, 3}}, ir::Role::kWeight);
  g.value(w).initial.assign(24, 0.1f);
  auto out = g.add_op(ir::OpKind::kMatMul, "out", {g.op(*relu).outputs[0], w}, ir::MatMulAttrs{},
                      ir::Phase::kForward);
  REQUIRE(out.ok());
  auto loss = passes::add_loss(g, g.op(*out).outputs[0], passes::LossConfig{}, {});
  REQUIRE(loss.ok());
  REQUIRE(passes::add_gradients_and_updates(g, loss->loss, passes::OptimizerConfig{}, {}).ok());
  // One segment (a cut after the last op is none): the Relu is recomputed, from the stateful op's
  // output, which is kept.
  auto summary = passes::recompute_forward(g, {{"out"}});
  REQUIRE(summary.ok());
  CHECK(summary->segments == 1);
  CHECK(summary->recomputed_ops == 1);
  for (const ir::Op& op : g.ops())
    CHECK(op.name != "stateful/recompute");
  CHECK(std::count(summary->checkpoints.begin(), summary->checkpoints.end(), g.op(*stateful).outputs[0]) ==
        1);
}

// The level of each recomputed op in the backward pass ("backward/0/<level>"), by op name.
std::map<std::string, int> recompute_levels(const format::Executable& exe) {
  std::map<std::string, int> levels;
  for (const format::ComputeSet& cs : exe.compute_sets()) {
    if (!cs.name().starts_with("backward/0/") || cs.name().ends_with("/reduce")) continue;
    for (const std::string& op : cs.ops()) {
      if (op.ends_with("/recompute")) levels[op] = std::stoi(cs.name().substr(11));
    }
  }
  return levels;
}

// Nine Dense layers of 32 units: 9 fused MatMul+Relu ops and the output layer, 10 forward ops in
// 3 segments.
std::string deep_mlp() {
  std::string layers;
  for (int i = 0; i < 9; ++i)
    layers +=
        R"({"name": "d)" + std::to_string(i) + R"(", "type": "Dense", "units": 32, "activation": "relu"},)";
  return R"({"name": "deep", "type": "sequential", "input": {"name": "x", "shape": [16], "dtype": "float32"},
    "layers": [)" +
         layers + R"({"name": "out", "type": "Dense", "units": 4}],
    "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
    "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9}})";
}

TEST_CASE("recompute: the levelling runs a segment's recomputation just before its backward") {
  compiler::CompileOptions options = small_target_options(8);
  options.recompute = true;
  auto compiled = compiler::compile_model(deep_mlp(), options);
  REQUIRE_MESSAGE(compiled.ok(), compiled.status().message());
  const std::map<std::string, int> levels = recompute_levels(compiled->executable);
  // Segments {d0 d1 d2}, {d3 d4 d5}, {d6 d7 d8 out}: d2 and d5 kept, the others recomputed but
  // the output layer's product, which no backward op reads.
  for (const char* op :
       {"d0/matmul/recompute", "d1/matmul/recompute", "d3/matmul/recompute", "d4/matmul/recompute",
        "d6/matmul/recompute", "d7/matmul/recompute", "d8/matmul/recompute"}) {
    CAPTURE(op);
    CHECK(levels.contains(op));
  }
  CHECK(levels.size() == 7);
  // The last segment's first: its backward comes first. Each runs after the later segments' and
  // its first op no sooner than the backward reaches it, not all at level 0.
  CHECK(levels.at("d6/matmul/recompute") > 0);
  CHECK(levels.at("d7/matmul/recompute") < levels.at("d3/matmul/recompute"));
  CHECK(levels.at("d4/matmul/recompute") < levels.at("d0/matmul/recompute"));
  CHECK(compiled->ir_text.find("= MatMul+Relu(d2/relu, d3/kernel, d3/bias) after ") != std::string::npos);
}

// The weights after `steps` SGD steps on fixed data.
std::vector<std::vector<float>> trained_weights(const std::string& spec, bool recompute, int steps) {
  compiler::CompileOptions options = small_target_options(8);
  options.recompute = recompute;
  auto engine = compile_and_load(spec, options);
  std::vector<float> features(8 * 16);
  std::vector<int32_t> labels(8);
  for (size_t i = 0; i < features.size(); ++i)
    features[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>(i % 4);
  for (int s = 0; s < steps; ++s)
    run_step(*engine, "train", features, labels);
  std::vector<std::vector<float>> weights;
  for (const format::Tensor& t : engine->executable().tensors()) {
    if (t.role() == format::WEIGHT) {
      const std::span<float> w = tensor_floats(*engine, t.name());
      weights.emplace_back(w.begin(), w.end());
    }
  }
  return weights;
}

TEST_CASE("recompute: the weights after training are bitwise those without recomputation") {
  const std::vector<std::vector<float>> plain = trained_weights(deep_mlp(), false, 3);
  const std::vector<std::vector<float>> recomputed = trained_weights(deep_mlp(), true, 3);
  REQUIRE(plain.size() == 20);
  CHECK(plain == recomputed);
}

} // namespace
} // namespace ipu::testing
