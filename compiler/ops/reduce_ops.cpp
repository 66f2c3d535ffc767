// Reduce (sum, mean, max, min, prod, arg max/min) and the gradient of its product.
#include <algorithm>
#include <cstdint>

#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::Op;
using ir::OpKind;
using ir::ReduceAttrs;
using ir::ReshapeAttrs;
using ir::TensorType;

namespace {

using format::BinaryKind;
using format::ReduceKind;
using format::UnaryKind;
using lowering::LowerContext;

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& in, const std::vector<int64_t>& axes,
                                   bool keep) {
  std::vector<int64_t> out;
  for (size_t k = 0; k < in.size(); ++k) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) != axes.end();
    if (!reduced)
      out.push_back(in[k]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

Status infer_reduce(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  IPU_RETURN_IF_ERROR(check_rank(x));
  const ReduceAttrs& reduce = op.attrs<ReduceAttrs>();
  const auto& axes = reduce.axes;
  const auto kind = static_cast<int64_t>(reduce.kind);
  if (kind < 0 || kind >= format::kReduceKindCount) return invalid_argument("unknown reduce kind");
  if (axes.empty()) return invalid_argument("reduces no axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(x.shape.size()) || (i > 0 && axes[i] <= axes[i - 1])) {
      return invalid_argument("reduced axes must be ascending axes of " + x.to_string());
    }
    if (x.shape[static_cast<size_t>(axes[i])] == 0)
      return unsupported("reducing an empty axis of " + x.to_string());
  }
  if (kind >= static_cast<int64_t>(ReduceKind::kArgMax) && axes.size() != 1) {
    return invalid_argument("an arg reduction takes one axis");
  }
  out.push_back({ir::DType::kFloat32, reduced_shape(x.shape, axes, reduce.keep_dims)});
  return Status();
}

// Max and min: the gradient goes to the elements equal to the result, shared equally among ties
// (the subgradient torch's amax/amin take): dX = (X == Y) · dY / count(X == Y).
StatusOr<int> grad_extremum(ir::GradContext& ctx, const Op& op, int dy_kept, const ReshapeAttrs& kept) {
  const int x = op.inputs[0];
  int y = op.outputs[0];
  if (ctx.graph().value(y).type.shape != kept.shape) {
    IPU_ASSIGN_OR_RETURN(y, grad_op(ctx, op, OpKind::kReshape, {y}, kept, "/grad_result_keepdims"));
  }
  IPU_ASSIGN_OR_RETURN(int hit, grad_binary(ctx, op, BinaryKind::kEqual, x, y, "/grad_argmax_mask"));
  ReduceAttrs count_attrs = op.attrs<ReduceAttrs>();
  count_attrs.kind = ReduceKind::kSum;
  count_attrs.keep_dims = true;
  IPU_ASSIGN_OR_RETURN(int count, grad_op(ctx, op, OpKind::kReduce, {hit}, count_attrs, "/grad_ties"));
  IPU_ASSIGN_OR_RETURN(int share, grad_binary(ctx, op, BinaryKind::kDiv, dy_kept, count, "/grad_share"));
  return grad_binary(ctx, op, BinaryKind::kMul, hit, share, "/grad");
}

// Product: dX = dY · Π of the other elements of X's reduced group. X is transposed so that each
// group is a row of [rows, n] (unless the reduced axes are last already), ReduceProdGrad takes
// the products of the others without dividing by X (exact with zeros), and the rows go back to
// X's layout.
StatusOr<int> grad_product(ir::GradContext& ctx, const Op& op, int dy) {
  const int x = op.inputs[0];
  const std::vector<int64_t> in = ctx.graph().value(x).type.shape;
  const std::vector<int64_t>& axes = op.attrs<ReduceAttrs>().axes;
  std::vector<int64_t> order; // X's axes as the rows hold them: the kept ones, then the reduced
  for (size_t k = 0; k < in.size(); ++k) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) == axes.end())
      order.push_back(static_cast<int64_t>(k));
  }
  order.insert(order.end(), axes.begin(), axes.end());
  const std::vector<int64_t> strides = ir::row_major_strides(in);
  ir::StridedCopyAttrs to_rows;
  int64_t n = 1;
  for (int64_t a : order) {
    to_rows.shape.push_back(in[static_cast<size_t>(a)]);
    to_rows.strides.push_back(strides[static_cast<size_t>(a)]);
  }
  for (int64_t a : axes)
    n *= in[static_cast<size_t>(a)];
  const int64_t rows = ctx.graph().value(x).type.elements() / n;
  const bool in_place = std::is_sorted(order.begin(), order.end()); // the reduced axes are last
  int grouped = x;
  if (!in_place) {
    IPU_ASSIGN_OR_RETURN(grouped, grad_op(ctx, op, OpKind::kStridedCopy, {x}, to_rows, "/grad_rows"));
  }
  ReshapeAttrs matrix, column;
  matrix.shape = {rows, n};
  column.shape = {rows};
  IPU_ASSIGN_OR_RETURN(grouped, grad_op(ctx, op, OpKind::kReshape, {grouped}, matrix, "/grad_rows_2d"));
  IPU_ASSIGN_OR_RETURN(int per_row, grad_op(ctx, op, OpKind::kReshape, {dy}, column, "/grad_per_row"));
  IPU_ASSIGN_OR_RETURN(int others,
                       grad_op(ctx, op, OpKind::kReduceProdGrad, {grouped, per_row}, {}, "/grad_others"));
  if (in_place) return grad_op(ctx, op, OpKind::kReshape, {others}, ReshapeAttrs{in}, "/grad");
  ir::StridedCopyAttrs as_x;
  as_x.shape = in;
  // Back to X's layout: X's axis order[m] is the rows' axis m.
  ReshapeAttrs as_rows;
  as_rows.shape = to_rows.shape;
  IPU_ASSIGN_OR_RETURN(others, grad_op(ctx, op, OpKind::kReshape, {others}, as_rows, "/grad_rows_nd"));
  const std::vector<int64_t> row_strides = ir::row_major_strides(to_rows.shape);
  as_x.strides.resize(in.size());
  for (size_t m = 0; m < order.size(); ++m)
    as_x.strides[static_cast<size_t>(order[m])] = row_strides[m];
  return grad_op(ctx, op, OpKind::kStridedCopy, {others}, as_x, "/grad");
}

// Sum: dX = dY broadcast over the reduced axes; mean: the same divided by the count; max and
// min: grad_extremum; product: grad_product. Arg reductions are piecewise constant: no gradient
// flows (as through comparisons).
Status grad_reduce(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  const ReduceKind kind = op.attrs<ReduceAttrs>().kind;
  const bool arg = kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin ||
                   kind == ReduceKind::kArgMaxLast || kind == ReduceKind::kArgMinLast;
  if (dy < 0 || !ctx.needs_gradient(x) || arg) return Status();
  if (kind == ReduceKind::kProd) {
    IPU_ASSIGN_OR_RETURN(int dx, grad_product(ctx, op, dy));
    return ctx.add_gradient(x, dx);
  }
  const bool extremum = kind == ReduceKind::kMax || kind == ReduceKind::kMin;
  const std::vector<int64_t> in = ctx.graph().value(x).type.shape;
  ReshapeAttrs kept;
  kept.shape = reduced_shape(in, op.attrs<ReduceAttrs>().axes, true);
  int g = dy;
  if (ctx.graph().value(dy).type.shape != kept.shape) {
    IPU_ASSIGN_OR_RETURN(g, grad_op(ctx, op, OpKind::kReshape, {dy}, kept, "/grad_keepdims"));
  }
  if (extremum) {
    IPU_ASSIGN_OR_RETURN(int dx, grad_extremum(ctx, op, g, kept));
    return ctx.add_gradient(x, dx);
  }
  IPU_ASSIGN_OR_RETURN(int dx, broadcast_to(ctx, op, g, in, "/grad"));
  if (kind == ReduceKind::kMean) {
    int64_t count = 1;
    for (int64_t a : op.attrs<ReduceAttrs>().axes)
      count *= in[static_cast<size_t>(a)];
    IPU_ASSIGN_OR_RETURN(
        dx, grad_unary(ctx, op, UnaryKind::kAffine, dx, 1.0f / static_cast<float>(count), 0, "/grad_mean"));
  }
  return ctx.add_gradient(x, dx);
}

Status lower_reduce(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t>& in = ctx.graph().value(op.inputs[0]).type.shape;
  const std::vector<int64_t> strides = ir::row_major_strides(in);
  const ReduceAttrs& reduce = op.attrs<ReduceAttrs>();
  std::vector<int64_t> out_dims, out_strides, red_dims, red_strides;
  int64_t count = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const bool reduced =
        std::find(reduce.axes.begin(), reduce.axes.end(), static_cast<int64_t>(k)) != reduce.axes.end();
    (reduced ? red_dims : out_dims).push_back(in[k]);
    (reduced ? red_strides : out_strides).push_back(strides[k]);
    if (reduced) count *= in[k];
  }
  if (out_dims.empty()) out_dims = {1}, out_strides = {0};
  std::vector<int64_t> tail = out_dims;
  for (const auto* list : {&out_strides, &red_dims, &red_strides})
    tail.insert(tail.end(), list->begin(), list->end());
  const double per = static_cast<double>(count) / ctx.target().cycles.vector_flops_per_cycle;
  auto params = [&](int64_t begin, int64_t end) {
    using P = format::params::Reduce;
    return format::make_params<P>({{P::kKind, static_cast<int64_t>(reduce.kind)},
                                   {P::kOutRank, static_cast<int64_t>(out_dims.size())},
                                   {P::kReducedRank, static_cast<int64_t>(red_dims.size())},
                                   {P::kBegin, begin},
                                   {P::kEnd, end}},
                                  tail);
  };
  // Reduced axes before and after a run of kept ones (a batch norm's statistics: axes 0, 2, 3 of
  // NCHW): the input is [outer, kept, inner], and outputs [begin, end) read the block of `outer`
  // rows of their (end − begin)·inner elements, not the span from the first to the last.
  auto is_reduced = [&](size_t k) {
    return std::find(reduce.axes.begin(), reduce.axes.end(), static_cast<int64_t>(k)) != reduce.axes.end();
  };
  size_t first_kept = 0;
  while (first_kept < in.size() && is_reduced(first_kept))
    ++first_kept;
  int64_t outer = 1, kept = 1, inner = 1;
  bool outer_kept_inner = first_kept < in.size();
  for (size_t k = 0; k < in.size(); ++k) {
    if (k < first_kept) {
      outer *= in[k];
    } else if (!is_reduced(k)) {
      outer_kept_inner = outer_kept_inner && inner == 1;
      kept *= in[k];
    } else {
      inner *= in[k];
    }
  }
  if (outer_kept_inner && outer > 1) {
    const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
    lowering::lower_split(
        ctx, kept, per, 4.0 * static_cast<double>(count), [&](uint32_t tile, int64_t begin, int64_t end) {
          lowering::VertexSpec v;
          v.codelet = format::Codelet::kReduce;
          v.operands = {x, y};
          v.params = params(begin, end);
          v.compute_cycles = per * static_cast<double>(end - begin);
          v.reads = {lowering::block_region(x, 0, outer, begin * inner, end * inner, kept * inner)};
          v.writes = {lowering::flat_region(y, begin, end)};
          ctx.emit(tile, std::move(v));
        });
    return Status();
  }
  // Output index → input offset over the kept axes, and every offset of the reduced axes.
  const InputAccess access{out_dims, out_strides, red_dims, red_strides};
  lower_output_range(ctx, op, format::Codelet::kReduce, per, {}, params, {access});
  return Status();
}

// ReduceProdGrad: dX [rows, n] = dY [rows] times the product of the other elements of each row
// of X [rows, n] (grad_product).
Status infer_reduce_prod_grad(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  const TensorType& dy = g.value(op.inputs[1]).type;
  if (x.shape.size() != 2 || dy.shape != std::vector<int64_t>{x.shape[0]}) {
    return invalid_argument("expects X [rows, n] and dY [rows], got " + x.to_string() + " and " +
                            dy.to_string());
  }
  out.push_back(x);
  return Status();
}

Status lower_reduce_prod_grad(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t>& s = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t rows = s[0], n = s[1];
  const uint32_t x = ctx.tensor(op.inputs[0]), dy = ctx.tensor(op.inputs[1]), dx = ctx.tensor(op.outputs[0]);
  const double per_row = 3.0 * static_cast<double>(n) / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_split(
      ctx, rows, per_row, 4.0 * static_cast<double>(n + 1), [&](uint32_t tile, int64_t rb, int64_t re) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kReduceProdGrad;
        v.operands = {x, dy, dx};
        using P = format::params::ReduceProdGrad;
        v.params =
            format::make_params<P>({{P::kRows, rows}, {P::kN, n}, {P::kRowBegin, rb}, {P::kRowEnd, re}});
        v.compute_cycles = per_row * static_cast<double>(re - rb);
        v.reads = {lowering::flat_region(x, rb * n, re * n), lowering::flat_region(dy, rb, re)};
        v.writes = {lowering::flat_region(dx, rb * n, re * n)};
        ctx.emit(tile, std::move(v));
      });
  return Status();
}

} // namespace

const OpDefinition& reduce_op() {
  static const OpDefinition def{{OpKind::kReduce, 1, infer_reduce, grad_reduce}, lower_reduce};
  return def;
}
const OpDefinition& reduce_prod_grad_op() {
  static const OpDefinition def{{OpKind::kReduceProdGrad, 2, infer_reduce_prod_grad, nullptr},
                                lower_reduce_prod_grad};
  return def;
}

} // namespace ipu::ops
