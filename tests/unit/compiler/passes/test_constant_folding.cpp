// Constant folding (passes/constant_folding.h): which values are computed from constants alone,
// the subgraph computing them, and their replacement by constants, with an evaluator standing in
// for the driver's (tests/unit/compiler/driver/test_evaluate_constants.cpp runs the real one).
#include <doctest/doctest.h>

#include "compiler/passes/constant_folding.h"

namespace ipu::passes {
namespace {

using format::BinaryKind;
using format::UnaryKind;

int add_value(ir::Graph& g, const std::string& name, ir::Role role, std::vector<float> initial = {1, 2}) {
  const int v = g.add_value(name, {ir::DType::kFloat32, {2}}, role);
  g.value(v).initial = std::move(initial);
  return v;
}

int unary(ir::Graph& g, const std::string& name, int x, UnaryKind kind = UnaryKind::kNeg) {
  ir::UnaryAttrs attrs;
  attrs.kind = kind;
  const StatusOr<int> op = g.add_op(ir::OpKind::kUnary, name, {x}, attrs, ir::Phase::kForward);
  REQUIRE(op.ok());
  return g.op(*op).outputs[0];
}

int binary(ir::Graph& g, const std::string& name, int a, int b, BinaryKind kind = BinaryKind::kAdd) {
  ir::BinaryAttrs attrs;
  attrs.kind = kind;
  const StatusOr<int> op = g.add_op(ir::OpKind::kBinary, name, {a, b}, attrs, ir::Phase::kForward);
  REQUIRE(op.ok());
  return g.op(*op).outputs[0];
}

// x (input) + neg(c) · ..., where neg(c) and c + c2 are computed from constants alone.
struct Model {
  ir::Graph g;
  int x = -1, w = -1, c = -1, c2 = -1, neg = -1, sum = -1, y = -1, z = -1;
};

Model model() {
  Model m;
  m.x = add_value(m.g, "x", ir::Role::kInput, {});
  m.w = add_value(m.g, "w", ir::Role::kWeight);
  m.c = add_value(m.g, "c", ir::Role::kConstant, {3, -4});
  m.c2 = add_value(m.g, "c2", ir::Role::kConstant, {10, 20});
  m.neg = unary(m.g, "neg", m.c);
  m.sum = binary(m.g, "sum", m.neg, m.c2);
  m.y = binary(m.g, "y", m.x, m.sum);
  m.z = binary(m.g, "z", m.y, m.w);
  return m;
}

TEST_CASE("passes::ConstantValues holds what is computed from constants alone, not from weights") {
  Model m = model();
  ConstantValues constants(m.g);
  CHECK(constants.contains(m.c));
  CHECK(constants.contains(m.neg));
  CHECK(constants.contains(m.sum));
  CHECK_FALSE(constants.contains(m.x));
  CHECK_FALSE(constants.contains(m.w)); // the host writes weights at run time
  CHECK_FALSE(constants.contains(m.y));
  CHECK_FALSE(constants.contains(m.z));
  // Values added later are judged as they come.
  const int from_weight = unary(m.g, "from_weight", m.w);
  const int twice = binary(m.g, "twice", m.sum, m.sum);
  CHECK_FALSE(constants.contains(from_weight));
  CHECK(constants.contains(twice));
}

TEST_CASE("passes::constant_subgraph copies only what the values depend on") {
  Model m = model();
  const StatusOr<ConstantSubgraph> sub = constant_subgraph(m.g, {m.neg});
  REQUIRE(sub.ok());
  REQUIRE(sub->graph.ops().size() == 1);
  CHECK(sub->graph.ops()[0].name == "neg");
  REQUIRE(sub->graph.values().size() == 2); // c and neg: not c2, x or w
  CHECK(sub->graph.value(sub->values[0]).type.shape == std::vector<int64_t>{2});
  CHECK(sub->graph.value(sub->graph.ops()[0].inputs[0]).initial == std::vector<float>{3, -4});

  const StatusOr<ConstantSubgraph> of_sum = constant_subgraph(m.g, {m.sum});
  REQUIRE(of_sum.ok());
  CHECK(of_sum->graph.ops().size() == 2);
  CHECK(of_sum->graph.values().size() == 4);
  CHECK_FALSE(constant_subgraph(m.g, {m.y}).ok()); // x is no constant
}

TEST_CASE("passes::fold_constants replaces the constants the rest reads and removes what computed them") {
  Model m = model();
  std::vector<std::string> asked;
  const ConstantEvaluator evaluate = [&](const ir::Graph& g, const std::vector<int>& outputs) {
    std::vector<std::vector<float>> values;
    for (int v : outputs) {
      asked.push_back(g.value(v).name);
      values.push_back({7, 8});
    }
    return StatusOr<std::vector<std::vector<float>>>(values);
  };
  const StatusOr<FoldedGraph> folded = fold_constants(m.g, {m.x, m.z}, evaluate);
  REQUIRE(folded.ok());
  CHECK(asked == std::vector<std::string>{"sum"}); // only what an op of x and w reads
  CHECK(folded->ops_removed == 2);
  REQUIRE(m.g.ops().size() == 2);
  const ir::Op& y = m.g.ops()[0];
  CHECK(y.name == "y");
  const ir::Value& sum = m.g.value(y.inputs[1]);
  CHECK(sum.role == ir::Role::kConstant);
  CHECK(sum.producer == -1);
  CHECK(sum.initial == std::vector<float>{7, 8});
  // c, c2 and neg are gone; the ids held outside the graph are mapped.
  CHECK(m.g.values().size() == 5);
  for (const ir::Value& v : m.g.values())
    CHECK((v.name != "c" && v.name != "c2" && v.name != "neg"));
  const int z = folded->new_value_id[static_cast<size_t>(m.z)];
  CHECK(m.g.value(z).name == "z");
  CHECK(m.g.value(z).producer == 1);
  CHECK(folded->new_value_id[static_cast<size_t>(m.neg)] == -1);
}

TEST_CASE("passes::fold_constants leaves the graph as it was when the evaluation fails") {
  Model m = model();
  const std::string before = m.g.to_string();
  const ConstantEvaluator failing = [](const ir::Graph&, const std::vector<int>&) {
    return StatusOr<std::vector<std::vector<float>>>(resource_exhausted("does not fit"));
  };
  const StatusOr<FoldedGraph> folded = fold_constants(m.g, {m.x, m.z}, failing);
  REQUIRE_FALSE(folded.ok());
  CHECK(folded.status().message() == "does not fit");
  CHECK(m.g.to_string() == before);
  CHECK(m.g.values().size() == 8);
}

TEST_CASE("passes::evaluate_constant_values refuses integers float32 cannot hold exactly") {
  Model m = model();
  m.g.value(m.c).keeps_float32 = true; // an ONNX integer constant
  m.g.value(m.c).initial = {16777216.0f, 1};
  bool called = false;
  const ConstantEvaluator evaluate = [&](const ir::Graph&, const std::vector<int>& outputs) {
    called = true;
    return StatusOr<std::vector<std::vector<float>>>(std::vector<std::vector<float>>(outputs.size()));
  };
  const auto evaluated = evaluate_constant_values(m.g, {m.neg}, evaluate);
  REQUIRE_FALSE(evaluated.ok());
  CHECK(evaluated.status().message().find("'c', which holds integers beyond 2^24") != std::string::npos);
  CHECK_FALSE(called);
  m.g.value(m.c).initial = {16777215.0f, 1};
  CHECK(evaluate_constant_values(m.g, {m.neg}, evaluate).ok());
}

} // namespace
} // namespace ipu::passes
