#include "compiler/passes/fuse_layer_norm.h"

#include "compiler/passes/pattern_match.h"

namespace ipu::passes {
namespace {

using format::BinaryKind;

// A mean over the last axis of `x` with keepdims.
bool is_last_axis_mean(const ir::Graph& graph, const ir::Op& op) {
  const auto& shape = graph.value(op.inputs[0]).type.shape;
  if (op.kind != ir::OpKind::kReduce) return false;
  const ir::ReduceAttrs& reduce = op.attrs<ir::ReduceAttrs>();
  return reduce.kind == format::ReduceKind::kMean && reduce.keep_dims && !shape.empty() &&
         reduce.axes == std::vector<int64_t>{static_cast<int64_t>(shape.size()) - 1};
}

struct LayerNormMatch {
  std::vector<int> ops; // in order; the last becomes the LayerNorm
  int x = -1, gamma = -1, beta = -1;
  float epsilon = 0.0f;
};

// The nine ops of a LayerNorm starting at mean op `mean`, or no ops.
LayerNormMatch match_layer_norm(const ir::Graph& graph, const ir::Op& mean, const std::vector<int>& iface) {
  LayerNormMatch m;
  if (!is_last_axis_mean(graph, mean)) return m;
  m.x = mean.inputs[0];
  const ir::TensorType& x = graph.value(m.x).type;
  if (x.dtype != ir::DType::kFloat32) return m;
  auto next = [&](int op, auto&& accept) { // the sole reader of `op`'s output, if it passes `accept`
    const int reader = sole_reader(graph, graph.op(op).outputs[0], mean, iface);
    return reader >= 0 && accept(graph.op(reader)) ? reader : -1;
  };
  const int sub = next(mean.id, [&](const ir::Op& o) {
    return is_binary(o, BinaryKind::kSub) && o.inputs[0] == m.x && o.inputs[1] == mean.outputs[0];
  });
  if (sub < 0) return m;
  // d = x − m feeds the Pow and the Div, and nothing else.
  const int d = graph.op(sub).outputs[0];
  const std::vector<int> readers = graph.consumers(d);
  if (readers.size() != 2 || is_interface(iface, d) || graph.value(d).declared_half) return m;
  // d² as the scalar Pow a constant exponent imports as, or a Pow by a scalar weight of 2.
  auto squares_d = [&](const ir::Op& o) {
    if (o.inputs[0] != d) return false;
    if (is_unary(o, format::UnaryKind::kPowScalar)) return o.attrs<ir::UnaryAttrs>().alpha == 2.0f;
    return is_binary(o, BinaryKind::kPow) && scalar_constant(graph, o.inputs[1]) == 2.0f;
  };
  const int pow = squares_d(graph.op(readers[0])) ? readers[0] : readers[1];
  const int div = pow == readers[0] ? readers[1] : readers[0];
  const ir::Op& p = graph.op(pow);
  if (!squares_d(p) || p.phase != mean.phase || p.stage != mean.stage) return m;
  const int variance = next(pow, [&](const ir::Op& o) { return is_last_axis_mean(graph, o); });
  if (variance < 0) return m;
  const int shifted = next(variance, [&](const ir::Op& o) {
    return is_binary(o, BinaryKind::kAdd) &&
           scalar_constant(graph, other_input(o, graph.op(variance).outputs[0]));
  });
  if (shifted < 0) return m;
  m.epsilon = *scalar_constant(graph, other_input(graph.op(shifted), graph.op(variance).outputs[0]));
  const int sqrt = next(shifted, [&](const ir::Op& o) { return is_unary(o, format::UnaryKind::kSqrt); });
  if (sqrt < 0 || next(sqrt, [&](const ir::Op& o) { return o.id == div; }) < 0) return m;
  if (!is_binary(graph.op(div), BinaryKind::kDiv) || graph.op(div).inputs[0] != d) return m;
  const int64_t n = x.shape.back();
  const int scale = next(div, [&](const ir::Op& o) {
    return is_binary(o, BinaryKind::kMul) &&
           is_row_vector(graph.value(other_input(o, graph.op(div).outputs[0])).type, n);
  });
  if (scale < 0) return m;
  const int shift = next(scale, [&](const ir::Op& o) {
    return is_binary(o, BinaryKind::kAdd) &&
           is_row_vector(graph.value(other_input(o, graph.op(scale).outputs[0])).type, n);
  });
  if (shift < 0 || graph.value(graph.op(shift).outputs[0]).type.shape != x.shape) return m;
  m.gamma = other_input(graph.op(scale), graph.op(div).outputs[0]);
  m.beta = other_input(graph.op(shift), graph.op(scale).outputs[0]);
  m.ops = {mean.id, sub, pow, variance, shifted, sqrt, div, scale, shift};
  return m;
}

} // namespace

int fuse_layer_norm(ir::Graph& graph, const std::vector<int>& interface_values) {
  std::vector<int> removed;
  int fused = 0;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const LayerNormMatch m = match_layer_norm(graph, graph.ops()[i], interface_values);
    if (m.ops.empty()) continue;
    for (size_t k = 0; k + 1 < m.ops.size(); ++k) {
      graph.value(graph.op(m.ops[k]).outputs[0]).producer = -1; // produced and read by nothing now: no tensor
      removed.push_back(m.ops[k]);
    }
    ir::Op& last = graph.op(m.ops.back());
    last.kind = ir::OpKind::kLayerNorm;
    last.inputs = {m.x, m.gamma, m.beta};
    last.attributes = ir::NormAttrs{m.epsilon};
    ++fused;
  }
  graph.remove_ops(removed);
  return fused;
}

} // namespace ipu::passes
