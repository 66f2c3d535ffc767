#include "compiler/ops/tensor_util.h"

#include <algorithm>
#include <cstdlib>

namespace ipu::ops {
using ir::GradContext;
using ir::Op;
using ir::OpKind;

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

namespace {

// Grows regions from the reads of successive output rows: a run continues the last region when
// it is contiguous with it or the next row of its block, a column (a strided row) when it is the
// next column of its block.
class ReadBlocks {
public:
  explicit ReadBlocks(uint32_t tensor) : m_tensor(tensor) {}

  // Elements [first, first + width).
  void add_run(int64_t first, int64_t width) {
    if (m_last == Kind::kRun) {
      lowering::Region& r = m_regions.back();
      const int64_t rows = r.row_end - r.row_begin, r_width = r.col_end - r.col_begin;
      if (rows == 1 && first == r.col_end) {
        r.col_end += width;
        return;
      }
      if (width == r_width) {
        if (rows == 1 && first >= r.col_end) {
          r.row_stride = first - r.col_begin;
          r.row_end = 2;
          return;
        }
        if (rows > 1 && first == r.col_begin + rows * r.row_stride) {
          ++r.row_end;
          return;
        }
      }
    }
    m_regions.push_back(lowering::block_region(m_tensor, 0, 1, first, first + width, 0));
    m_last = Kind::kRun;
  }

  // `count` elements first + k·stride, stride > 1.
  void add_column(int64_t first, int64_t count, int64_t stride) {
    if (m_last == Kind::kColumn) {
      lowering::Region& r = m_regions.back();
      if (r.row_end == count && r.row_stride == stride && first == r.col_end &&
          r.col_end - r.col_begin < stride) {
        ++r.col_end;
        return;
      }
    }
    m_regions.push_back(lowering::block_region(m_tensor, 0, count, first, first + 1, stride));
    m_last = Kind::kColumn;
  }

  size_t size() const { return m_regions.size(); }

  std::vector<lowering::Region> take() { return std::move(m_regions); }

private:
  enum class Kind { kNone, kRun, kColumn };
  uint32_t m_tensor;
  std::vector<lowering::Region> m_regions;
  Kind m_last = Kind::kNone;
};

// Whether distinct indices of `dims` read distinct offsets Σ idx_k·strides_k: true when, the
// axes sorted by |stride|, each stride exceeds the farthest the smaller ones reach (mixed radix).
bool one_to_one(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> axes; // |stride|, size
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] > 1) axes.emplace_back(std::abs(strides[k]), dims[k]);
  }
  std::sort(axes.begin(), axes.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : axes) {
    if (stride <= reach) return false;
    reach += stride * (size - 1);
  }
  return true;
}

} // namespace

std::vector<lowering::Region> strided_read_regions(uint32_t tensor, const std::vector<int64_t>& dims,
                                                   const std::vector<int64_t>& strides, int64_t offset,
                                                   const std::vector<int64_t>& lo,
                                                   const std::vector<int64_t>& hi, int64_t in_elements,
                                                   int64_t begin, int64_t end, size_t max_regions) {
  if (end <= begin) return {};
  const size_t rank = dims.size();
  // The bound: what a read that repeats elements (a broadcast, overlapping windows) or needs too
  // many regions counts instead, as its rows' regions would count elements more than once.
  const auto [lo_offset, hi_offset] = strided_extent(dims, strides, begin, end - 1);
  const int64_t bound_begin = std::clamp<int64_t>(offset + lo_offset, 0, in_elements);
  const int64_t bound_end = std::clamp<int64_t>(offset + hi_offset + 1, bound_begin, in_elements);
  std::vector<lowering::Region> bound;
  if (bound_end > bound_begin) bound.push_back(lowering::flat_region(tensor, bound_begin, bound_end));
  if (!one_to_one(dims, strides)) return bound;

  const int64_t row_length = dims.back(), stride = strides.back();
  ReadBlocks blocks(tensor);
  for (int64_t row = begin / row_length; row * row_length < end && blocks.size() <= max_regions; ++row) {
    int64_t rest = row, base = offset;
    bool inside = true;
    for (size_t k = rank - 1; k-- > 0;) {
      const int64_t i = rest % dims[k];
      rest /= dims[k];
      inside = inside && lo[k] <= i && i < hi[k];
      base += i * strides[k];
    }
    const int64_t k0 = std::max({begin - row * row_length, int64_t{0}, lo.back()});
    const int64_t k1 = std::min({end - row * row_length, row_length, hi.back()});
    if (!inside || k1 <= k0) continue; // fill only
    if (stride == 1) {
      blocks.add_run(base + k0, k1 - k0);
    } else if (stride > 0) {
      blocks.add_column(base + k0 * stride, k1 - k0, stride);
    } else if (stride == -1) { // a reversed row, from its lowest element
      blocks.add_run(base + (k1 - 1) * stride, k1 - k0);
    } else {
      blocks.add_column(base + (k1 - 1) * stride, k1 - k0, -stride);
    }
  }
  if (blocks.size() > max_regions) return bound;
  return blocks.take();
}

std::vector<lowering::Region> reduction_read_regions(uint32_t tensor, const InputAccess& access,
                                                     int64_t in_elements, int64_t begin, int64_t end) {
  if (end <= begin) return {};
  // The reduced axes as one: size-1 axes dropped, an axis continuing the next one's stride merged.
  int64_t count = 1, stride = 0;
  bool one_axis = true;
  for (size_t k = access.reduced_dims.size(); k-- > 0;) {
    const int64_t dim = access.reduced_dims[k], step = access.reduced_strides[k];
    if (dim == 1) continue;
    if (count == 1) {
      count = dim, stride = step;
    } else if (step == count * stride) {
      count *= dim;
    } else {
      one_axis = false;
    }
  }
  std::vector<int64_t> lo(access.dims.size(), 0);
  std::vector<lowering::Region> kept =
      strided_read_regions(tensor, access.dims, access.strides, 0, lo, access.dims, in_elements, begin, end,
                           kMaxStridedReadRegions);
  bool exact = one_axis && stride >= 0;
  for (lowering::Region& r : kept) {
    if (count == 1 || !exact) break;
    // A run repeated down the reduced axis: a block, if its rows do not overlap.
    exact = r.row_end - r.row_begin == 1 && r.col_end - r.col_begin <= stride &&
            r.col_begin + (count - 1) * stride + (r.col_end - r.col_begin) <= in_elements;
    if (exact) r = lowering::block_region(tensor, 0, count, r.col_begin, r.col_end, stride);
  }
  if (exact) return kept;
  int64_t span = 0;
  for (size_t k = 0; k < access.reduced_dims.size(); ++k)
    span += (access.reduced_dims[k] - 1) * access.reduced_strides[k];
  const auto [lo_offset, hi_offset] = strided_extent(access.dims, access.strides, begin, end - 1);
  const int64_t first = std::clamp<int64_t>(lo_offset, 0, in_elements);
  const int64_t last = std::clamp<int64_t>(hi_offset + span + 1, first, in_elements);
  if (last <= first) return {};
  return {lowering::flat_region(tensor, first, last)};
}

void emit_spread_sum_of_shares(lowering::LowerContext& ctx, uint32_t partials, uint32_t out, int64_t shares,
                               int64_t elements, uint32_t first_tile, format::ReduceKind kind) {
  const lowering::Split reduce =
      lowering::plan_reduce_of_shares(shares, elements, ctx.target(), ctx.target().tiles_per_ipu);
  emit_sum_of_shares(ctx, partials, out, shares, elements, reduce, first_tile, kind);
}

void emit_sum_of_shares(lowering::LowerContext& ctx, uint32_t partials, uint32_t out, int64_t shares,
                        int64_t elements, const lowering::Split& reduce, uint32_t first_tile,
                        format::ReduceKind kind) {
  const int64_t tiles_per_ipu = ctx.target().tiles_per_ipu;
  const int64_t ipu_base = first_tile - first_tile % tiles_per_ipu, first = first_tile % tiles_per_ipu;
  const double cycles_per_element =
      static_cast<double>(shares) / ctx.target().cycles.partial_sum_flops_per_cycle;
  for (int64_t p = 0; p < reduce.parts; ++p) {
    const int64_t begin = p * reduce.chunk, end = std::min(elements, begin + reduce.chunk);
    lowering::VertexSpec v;
    v.codelet = format::Codelet::kReduce;
    v.operands = {partials, out};
    using R = format::params::Reduce;
    // out_dims [elements] stride 1, reduced dims [shares] stride elements.
    v.params = format::make_params<R>({{R::kKind, static_cast<int64_t>(kind)},
                                       {R::kOutRank, 1},
                                       {R::kReducedRank, 1},
                                       {R::kBegin, begin},
                                       {R::kEnd, end}},
                                      {elements, 1, shares, elements});
    v.compute_cycles = cycles_per_element * static_cast<double>(end - begin);
    v.reads.push_back(lowering::block_region(partials, 0, shares, begin, end, elements));
    v.writes.push_back(lowering::flat_region(out, begin, end));
    ctx.emit_after(static_cast<uint32_t>(ipu_base + (first + p) % tiles_per_ipu), std::move(v));
  }
}

Status check_rank(const ir::TensorType& type) {
  if (static_cast<int64_t>(type.shape.size()) > format::kMaxTensorRank) {
    return unsupported("rank " + std::to_string(type.shape.size()) + " of " + type.to_string() +
                       " exceeds the supported rank " + std::to_string(format::kMaxTensorRank));
  }
  return Status();
}

StatusOr<int> grad_op(GradContext& ctx, const Op& op, OpKind kind, std::vector<int> inputs, ir::OpAttrs attrs,
                      const std::string& suffix) {
  IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(kind, op.name + suffix, std::move(inputs), std::move(attrs),
                                                  ir::Phase::kBackward, op.stage));
  return ctx.graph().op(id).outputs[0];
}

StatusOr<int> grad_unary(GradContext& ctx, const Op& op, format::UnaryKind kind, int x, float alpha,
                         float beta, const std::string& suffix) {
  ir::UnaryAttrs attrs;
  attrs.kind = kind;
  attrs.alpha = alpha;
  attrs.beta = beta;
  return grad_op(ctx, op, OpKind::kUnary, {x}, attrs, suffix);
}

StatusOr<int> grad_binary(GradContext& ctx, const Op& op, format::BinaryKind kind, int a, int b,
                          const std::string& suffix) {
  ir::BinaryAttrs attrs;
  attrs.kind = kind;
  return grad_op(ctx, op, OpKind::kBinary, {a, b}, attrs, suffix);
}

StatusOr<int> unbroadcast(GradContext& ctx, const Op& op, int gradient, std::vector<int64_t> shape,
                          const std::string& suffix) {
  const std::vector<int64_t> full = ctx.graph().value(gradient).type.shape;
  if (full == shape) return gradient;
  ir::ReduceAttrs sum;
  sum.kind = format::ReduceKind::kSum;
  const size_t lead = full.size() - shape.size();
  for (size_t i = 0; i < full.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && full[i] != 1)) sum.axes.push_back(static_cast<int64_t>(i));
  }
  int value = gradient;
  if (!sum.axes.empty()) {
    IPU_ASSIGN_OR_RETURN(value, grad_op(ctx, op, OpKind::kReduce, {gradient}, sum, suffix + "/sum"));
  }
  ir::ReshapeAttrs reshape;
  reshape.shape = shape;
  if (ctx.graph().value(value).type.shape == shape) return value;
  return grad_op(ctx, op, OpKind::kReshape, {value}, reshape, suffix + "/reshape");
}

StatusOr<int> broadcast_to(GradContext& ctx, const Op& op, int value, const std::vector<int64_t>& shape,
                           const std::string& suffix) {
  const std::vector<int64_t>& in = ctx.graph().value(value).type.shape;
  if (in == shape) return value;
  ir::StridedCopyAttrs copy;
  copy.shape = shape;
  copy.strides = ir::broadcast_strides(in, shape);
  return grad_op(ctx, op, OpKind::kStridedCopy, {value}, copy, suffix);
}

} // namespace ipu::ops
