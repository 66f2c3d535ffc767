#include "compiler/ops/tensor_util.h"

#include <algorithm>

namespace ipu::ir {

std::pair<int64_t, int64_t> strided_extent(const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& strides, int64_t first, int64_t last) {
  // Whole rows between the two end rows contribute their full span; the end rows recurse: O(rank²).
  std::pair<int64_t, int64_t> bounds{0, 0};
  int64_t base = 0;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    int64_t inner = 1;
    for (size_t k = axis + 1; k < dims.size(); ++k)
      inner *= dims[k];
    const int64_t i_first = first / inner, i_last = last / inner;
    if (i_first == i_last) {
      base += i_first * strides[axis];
      first %= inner;
      last %= inner;
      continue;
    }
    const std::vector<int64_t> rest_dims(dims.begin() + static_cast<long>(axis) + 1, dims.end());
    const std::vector<int64_t> rest_strides(strides.begin() + static_cast<long>(axis) + 1, strides.end());
    const auto shifted = [&](std::pair<int64_t, int64_t> b, int64_t i) {
      return std::pair{base + b.first + i * strides[axis], base + b.second + i * strides[axis]};
    };
    const auto head = shifted(strided_extent(rest_dims, rest_strides, first % inner, inner - 1), i_first);
    const auto tail = shifted(strided_extent(rest_dims, rest_strides, 0, last % inner), i_last);
    bounds = {std::min(head.first, tail.first), std::max(head.second, tail.second)};
    if (i_last - i_first > 1) {
      const auto full = strided_extent(rest_dims, rest_strides, 0, inner - 1);
      for (int64_t i : {i_first + 1, i_last - 1}) {
        const auto row = shifted(full, i);
        bounds = {std::min(bounds.first, row.first), std::max(bounds.second, row.second)};
      }
    }
    return bounds;
  }
  return {base, base};
}

Status check_rank(const TensorType& type) {
  if (static_cast<int64_t>(type.shape.size()) > format::kMaxTensorRank) {
    return unsupported("rank " + std::to_string(type.shape.size()) + " of " + type.to_string() +
                       " exceeds the supported rank " + std::to_string(format::kMaxTensorRank));
  }
  return Status();
}

StatusOr<int> grad_op(GradContext& ctx, const Op& op, OpKind kind, std::vector<int> inputs, OpAttrs attrs,
                      const std::string& suffix) {
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(kind, op.name + suffix, std::move(inputs), std::move(attrs),
                                                  Phase::kBackward, op.stage));
  return ctx.graph().op(id).outputs[0];
}

StatusOr<int> grad_unary(GradContext& ctx, const Op& op, format::UnaryKind kind, int x, float alpha,
                         float beta, const std::string& suffix) {
  UnaryAttrs attrs;
  attrs.kind = kind;
  attrs.alpha = alpha;
  attrs.beta = beta;
  return grad_op(ctx, op, OpKind::kUnary, {x}, attrs, suffix);
}

StatusOr<int> grad_binary(GradContext& ctx, const Op& op, format::BinaryKind kind, int a, int b,
                          const std::string& suffix) {
  BinaryAttrs attrs;
  attrs.kind = kind;
  return grad_op(ctx, op, OpKind::kBinary, {a, b}, attrs, suffix);
}

StatusOr<int> unbroadcast(GradContext& ctx, const Op& op, int gradient, std::vector<int64_t> shape,
                          const std::string& suffix) {
  const std::vector<int64_t> full = ctx.graph().value(gradient).type.shape;
  if (full == shape) return gradient;
  ReduceAttrs sum;
  sum.kind = format::ReduceKind::kSum;
  const size_t lead = full.size() - shape.size();
  for (size_t i = 0; i < full.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && full[i] != 1)) sum.axes.push_back(static_cast<int64_t>(i));
  }
  int value = gradient;
  if (!sum.axes.empty()) {
    IPU_ASSIGN_OR_RETURN(value, grad_op(ctx, op, OpKind::kReduce, {gradient}, sum, suffix + "/sum"));
  }
  ReshapeAttrs reshape;
  reshape.shape = shape;
  if (ctx.graph().value(value).type.shape == shape) return value;
  return grad_op(ctx, op, OpKind::kReshape, {value}, reshape, suffix + "/reshape");
}

StatusOr<int> broadcast_to(GradContext& ctx, const Op& op, int value, const std::vector<int64_t>& shape,
                           const std::string& suffix) {
  const std::vector<int64_t>& in = ctx.graph().value(value).type.shape;
  if (in == shape) return value;
  StridedCopyAttrs copy;
  copy.shape = shape;
  copy.strides = broadcast_strides(in, shape);
  return grad_op(ctx, op, OpKind::kStridedCopy, {value}, copy, suffix);
}

} // namespace ipu::ir
