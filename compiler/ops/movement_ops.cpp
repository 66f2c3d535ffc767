// Data movement: StridedCopy (Transpose, Slice, Expand, Tile, Pad, Split: any affine view of the
// input, with a fill value outside a box), Concat, Gather and GatherGrad.
#include <algorithm>
#include <optional>

#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::AxisAttrs;
using ir::DType;
using ir::GatherGradAttrs;
using ir::GradContext;
using ir::Graph;
using ir::Op;
using ir::OpKind;
using ir::row_major_strides;
using ir::StridedCopyAttrs;
using ir::TensorType;

namespace {

using lowering::LowerContext;

// The output's dims, strides, lo and hi as the codelet takes them (a scalar is [1]).
struct CopyView {
  std::vector<int64_t> dims, strides, lo, hi;
};

CopyView copy_view(const Op& op) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  CopyView v{attrs.shape, attrs.strides, attrs.lower, attrs.upper};
  if (v.dims.empty()) v = {{1}, {0}, {}, {}};
  if (v.lo.empty()) v.lo.assign(v.dims.size(), 0);
  if (v.hi.empty()) v.hi = v.dims;
  return v;
}

// out[idx] = in[offset + Σ idx_k·strides_k] inside the box [lower, upper), else alpha.
Status infer_strided_copy(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  const TensorType& x = g.value(op.inputs[0]).type;
  const size_t rank = attrs.shape.size();
  if (attrs.strides.size() != rank || (!attrs.lower.empty() && attrs.lower.size() != rank) ||
      attrs.upper.size() != attrs.lower.size()) {
    return invalid_argument("strides and box do not match the output rank");
  }
  TensorType y{DType::kFloat32, attrs.shape};
  IPU_RETURN_IF_ERROR(check_rank(y));
  const CopyView v = copy_view(op);
  int64_t min = attrs.offset, max = attrs.offset;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (v.dims[k] <= 0) return unsupported("empty output " + y.to_string());
    const int64_t first = std::max<int64_t>(v.lo[k], 0), last = std::min(v.hi[k], v.dims[k]) - 1;
    if (first > last) {
      min = max = 0;
      break;
    }
    min += std::min(first * v.strides[k], last * v.strides[k]);
    max += std::max(first * v.strides[k], last * v.strides[k]);
  }
  if (min < 0 || max >= x.elements()) {
    return invalid_argument("the copy reads outside its input " + x.to_string());
  }
  out.push_back(y);
  return Status();
}

// The inverse of a copy that permutes the input's axes (Transpose): output axis k reads input
// axis perm[k] with the input's own stride.
std::optional<std::vector<int64_t>> permutation_of(const Op& op, const std::vector<int64_t>& in) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  if (attrs.offset != 0 || !attrs.lower.empty() || attrs.shape.size() != in.size()) return std::nullopt;
  const std::vector<int64_t> own = row_major_strides(in);
  std::vector<int64_t> perm(in.size(), -1);
  std::vector<bool> used(in.size(), false);
  for (size_t k = 0; k < in.size(); ++k) {
    for (size_t j = 0; j < in.size(); ++j) {
      if (!used[j] && in[j] == attrs.shape[k] && (own[j] == attrs.strides[k] || in[j] == 1)) {
        perm[k] = static_cast<int64_t>(j);
        used[j] = true;
        break;
      }
    }
    if (perm[k] < 0) return std::nullopt;
  }
  return perm;
}

// The inverse of a slice with steps ±1 (Slice, Split): output axis k reads input axis k from
// start_k forwards or backwards, so dX is dY put back at the slice's place and 0 elsewhere: a
// StridedCopy of dY with a box. The starts come from the offset, which a slice keeps inside the
// input, so its mixed-radix digits are unique.
std::optional<StridedCopyAttrs> slice_inverse(const Op& op, const std::vector<int64_t>& in) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  if (!attrs.lower.empty() || attrs.shape.size() != in.size() || attrs.offset < 0) return std::nullopt;
  const std::vector<int64_t> in_strides = row_major_strides(in);
  const std::vector<int64_t> out_strides = row_major_strides(attrs.shape);
  StridedCopyAttrs back;
  back.shape = in;
  int64_t rest = attrs.offset;
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t start = rest / in_strides[k], n = attrs.shape[k];
    rest %= in_strides[k];
    int64_t sign = 0;
    if (attrs.strides[k] == in_strides[k] || n == 1) sign = 1;
    if (attrs.strides[k] == -in_strides[k] && n > 1) sign = -1;
    if (sign == 0 || start >= in[k]) return std::nullopt;
    // Input index i holds output index sign·(i − start).
    back.strides.push_back(sign * out_strides[k]);
    back.offset -= sign * start * out_strides[k];
    back.lower.push_back(sign > 0 ? start : start - n + 1);
    back.upper.push_back(sign > 0 ? start + n : start + 1);
  }
  return back;
}

// The inverse of a constant Pad (negative pads crop): output index j_k reads input index
// j_k − before_k inside the box [before_k, before_k + in_k), so dX[i] = dY[i + before_k] where that
// is inside dY, else 0: a StridedCopy of dY with a box. Recognised by its exact form: the input's
// own strides, a box of the input's size, and the offset the box's corner implies.
std::optional<StridedCopyAttrs> pad_inverse(const Op& op, const std::vector<int64_t>& in) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  const std::vector<int64_t>& lower = attrs.lower;
  if (lower.empty() || attrs.shape.size() != in.size()) return std::nullopt;
  const std::vector<int64_t> in_strides = row_major_strides(in);
  if (attrs.strides != in_strides) return std::nullopt;
  int64_t corner = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    if (attrs.upper[k] - lower[k] != in[k]) return std::nullopt;
    corner -= lower[k] * in_strides[k];
  }
  if (attrs.offset != corner) return std::nullopt;
  const std::vector<int64_t> out_strides = row_major_strides(attrs.shape);
  StridedCopyAttrs back;
  back.shape = in;
  back.strides = out_strides;
  for (size_t k = 0; k < in.size(); ++k) {
    back.offset += lower[k] * out_strides[k];
    back.lower.push_back(-lower[k]);
    back.upper.push_back(attrs.shape[k] - lower[k]);
  }
  return back;
}

// The axes a copy broadcasts along, if it is a broadcast: every output axis either has stride 0
// (a repeat: Expand, or Tile's repeat axes) or walks the input in its own row-major order, so the
// input's elements appear once along the other axes.
std::optional<std::vector<int64_t>> broadcast_axes_of(const Op& op, const std::vector<int64_t>& in) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  if (attrs.offset != 0 || !attrs.lower.empty()) return std::nullopt;
  std::vector<int64_t> repeated, walked_dims, walked_strides;
  for (size_t k = 0; k < attrs.shape.size(); ++k) {
    if (attrs.strides[k] == 0) {
      repeated.push_back(static_cast<int64_t>(k));
    } else {
      walked_dims.push_back(attrs.shape[k]);
      walked_strides.push_back(attrs.strides[k]);
    }
  }
  int64_t elements = 1, walked = 1;
  for (int64_t d : in)
    elements *= d;
  for (int64_t d : walked_dims)
    walked *= d;
  if (walked != elements || walked_strides != row_major_strides(walked_dims)) return std::nullopt;
  return repeated;
}

// A slice with any steps (Slice with |step| > 1): output index j_k reads input index
// start_k + step_k·j_k. Returns (start, step) per axis; the starts are the offset's mixed-radix
// digits, unique because a slice starts inside its input.
struct AxisWalk {
  int64_t start = 0, step = 1;
};

std::optional<std::vector<AxisWalk>> strided_slice_walks(const Op& op, const std::vector<int64_t>& in) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  if (!attrs.lower.empty() || attrs.shape.size() != in.size() || attrs.offset < 0) return std::nullopt;
  const std::vector<int64_t> in_strides = row_major_strides(in);
  std::vector<AxisWalk> walks(in.size());
  int64_t rest = attrs.offset;
  for (size_t k = 0; k < in.size(); ++k) {
    walks[k].start = rest / in_strides[k];
    rest %= in_strides[k];
    if (attrs.shape[k] > 1) {
      if (attrs.strides[k] == 0 || attrs.strides[k] % in_strides[k] != 0) return std::nullopt;
      walks[k].step = attrs.strides[k] / in_strides[k];
    }
    const int64_t last = walks[k].start + walks[k].step * (attrs.shape[k] - 1);
    if (walks[k].start >= in[k] || last < 0 || last >= in[k]) return std::nullopt;
  }
  return walks;
}

// dX of a strided slice: dY scattered back one axis at a time (GatherGrad by the constant indices
// the slice read along that axis), innermost first; axes read whole and in order need nothing.
StatusOr<int> strided_slice_gradient(GradContext& ctx, const Op& op, int dy, const std::vector<int64_t>& in,
                                     const std::vector<AxisWalk>& walks) {
  Graph& g = ctx.graph();
  int dx = dy;
  std::vector<int64_t> shape = op.attrs<StridedCopyAttrs>().shape;
  for (size_t k = in.size(); k-- > 0;) {
    const int64_t n = shape[k];
    if (n == in[k] && walks[k].start == 0 && (walks[k].step == 1 || n == 1)) continue;
    const int indices = g.add_value(op.name + "/grad_axis" + std::to_string(k) + "_indices",
                                    {DType::kFloat32, {n}}, ir::Role::kConstant);
    g.value(indices).stage = op.stage;
    for (int64_t j = 0; j < n; ++j)
      g.value(indices).initial.push_back(static_cast<float>(walks[k].start + walks[k].step * j));
    shape[k] = in[k];
    GatherGradAttrs attrs;
    attrs.axis = static_cast<int64_t>(k);
    attrs.data_shape = shape;
    IPU_ASSIGN_OR_RETURN(
        dx, grad_op(ctx, op, OpKind::kGatherGrad, {dx, indices}, attrs, "/grad_axis" + std::to_string(k)));
  }
  return dx;
}

// Gradients of the invertible forms: a broadcast (Expand, Tile) sums over its repeat axes; a
// permutation (Transpose) copies back; a slice with steps ±1 or a constant pad puts dY back in
// place with zeros around; a slice with larger steps scatters dY back axis by axis.
Status grad_strided_copy(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  const std::vector<int64_t> in = ctx.graph().value(x).type.shape;
  if (auto repeated = broadcast_axes_of(op, in)) {
    int dx = dy;
    if (!repeated->empty()) {
      ir::ReduceAttrs sum;
      sum.kind = format::ReduceKind::kSum;
      sum.axes = *repeated;
      IPU_ASSIGN_OR_RETURN(dx, grad_op(ctx, op, OpKind::kReduce, {dy}, sum, "/grad_repeats"));
    }
    if (ctx.graph().value(dx).type.shape != in) {
      ir::ReshapeAttrs reshape;
      reshape.shape = in;
      IPU_ASSIGN_OR_RETURN(dx, grad_op(ctx, op, OpKind::kReshape, {dx}, reshape, "/grad"));
    }
    return ctx.add_gradient(x, dx);
  }
  if (auto perm = permutation_of(op, in)) {
    const std::vector<int64_t> dy_strides = row_major_strides(op.attrs<StridedCopyAttrs>().shape);
    StridedCopyAttrs back;
    back.shape = in;
    back.strides.assign(in.size(), 0);
    for (size_t k = 0; k < perm->size(); ++k)
      back.strides[static_cast<size_t>((*perm)[k])] = dy_strides[k];
    IPU_ASSIGN_OR_RETURN(int dx, grad_op(ctx, op, OpKind::kStridedCopy, {dy}, back, "/grad"));
    return ctx.add_gradient(x, dx);
  }
  for (auto back : {slice_inverse(op, in), pad_inverse(op, in)}) {
    if (!back) continue;
    IPU_ASSIGN_OR_RETURN(int dx, grad_op(ctx, op, OpKind::kStridedCopy, {dy}, *back, "/grad"));
    return ctx.add_gradient(x, dx);
  }
  if (auto walks = strided_slice_walks(op, in)) {
    IPU_ASSIGN_OR_RETURN(int dx, strided_slice_gradient(ctx, op, dy, in, *walks));
    return ctx.add_gradient(x, dx);
  }
  return unsupported(
      "training through the strided copy of node '" + op.name +
      "' is not supported: its gradient (neither a broadcast's, a permutation's, a pad's nor a "
      "slice's) is not implemented");
}

// Output ranges per vertex, each reading only the input elements its outputs map to: a slice or a
// window of a long row reads its part, a transpose or a head split its rows and columns, not the
// whole range between them (the exchange moves exactly those, as Poplar's does); the box's fill
// reads nothing. Past kMaxStridedReadRegions regions a vertex reads the range they span.

Status lower_strided_copy(LowerContext& ctx, const Op& op) {
  const StridedCopyAttrs& attrs = op.attrs<StridedCopyAttrs>();
  const CopyView v = copy_view(op);
  std::vector<int64_t> tail = v.dims;
  for (const auto* list : {&v.strides, &v.lo, &v.hi})
    tail.insert(tail.end(), list->begin(), list->end());
  const Graph& g = ctx.graph();
  const int64_t in_elements = g.value(op.inputs[0]).type.elements();
  const uint32_t x = ctx.tensor(op.inputs[0]), y = ctx.tensor(op.outputs[0]);
  lowering::lower_split(
      ctx, g.value(op.outputs[0]).type.elements(), 1.0, 4.0, [&](uint32_t tile, int64_t begin, int64_t end) {
        lowering::VertexSpec vertex;
        vertex.codelet = format::Codelet::kStridedCopy;
        vertex.operands = {x, y};
        using P = format::params::StridedCopy;
        using F = format::fparams::StridedCopy;
        vertex.params = format::make_params<P>({{P::kRank, static_cast<int64_t>(v.dims.size())},
                                                {P::kOffset, attrs.offset},
                                                {P::kBegin, begin},
                                                {P::kEnd, end}},
                                               tail);
        vertex.fparams = format::make_fparams<F>({{F::kFill, attrs.fill}});
        vertex.compute_cycles = static_cast<double>(end - begin);
        vertex.reads = strided_read_regions(x, v.dims, v.strides, attrs.offset, v.lo, v.hi, in_elements,
                                            begin, end, kMaxStridedReadRegions);
        vertex.writes = {lowering::flat_region(y, begin, end)};
        ctx.emit(tile, std::move(vertex));
      });
  return Status();
}

// Concat along its axis (already non-negative).
Status infer_concat(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  if (op.inputs.empty()) return invalid_argument("needs at least one input");
  std::vector<int64_t> shape = g.value(op.inputs[0]).type.shape;
  const int64_t axis = op.attrs<AxisAttrs>().axis;
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) return invalid_argument("axis out of range");
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    const std::vector<int64_t>& s = g.value(op.inputs[i]).type.shape;
    bool match = s.size() == shape.size();
    for (size_t k = 0; match && k < s.size(); ++k)
      match = static_cast<int64_t>(k) == axis || s[k] == shape[k];
    if (!match) {
      return invalid_argument("cannot concatenate " + g.value(op.inputs[i]).type.to_string() + " with " +
                              g.value(op.inputs[0]).type.to_string() + " along axis " + std::to_string(axis));
    }
    shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  out.push_back({DType::kFloat32, shape});
  return Status();
}

// Each input's gradient is its slice of dY.
Status grad_concat(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  const std::vector<int64_t> out = ctx.graph().value(op.outputs[0]).type.shape;
  const std::vector<int64_t> strides = row_major_strides(out);
  int64_t start = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const int x = op.inputs[i];
    const std::vector<int64_t> in = ctx.graph().value(x).type.shape;
    if (ctx.needs_gradient(x)) {
      StridedCopyAttrs slice;
      slice.shape = in;
      slice.strides = strides;
      slice.offset = start * strides[static_cast<size_t>(op.attrs<AxisAttrs>().axis)];
      IPU_ASSIGN_OR_RETURN(int dx,
                           grad_op(ctx, op, OpKind::kStridedCopy, {dy}, slice, "/grad_" + std::to_string(i)));
      IPU_RETURN_IF_ERROR(ctx.add_gradient(x, dx));
    }
    start += in[static_cast<size_t>(op.attrs<AxisAttrs>().axis)];
  }
  return Status();
}

// The regions of Y [rows, y_row] that elements [begin, end) of X [rows, x_row] land in, at column
// y_col: a part of the first row, the whole rows between, a part of the last row.
std::vector<lowering::Region> concat_writes(uint32_t y, int64_t x_row, int64_t y_row, int64_t y_col,
                                            int64_t begin, int64_t end) {
  std::vector<lowering::Region> writes;
  const int64_t first_row = begin / x_row, last_row = (end - 1) / x_row;
  if (first_row == last_row) {
    const int64_t at = first_row * y_row + y_col - first_row * x_row;
    return {lowering::flat_region(y, at + begin, at + end)};
  }
  int64_t whole_begin = first_row, whole_end = last_row + 1;
  if (begin % x_row != 0) {
    writes.push_back(lowering::flat_region(y, first_row * y_row + y_col + begin % x_row,
                                           first_row * y_row + y_col + x_row));
    ++whole_begin;
  }
  const bool last_partial = end % x_row != 0;
  if (last_partial) --whole_end;
  if (whole_begin < whole_end)
    writes.push_back(lowering::block_region(y, whole_begin, whole_end, y_col, y_col + x_row, y_row));
  if (last_partial)
    writes.push_back(
        lowering::flat_region(y, last_row * y_row + y_col, last_row * y_row + y_col + end % x_row));
  return writes;
}

// Each input is copied into its columns of Y, split over its elements (so along every dimension,
// the concat axis included: at batch 1 on the channel axis each input is one row), and placed where
// the input lives when that costs less (lower_where_operands_live), as Poplar's concatenation is a
// view of its inputs where they lie rather than a gathering onto few tiles.
Status lower_concat(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const std::vector<int64_t>& out = g.value(op.outputs[0]).type.shape;
  const size_t axis = static_cast<size_t>(op.attrs<AxisAttrs>().axis);
  int64_t rows = 1, inner = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (k < axis) rows *= out[k];
    if (k > axis) inner *= out[k];
  }
  const int64_t y_row = out[axis] * inner;
  const uint32_t y = ctx.tensor(op.outputs[0]);
  const double cycles_per_element = 1.0 / ctx.target().cycles.vector_flops_per_cycle;
  int64_t col = 0;
  for (int in : op.inputs) {
    const uint32_t x = ctx.tensor(in);
    const int64_t x_row = g.value(in).type.shape[axis] * inner;
    if (x_row == 0) continue; // an empty input contributes nothing
    const lowering::ElementwiseWork work{rows * x_row, 1, cycles_per_element, 4.0, {x}};
    lowering::lower_where_operands_live(ctx, work, [&, x, x_row, col](int64_t begin, int64_t end) {
      lowering::VertexSpec v;
      v.codelet = format::Codelet::kBlockCopy;
      v.operands = {x, y};
      using P = format::params::BlockCopy;
      v.params = format::make_params<P>({{P::kRows, rows},
                                         {P::kXRow, x_row},
                                         {P::kYRow, y_row},
                                         {P::kYCol, col},
                                         {P::kBegin, begin},
                                         {P::kEnd, end}});
      v.compute_cycles = cycles_per_element * static_cast<double>(end - begin);
      v.reads = {lowering::flat_region(x, begin, end)};
      v.writes = concat_writes(y, x_row, y_row, col, begin, end);
      return v;
    });
    col += x_row;
  }
  return Status();
}

// Gather(data, indices) along its axis: data[:axis] + indices.shape + data[axis+1:].
Status infer_gather(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const std::vector<int64_t>& data = g.value(op.inputs[0]).type.shape;
  const std::vector<int64_t>& indices = g.value(op.inputs[1]).type.shape;
  const int64_t axis = op.attrs<AxisAttrs>().axis;
  if (axis < 0 || axis >= static_cast<int64_t>(data.size())) return invalid_argument("axis out of range");
  std::vector<int64_t> shape(data.begin(), data.begin() + axis);
  shape.insert(shape.end(), indices.begin(), indices.end());
  shape.insert(shape.end(), data.begin() + axis + 1, data.end());
  TensorType y{DType::kFloat32, shape};
  IPU_RETURN_IF_ERROR(check_rank(y));
  out.push_back(y);
  return Status();
}

// dData is dY scattered back to the rows the indices read, summed where an index repeats.
Status grad_gather(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int data = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(data)) return Status();
  GatherGradAttrs attrs;
  attrs.axis = op.attrs<AxisAttrs>().axis;
  attrs.data_shape = ctx.graph().value(data).type.shape;
  IPU_ASSIGN_OR_RETURN(int dx, grad_op(ctx, op, OpKind::kGatherGrad, {dy, op.inputs[1]}, attrs, "/grad"));
  return ctx.add_gradient(data, dx);
}

// The data shape (GatherGradAttrs::data_shape) with dY shaped like Gather's output for it.
Status infer_gather_grad(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const std::vector<int64_t>& indices = g.value(op.inputs[1]).type.shape;
  const std::vector<int64_t>& data = op.attrs<GatherGradAttrs>().data_shape;
  const int64_t axis = op.attrs<GatherGradAttrs>().axis;
  if (axis < 0 || axis >= static_cast<int64_t>(data.size())) return invalid_argument("axis out of range");
  std::vector<int64_t> gathered(data.begin(), data.begin() + axis);
  gathered.insert(gathered.end(), indices.begin(), indices.end());
  gathered.insert(gathered.end(), data.begin() + axis + 1, data.end());
  if (g.value(op.inputs[0]).type.shape != gathered) {
    return invalid_argument("the gradient " + g.value(op.inputs[0]).type.to_string() +
                            " is not shaped like a Gather output " +
                            TensorType{DType::kFloat32, gathered}.to_string());
  }
  out.push_back({DType::kFloat32, data});
  return Status();
}

// [outer, n, inner] of data viewed around the gathered axis, and the number of indices.
struct GatherView {
  int64_t outer = 1, n = 0, inner = 1, count = 0;
};

GatherView gather_view(const std::vector<int64_t>& data, int64_t axis, int64_t count) {
  GatherView v;
  for (size_t k = 0; k < data.size(); ++k) {
    if (static_cast<int64_t>(k) < axis) v.outer *= data[k];
    if (static_cast<int64_t>(k) > axis) v.inner *= data[k];
  }
  v.n = data[static_cast<size_t>(axis)];
  v.count = count;
  return v;
}

// Gather and GatherGrad write a [rows, inner] matrix (Y's outer·count rows, or dX's outer·n) in
// blocks of rows × columns, as poplibs' multiSlice plans split the unsliced dimension: a vertex
// owning columns [c0, c1) reads only those columns of the rows it may need (the indices are data,
// so every row its outer slices could name), never the whole table or gradient. A tall table of
// wide rows (an embedding) then spreads by columns, each tile receiving a thin slice of it.
struct GatherBlock {
  int64_t row_begin, row_end, col_begin, col_end;
};

// The output has `rows_per_outer` rows per outer slice; a block reads, of the other operand (X or
// dY, viewed as [outer · read_rows_per_outer, inner]), all `read_rows_per_outer` rows of each
// outer slice it touches, in its columns. cycles_of(rows, cols, outers) is a block's compute.
template <typename CyclesOfBlock>
void lower_gather_blocks(LowerContext& ctx, const Op& op, format::Codelet codelet, const GatherView& v,
                         int64_t rows, int64_t rows_per_outer, int64_t read_rows_per_outer,
                         CyclesOfBlock&& cycles_of) {
  using P = format::params::Gather; // GatherGrad's layout is the same
  static_assert(format::same_layout<P, format::params::GatherGrad>);
  if (rows == 0 || v.inner == 0) return;
  const uint32_t source = ctx.tensor(op.inputs[0]), indices = ctx.tensor(op.inputs[1]),
                 y = ctx.tensor(op.outputs[0]);
  // Outer slices a block of `rows` rows can touch: one more than it fills when unaligned.
  auto outers_spanned = [&](int64_t block_rows) {
    return std::min(v.outer, block_rows / rows_per_outer + 2);
  };
  const lowering::BlockGrid grid = lowering::plan_blocks(
      rows, v.inner, ctx.target(), ctx.target().tiles_per_ipu, [&](int64_t r, int64_t c) {
        const double cols = static_cast<double>(c);
        const double received = 4.0 * (static_cast<double>(outers_spanned(r) * read_rows_per_outer) * cols +
                                       static_cast<double>(v.count));
        // A block of whole rows is one region; one of part-rows, one region per row.
        const double regions = c == v.inner ? 1.0 : static_cast<double>(r);
        return lowering::BlockCost{cycles_of(r, c, outers_spanned(r)), received,
                                   received + 4.0 * static_cast<double>(r) * cols, regions - 1.0};
      });
  const std::vector<uint32_t> tiles = ctx.take_tiles(grid.rows.parts * grid.cols.parts);
  size_t next_tile = 0;
  for (int64_t rb = 0; rb < rows; rb += grid.rows.chunk) {
    const int64_t re = std::min(rows, rb + grid.rows.chunk);
    const int64_t o0 = rb / rows_per_outer, o1 = (re - 1) / rows_per_outer + 1;
    for (int64_t cb = 0; cb < v.inner; cb += grid.cols.chunk) {
      const int64_t ce = std::min(v.inner, cb + grid.cols.chunk);
      lowering::VertexSpec vertex;
      vertex.codelet = codelet;
      vertex.operands = {source, indices, y};
      vertex.params = format::make_params<P>({{P::kOuter, v.outer},
                                              {P::kN, v.n},
                                              {P::kInner, v.inner},
                                              {P::kIndexCount, v.count},
                                              {P::kRowBegin, rb},
                                              {P::kRowEnd, re},
                                              {P::kColBegin, cb},
                                              {P::kColEnd, ce}});
      vertex.compute_cycles = cycles_of(re - rb, ce - cb, o1 - o0);
      vertex.reads = {
          lowering::block_region(source, o0 * read_rows_per_outer, o1 * read_rows_per_outer, cb, ce, v.inner),
          lowering::flat_region(indices, 0, v.count)};
      vertex.writes = {lowering::block_region(y, rb, re, cb, ce, v.inner)};
      ctx.emit(tiles[next_tile++], std::move(vertex));
    }
  }
}

// Two cycles per element of Y, as before the block split (docs/cycle_model.md).
Status lower_gather(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const GatherView v = gather_view(g.value(op.inputs[0]).type.shape, op.attrs<AxisAttrs>().axis,
                                   g.value(op.inputs[1]).type.elements());
  lower_gather_blocks(ctx, op, format::Codelet::kGather, v, v.outer * v.count, v.count, v.n,
                      [](int64_t rows, int64_t cols, int64_t) {
                        return 2.0 * static_cast<double>(rows) * static_cast<double>(cols);
                      });
  return Status();
}

// A block of dX is cleared (a cycle per element), every index of the outer slices it touches is
// compared (a cycle each), and the dY rows that land in the block are added (on average
// count / n per dX row, a cycle per element).
Status lower_gather_grad(LowerContext& ctx, const Op& op) {
  const GatherGradAttrs& attrs = op.attrs<GatherGradAttrs>();
  const GatherView v =
      gather_view(attrs.data_shape, attrs.axis, ctx.graph().value(op.inputs[1]).type.elements());
  const double landing = static_cast<double>(v.count) / static_cast<double>(std::max<int64_t>(v.n, 1));
  lower_gather_blocks(ctx, op, format::Codelet::kGatherGrad, v, v.outer * v.n, v.n, v.count,
                      [&](int64_t rows, int64_t cols, int64_t outers) {
                        const double elements = static_cast<double>(rows) * static_cast<double>(cols);
                        return elements * (1.0 + landing) + static_cast<double>(outers * v.count);
                      });
  return Status();
}

} // namespace

const OpDefinition& strided_copy_op() {
  static const OpDefinition def{{OpKind::kStridedCopy, 1, infer_strided_copy, grad_strided_copy},
                                lower_strided_copy};
  return def;
}
const OpDefinition& concat_op() {
  static const OpDefinition def{{OpKind::kConcat, ir::kVariadic, infer_concat, grad_concat}, lower_concat};
  return def;
}
const OpDefinition& gather_op() {
  static const OpDefinition def{{OpKind::kGather, 2, infer_gather, grad_gather}, lower_gather};
  return def;
}
const OpDefinition& gather_grad_op() {
  static const OpDefinition def{{OpKind::kGatherGrad, 2, infer_gather_grad, nullptr}, lower_gather_grad};
  return def;
}

} // namespace ipu::ops
