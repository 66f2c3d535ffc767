#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::ir {
namespace {

int unary(Graph& g, const std::string& name, int input) {
  auto op = g.add_op(OpKind::kUnary, name, {input}, UnaryAttrs{}, Phase::kForward);
  REQUIRE(op.ok());
  return *op;
}

TEST_CASE("ir::Graph::move_ops_to_front renumbers the ops and their outputs' producers") {
  Graph g;
  const int x = g.add_value("x", {DType::kFloat32, {2}}, Role::kInput);
  unary(g, "a", x);
  unary(g, "b", g.op(0).outputs[0]);
  unary(g, "c", x);
  unary(g, "d", x);
  g.move_ops_to_front({3, 2});
  std::vector<std::string> order;
  for (const Op& op : g.ops()) {
    order.push_back(op.name);
    CHECK(op.id == static_cast<int>(order.size()) - 1);
    CHECK(g.value(op.outputs[0]).producer == op.id);
  }
  CHECK(order == std::vector<std::string>{"d", "c", "a", "b"});
  CHECK(g.op(3).inputs[0] == g.op(2).outputs[0]); // b still reads a
}

} // namespace
} // namespace ipu::ir
