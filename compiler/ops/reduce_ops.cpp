// Ops that combine elements along axes: Reduce (sum, mean, max, min, prod, arg max/min) and the
// gradient of its product, AxisSoftmax over the middle axis of [outer, n, inner], and BatchMatMul
// with numpy-broadcast batch axes.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "compiler/lowering/split_helpers.h"
#include "compiler/lowering/tile_planner.h"
#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ir {
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

Status infer_reduce(const Graph& g, const Op& op, std::vector<TensorType>& out) {
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
  out.push_back({DType::kFloat32, reduced_shape(x.shape, axes, reduce.keep_dims)});
  return Status();
}

// Max and min: the gradient goes to the elements equal to the result, shared equally among ties
// (the subgradient torch's amax/amin take): dX = (X == Y) · dY / count(X == Y).
StatusOr<int> grad_extremum(GradContext& ctx, const Op& op, int dy_kept, const ReshapeAttrs& kept) {
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
StatusOr<int> grad_product(GradContext& ctx, const Op& op, int dy) {
  const int x = op.inputs[0];
  const std::vector<int64_t> in = ctx.graph().value(x).type.shape;
  const std::vector<int64_t>& axes = op.attrs<ReduceAttrs>().axes;
  std::vector<int64_t> order; // X's axes as the rows hold them: the kept ones, then the reduced
  for (size_t k = 0; k < in.size(); ++k) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) == axes.end())
      order.push_back(static_cast<int64_t>(k));
  }
  order.insert(order.end(), axes.begin(), axes.end());
  const std::vector<int64_t> strides = row_major_strides(in);
  StridedCopyAttrs to_rows;
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
  StridedCopyAttrs as_x;
  as_x.shape = in;
  // Back to X's layout: X's axis order[m] is the rows' axis m.
  ReshapeAttrs as_rows;
  as_rows.shape = to_rows.shape;
  IPU_ASSIGN_OR_RETURN(others, grad_op(ctx, op, OpKind::kReshape, {others}, as_rows, "/grad_rows_nd"));
  const std::vector<int64_t> row_strides = row_major_strides(to_rows.shape);
  as_x.strides.resize(in.size());
  for (size_t m = 0; m < order.size(); ++m)
    as_x.strides[static_cast<size_t>(order[m])] = row_strides[m];
  return grad_op(ctx, op, OpKind::kStridedCopy, {others}, as_x, "/grad");
}

// Sum: dX = dY broadcast over the reduced axes; mean: the same divided by the count; max and
// min: grad_extremum; product: grad_product. Arg reductions are piecewise constant: no gradient
// flows (as through comparisons).
Status grad_reduce(GradContext& ctx, const Op& op) {
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
  const std::vector<int64_t> strides = row_major_strides(in);
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
Status infer_reduce_prod_grad(const Graph& g, const Op& op, std::vector<TensorType>& out) {
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

// AxisSoftmax: softmax or log-softmax of a [outer, n, inner] input along axis 1 (the ONNX
// converter reshapes any input and axis semantics into this form).
Status infer_axis_softmax(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.shape.size() != 3) return invalid_argument("expects [outer, n, inner], got " + x.to_string());
  if (const auto kind = static_cast<int64_t>(op.attrs<SoftmaxAttrs>().kind);
      kind < 0 || kind >= format::kSoftmaxKindCount) {
    return invalid_argument("unknown softmax kind");
  }
  out.push_back(x);
  return Status();
}

// Softmax: dX = Y ⊙ (dY − Σ dY⊙Y); log-softmax: dX = dY − e^Y ⊙ Σ dY (sums along axis 1).
Status grad_axis_softmax(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0], y = op.outputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  ReduceAttrs sum;
  sum.kind = ReduceKind::kSum;
  sum.axes = {1};
  sum.keep_dims = true;
  int dx = -1;
  if (op.attrs<SoftmaxAttrs>().kind == format::SoftmaxKind::kSoftmax) {
    IPU_ASSIGN_OR_RETURN(int prod, grad_binary(ctx, op, BinaryKind::kMul, dy, y, "/grad_prod"));
    IPU_ASSIGN_OR_RETURN(int dot, grad_op(ctx, op, OpKind::kReduce, {prod}, sum, "/grad_dot"));
    IPU_ASSIGN_OR_RETURN(int diff, grad_binary(ctx, op, BinaryKind::kSub, dy, dot, "/grad_diff"));
    IPU_ASSIGN_OR_RETURN(dx, grad_binary(ctx, op, BinaryKind::kMul, y, diff, "/grad"));
  } else {
    IPU_ASSIGN_OR_RETURN(int total, grad_op(ctx, op, OpKind::kReduce, {dy}, sum, "/grad_sum"));
    IPU_ASSIGN_OR_RETURN(int p, grad_unary(ctx, op, UnaryKind::kExp, y, 0, 0, "/grad_exp"));
    IPU_ASSIGN_OR_RETURN(int scaled, grad_binary(ctx, op, BinaryKind::kMul, p, total, "/grad_scaled"));
    IPU_ASSIGN_OR_RETURN(dx, grad_binary(ctx, op, BinaryKind::kSub, dy, scaled, "/grad"));
  }
  return ctx.add_gradient(x, dx);
}

Status lower_axis_softmax(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t>& s = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t outer = s[0], n = s[1], inner = s[2];
  const auto kind = static_cast<int64_t>(op.attrs<SoftmaxAttrs>().kind);
  const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
  const double per_line = static_cast<double>(n) * softmax_cycles_per_element(ctx.target().cycles);
  // Lines are split by whole outer rows so that each vertex's elements are contiguous.
  const lowering::ElementwiseWork work{
      outer, n * inner, per_line * static_cast<double>(inner), 4.0 * static_cast<double>(n * inner), {x}};
  lowering::lower_where_operands_live(ctx, work, [&](int64_t rb, int64_t re) {
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kAxisSoftmax;
    v.operands = {x, y};
    using P = format::params::AxisSoftmax;
    v.params = format::make_params<P>({{P::kKind, kind},
                                       {P::kOuter, outer},
                                       {P::kN, n},
                                       {P::kInner, inner},
                                       {P::kBegin, rb * inner},
                                       {P::kEnd, re * inner}});
    v.compute_cycles = per_line * static_cast<double>((re - rb) * inner);
    v.reads = {lowering::flat_region(x, rb * n * inner, re * n * inner)};
    v.writes = {lowering::flat_region(y, rb * n * inner, re * n * inner)};
    return v;
  });
  return Status();
}

// BatchMatMul: A [..., M, K] · B [..., K, N] with broadcast batch axes.
struct BatchDims {
  int64_t M, N, K;
  std::vector<int64_t> a_batch, b_batch;
};

BatchDims batch_dims(const Graph& g, const Op& op) {
  const auto& a = g.value(op.inputs[0]).type.shape;
  const auto& b = g.value(op.inputs[1]).type.shape;
  return {
      a[a.size() - 2], b[b.size() - 1], a[a.size() - 1], {a.begin(), a.end() - 2}, {b.begin(), b.end() - 2}};
}

Status infer_batch_matmul(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& a = g.value(op.inputs[0]).type;
  const TensorType& b = g.value(op.inputs[1]).type;
  if (a.shape.size() < 2 || b.shape.size() < 2) {
    return invalid_argument("expects operands of rank 2 or more, got " + a.to_string() + " and " +
                            b.to_string());
  }
  const BatchDims d = batch_dims(g, op);
  if (b.shape[b.shape.size() - 2] != d.K) {
    return invalid_argument("inner dimensions differ: " + a.to_string() + " · " + b.to_string());
  }
  if (d.M == 0 || d.N == 0 || d.K == 0)
    return unsupported("empty matrices " + a.to_string() + " · " + b.to_string());
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, broadcast_shapes(d.a_batch, d.b_batch));
  shape.push_back(d.M);
  shape.push_back(d.N);
  TensorType y{DType::kFloat32, shape};
  IPU_RETURN_IF_ERROR(check_rank(y));
  out.push_back(y);
  return Status();
}

// `value` [..., R, C] with its last two axes swapped.
StatusOr<int> transpose_last(GradContext& ctx, const Op& op, int value, const std::string& suffix) {
  const std::vector<int64_t> in = ctx.graph().value(value).type.shape;
  StridedCopyAttrs t;
  t.shape = in;
  t.strides = row_major_strides(in);
  const size_t r = in.size();
  std::swap(t.shape[r - 1], t.shape[r - 2]);
  std::swap(t.strides[r - 1], t.strides[r - 2]);
  return grad_op(ctx, op, OpKind::kStridedCopy, {value}, t, suffix);
}

// dA = dC · Bᵀ, dB = Aᵀ · dC, each summed over the batch axes its operand was broadcast along.
Status grad_batch_matmul(GradContext& ctx, const Op& op) {
  const int dc = ctx.gradient_of(op.outputs[0]);
  if (dc < 0) return Status();
  const int a = op.inputs[0], b = op.inputs[1];
  if (ctx.needs_gradient(a)) {
    IPU_ASSIGN_OR_RETURN(int bt, transpose_last(ctx, op, b, "/grad_a_bt"));
    IPU_ASSIGN_OR_RETURN(int full, grad_op(ctx, op, OpKind::kBatchMatMul, {dc, bt}, {}, "/grad_a"));
    IPU_ASSIGN_OR_RETURN(int da,
                         unbroadcast(ctx, op, full, ctx.graph().value(a).type.shape, "/grad_a_reduce"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(a, da));
  }
  if (ctx.needs_gradient(b)) {
    IPU_ASSIGN_OR_RETURN(int at, transpose_last(ctx, op, a, "/grad_b_at"));
    IPU_ASSIGN_OR_RETURN(int full, grad_op(ctx, op, OpKind::kBatchMatMul, {at, dc}, {}, "/grad_b"));
    IPU_ASSIGN_OR_RETURN(int db,
                         unbroadcast(ctx, op, full, ctx.graph().value(b).type.shape, "/grad_b_reduce"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(b, db));
  }
  return Status();
}

// The elements of one operand that batches [begin, end) read: from the lowest matrix offset to the
// end of the highest (exact for unbroadcast operands, whose matrices are adjacent; a broadcast
// operand's matrices repeat inside the span).
lowering::Region batch_span(uint32_t tensor, const std::vector<int64_t>& batch,
                            const std::vector<int64_t>& strides, int64_t matrix, int64_t begin, int64_t end) {
  int64_t lowest = INT64_MAX, highest = 0;
  for (int64_t b = begin; b < end; ++b) {
    int64_t offset = 0, rest = b;
    for (size_t k = batch.size(); k-- > 0;) {
      offset += (rest % batch[k]) * strides[k];
      rest /= batch[k];
    }
    lowest = std::min(lowest, offset);
    highest = std::max(highest, offset);
  }
  return lowering::flat_region(tensor, lowest, highest + matrix);
}

// How many equal row blocks each product's M rows split into, and the split of the
// batches × blocks over vertices: the cheapest by plan_split's measure among the divisors of M.
// A vertex receives its rows of A and its batches' whole B, so splitting rows pays when there are
// fewer products than tiles (attention's heads) and stops paying when B dominates.
struct RowBlocks {
  int64_t count = 1;
  lowering::Split split;
};
RowBlocks plan_row_blocks(const BatchDims& d, int64_t batches, size_t batch_rank,
                          const target::TargetSpec& target) {
  RowBlocks best;
  double best_cycles = std::numeric_limits<double>::infinity();
  // The row blocks become a batch axis of their own, within the codelets' rank.
  const int64_t most = static_cast<int64_t>(batch_rank) < format::kMaxTensorRank ? d.M : 1;
  for (int64_t blocks = 1; blocks <= most; ++blocks) {
    if (d.M % blocks != 0) continue;
    const int64_t rows = d.M / blocks, items = batches * blocks;
    const double cycles_per_item = lowering::matmul_amp_cycles(target, rows, d.N, d.K);
    const double bytes_per_item = 4.0 * static_cast<double>(rows * d.K + d.K * d.N);
    const lowering::Split split = lowering::plan_split(items, cycles_per_item, bytes_per_item,
                                                       2 * bytes_per_item, target, target.tiles_per_ipu);
    const double cycles = lowering::split_cycles(split, cycles_per_item, bytes_per_item, target);
    const bool fits =
        static_cast<double>(split.chunk) * 2 * bytes_per_item <= lowering::tile_budget_bytes(target);
    if ((fits || blocks == 1) && cycles < best_cycles * 0.999) {
      best = {blocks, split};
      best_cycles = cycles;
    }
  }
  return best;
}

Status lower_batch_matmul(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  BatchDims d = batch_dims(g, op);
  const std::vector<int64_t>& out = g.value(op.outputs[0]).type.shape;
  std::vector<int64_t> batch(out.begin(), out.end() - 2);
  if (batch.empty()) batch = {1};
  std::vector<int64_t> sa = broadcast_strides(d.a_batch, batch), sb = broadcast_strides(d.b_batch, batch);
  for (int64_t& s : sa)
    s *= d.M * d.K;
  for (int64_t& s : sb)
    s *= d.K * d.N;
  int64_t batches = 1;
  for (int64_t n : batch)
    batches *= n;
  // Row blocks are one more batch axis: A's blocks are rows·K apart, every block of a product
  // reads its whole B (stride 0), and C's blocks stay where the product's rows are.
  const RowBlocks row_blocks = plan_row_blocks(d, batches, batch.size(), ctx.target());
  if (row_blocks.count > 1) {
    d.M /= row_blocks.count;
    batch.push_back(row_blocks.count);
    sa.push_back(d.M * d.K);
    sb.push_back(0);
    batches *= row_blocks.count;
  }
  const uint32_t a = ctx.tensor(op.inputs[0]), b = ctx.tensor(op.inputs[1]), c = ctx.tensor(op.outputs[0]);
  const double per_batch = lowering::matmul_amp_cycles(ctx.target(), d.M, d.N, d.K);
  std::vector<int64_t> tail = batch; // BatchMatMul's tail: dims, then A's and B's strides
  tail.insert(tail.end(), sa.begin(), sa.end());
  tail.insert(tail.end(), sb.begin(), sb.end());
  const lowering::Split split = row_blocks.split;
  std::vector<uint32_t> tiles = ctx.take_tiles(split.parts);
  for (int64_t p = 0; p < split.parts; ++p) {
    const int64_t begin = p * split.chunk, end = std::min(batches, begin + split.chunk);
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kBatchMatMul;
    v.operands = {a, b, c};
    using P = format::params::BatchMatMul;
    v.params = format::make_params<P>({{P::kM, d.M},
                                       {P::kN, d.N},
                                       {P::kK, d.K},
                                       {P::kRank, static_cast<int64_t>(batch.size())},
                                       {P::kBegin, begin},
                                       {P::kEnd, end}},
                                      tail);
    v.compute_cycles = per_batch * static_cast<double>(end - begin);
    // Only the matrices of its own batches travel to the tile: with the whole of A and B on
    // every tile, attention at batch 32 overflows tile memory.
    v.reads = {batch_span(a, batch, sa, d.M * d.K, begin, end),
               batch_span(b, batch, sb, d.K * d.N, begin, end)};
    v.writes = {lowering::flat_region(c, begin * d.M * d.N, end * d.M * d.N)};
    ctx.emit(tiles[static_cast<size_t>(p)], std::move(v));
  }
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
const OpDefinition& axis_softmax_op() {
  static const OpDefinition def{{OpKind::kAxisSoftmax, 1, infer_axis_softmax, grad_axis_softmax},
                                lower_axis_softmax};
  return def;
}
const OpDefinition& batch_matmul_op() {
  static const OpDefinition def{{OpKind::kBatchMatMul, 2, infer_batch_matmul, grad_batch_matmul},
                                lower_batch_matmul};
  return def;
}

} // namespace ipu::ir
