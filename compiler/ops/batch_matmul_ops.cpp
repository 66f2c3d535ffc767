// BatchMatMul: matrix products with numpy-broadcast batch axes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "compiler/lowering/tile_planner.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::Op;
using ir::OpKind;
using ir::TensorType;

namespace {

using lowering::LowerContext;

// BatchMatMul: A [..., M, K] · B [..., K, N] with broadcast batch axes.
struct BatchDims {
  int64_t M, N, K;
  std::vector<int64_t> a_batch, b_batch;
};

BatchDims batch_dims(const ir::Graph& g, const Op& op) {
  const auto& a = g.value(op.inputs[0]).type.shape;
  const auto& b = g.value(op.inputs[1]).type.shape;
  return {
      a[a.size() - 2], b[b.size() - 1], a[a.size() - 1], {a.begin(), a.end() - 2}, {b.begin(), b.end() - 2}};
}

Status infer_batch_matmul(const ir::Graph& g, const Op& op, std::vector<TensorType>& out) {
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
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ir::broadcast_shapes(d.a_batch, d.b_batch));
  shape.push_back(d.M);
  shape.push_back(d.N);
  TensorType y{ir::DType::kFloat32, shape};
  IPU_RETURN_IF_ERROR(check_rank(y));
  out.push_back(y);
  return Status();
}

// `value` [..., R, C] with its last two axes swapped.
StatusOr<int> transpose_last(ir::GradContext& ctx, const Op& op, int value, const std::string& suffix) {
  const std::vector<int64_t> in = ctx.graph().value(value).type.shape;
  ir::StridedCopyAttrs t;
  t.shape = in;
  t.strides = ir::row_major_strides(in);
  const size_t r = in.size();
  std::swap(t.shape[r - 1], t.shape[r - 2]);
  std::swap(t.strides[r - 1], t.strides[r - 2]);
  return grad_op(ctx, op, OpKind::kStridedCopy, {value}, t, suffix);
}

// dA = dC · Bᵀ, dB = Aᵀ · dC, each summed over the batch axes its operand was broadcast along.
Status grad_batch_matmul(ir::GradContext& ctx, const Op& op) {
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
  const ir::Graph& g = ctx.graph();
  BatchDims d = batch_dims(g, op);
  const std::vector<int64_t>& out = g.value(op.outputs[0]).type.shape;
  std::vector<int64_t> batch(out.begin(), out.end() - 2);
  if (batch.empty()) batch = {1};
  std::vector<int64_t> sa = ir::broadcast_strides(d.a_batch, batch),
                       sb = ir::broadcast_strides(d.b_batch, batch);
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

const OpDefinition& batch_matmul_op() {
  static const OpDefinition def{{OpKind::kBatchMatMul, 2, infer_batch_matmul, grad_batch_matmul},
                                lower_batch_matmul};
  return def;
}

} // namespace ipu::ops
