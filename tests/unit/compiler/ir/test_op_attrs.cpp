// Each op carries the attribute family its ops.def line names, read back typed.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace ipu::ir {
namespace {

TEST_CASE("ir::attrs_family is the family ops.def names for each op") {
  CHECK(attrs_family(OpKind::kMatMul) == kAttrsIndex<MatMulAttrs>);
  CHECK(attrs_family(OpKind::kUnary) == kAttrsIndex<UnaryAttrs>);
  CHECK(attrs_family(OpKind::kReduce) == kAttrsIndex<ReduceAttrs>);
  CHECK(attrs_family(OpKind::kMaxPool) == kAttrsIndex<WindowAttrs>);
  CHECK(attrs_family(OpKind::kConvGradWeight) == kAttrsIndex<WindowGradAttrs>);
  CHECK(attrs_family(OpKind::kRelu) == kAttrsIndex<NoAttrs>);
  CHECK(kAttrsIndex<NoAttrs> == 0); // `{}` as an op's attributes means none
}

TEST_CASE("ir::Op::attrs reads the family an op was added with") {
  Graph g;
  const int x = g.add_value("x", {DType::kFloat32, {2, 3}}, Role::kInput);
  ReduceAttrs mean;
  mean.kind = format::ReduceKind::kMean;
  mean.axes = {1};
  mean.keep_dims = true;
  auto reduce = g.add_op(OpKind::kReduce, "mean", {x}, mean, Phase::kForward);
  REQUIRE(reduce.ok());
  const Op& op = g.op(*reduce);
  CHECK(op.attrs<ReduceAttrs>().kind == format::ReduceKind::kMean);
  CHECK(op.attrs<ReduceAttrs>().axes == std::vector<int64_t>{1});
  CHECK(g.value(op.outputs[0]).type.shape == std::vector<int64_t>{2, 1});
  CHECK_FALSE(has_fused_relu(op));

  const int w = g.add_value("w", {DType::kFloat32, {3, 4}}, Role::kWeight);
  MatMulAttrs fused;
  fused.fused_relu = true;
  auto matmul = g.add_op(OpKind::kMatMul, "fc", {x, w}, fused, Phase::kForward);
  REQUIRE(matmul.ok());
  CHECK(has_fused_relu(g.op(*matmul)));
  CHECK(g.to_string().find("= MatMul+Relu(x, w)") != std::string::npos);
}

TEST_CASE("ir::window_of reads the window of a pooling op and of a gradient") {
  Graph g;
  const int x = g.add_value("x", {DType::kFloat32, {1, 1, 4, 4}}, Role::kInput);
  WindowAttrs window;
  window.kernel = {2, 2};
  window.strides = {2, 2};
  auto pool = g.add_op(OpKind::kAveragePool, "pool", {x}, window, Phase::kForward);
  REQUIRE(pool.ok());
  CHECK(window_of(g.op(*pool)).strides == std::array<int64_t, 2>{2, 2});
  WindowGradAttrs grad;
  grad.window = window;
  grad.shape = {1, 1, 4, 4};
  auto pool_grad =
      g.add_op(OpKind::kAveragePoolGrad, "pool/grad", {g.op(*pool).outputs[0]}, grad, Phase::kBackward);
  REQUIRE(pool_grad.ok());
  CHECK(window_of(g.op(*pool_grad)).kernel == std::array<int64_t, 2>{2, 2});
  CHECK(g.value(g.op(*pool_grad).outputs[0]).type.shape == grad.shape);
}

} // namespace
} // namespace ipu::ir
