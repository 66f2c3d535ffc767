// MatMul and BiasAdd: the two halves of a Dense layer.
#include "compiler/ir/op_registry.h"
#include "compiler/lowering/lower_context.h"
#include "compiler/lowering/split_helpers.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::ops {
using ir::Graph;
using ir::MatMulAttrs;
using ir::Op;
using ir::OpKind;
using ir::TensorType;

namespace {

using lowering::LowerContext;

struct MatMulDims {
  int64_t M, N, K;
};

MatMulDims matmul_dims(const Graph& g, const Op& op) {
  const auto& a = g.value(op.inputs[0]).type.shape;
  const auto& b = g.value(op.inputs[1]).type.shape;
  return {op.attrs<MatMulAttrs>().trans_a ? a[1] : a[0], op.attrs<MatMulAttrs>().trans_b ? b[0] : b[1],
          op.attrs<MatMulAttrs>().trans_a ? a[0] : a[1]};
}

// C[M,N] = op(A)[M,K] · op(B)[K,N], both rank 2, float32.
Status infer_matmul(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& a = g.value(op.inputs[0]).type;
  const TensorType& b = g.value(op.inputs[1]).type;
  if (a.shape.size() != 2 || b.shape.size() != 2) {
    return invalid_argument("expects rank-2 operands, got " + a.to_string() + " and " + b.to_string());
  }
  const int64_t k_a = op.attrs<MatMulAttrs>().trans_a ? a.shape[0] : a.shape[1];
  const int64_t k_b = op.attrs<MatMulAttrs>().trans_b ? b.shape[1] : b.shape[0];
  if (k_a != k_b) {
    return invalid_argument("inner dimensions differ: " + a.to_string() + " · " + b.to_string());
  }
  MatMulDims d = matmul_dims(g, op);
  out.push_back({ir::DType::kFloat32, {d.M, d.N}});
  return Status();
}

// C = op(A)·op(B). With op(A) = A: dA = dC·op(B)ᵀ; with op(A) = Aᵀ: dA = op(B)·dCᵀ. With op(B) = B:
// dB = op(A)ᵀ·dC; with op(B) = Bᵀ: dB = dCᵀ·op(A). Each is one MatMul with transpose flags, so
// no transposed copy of a weight is ever made (ONNX Gemm keeps its weights as [out, in]).
Status grad_matmul(ir::GradContext& ctx, const Op& op) {
  Graph& g = ctx.graph();
  const int dc = ctx.gradient_of(op.outputs[0]);
  if (dc < 0) return Status();
  const int a = op.inputs[0], b = op.inputs[1];
  const bool ta = op.attrs<MatMulAttrs>().trans_a, tb = op.attrs<MatMulAttrs>().trans_b;
  auto add_matmul = [&](int lhs, bool trans_lhs, int rhs, bool trans_rhs,
                        const char* suffix) -> StatusOr<int> {
    MatMulAttrs attrs;
    attrs.trans_a = trans_lhs;
    attrs.trans_b = trans_rhs;
    IPU_ASSIGN_OR_RETURN(int id, g.add_op(OpKind::kMatMul, op.name + suffix, {lhs, rhs}, attrs,
                                          ir::Phase::kBackward, op.stage));
    return g.op(id).outputs[0];
  };
  if (ctx.needs_gradient(a)) {
    // !ta: dA = dC·op(B)ᵀ = dC·Bᵀ (tb=0) or dC·B (tb=1); ta: dA = op(B)·dCᵀ = B·dCᵀ or Bᵀ·dCᵀ.
    IPU_ASSIGN_OR_RETURN(int da, ta ? add_matmul(b, tb, dc, true, "/grad_input")
                                    : add_matmul(dc, false, b, !tb, "/grad_input"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(a, da));
  }
  if (ctx.needs_gradient(b)) {
    // !tb: dB = op(A)ᵀ·dC = Aᵀ·dC (ta=0) or A·dC; tb: dB = dCᵀ·op(A) = dCᵀ·A or dCᵀ·Aᵀ.
    IPU_ASSIGN_OR_RETURN(int db, tb ? add_matmul(dc, true, a, ta, "/grad_kernel")
                                    : add_matmul(a, !ta, dc, false, "/grad_kernel"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(b, db));
  }
  return Status();
}

// K split into plan.k.parts shares: each output block's shares run on distinct tiles and write
// partial products to a [shares, M, N] temporary; a reduce compute set right after sums them into
// C (Reduce, adding the shares in order in double precision), each of its vertices summing a
// range of C's elements on a tile that computed partials. A folded bias goes to the first share,
// which adds it to its partial block, so the sum is the biased product without a third step.
Status lower_matmul_split_k(LowerContext& ctx, const Op& op, const MatMulDims& d,
                            const lowering::MatMulPlan& plan) {
  const uint32_t a = ctx.tensor(op.inputs[0]), b = ctx.tensor(op.inputs[1]), c = ctx.tensor(op.outputs[0]);
  const bool has_bias = op.inputs.size() == 3;
  const uint32_t bias = has_bias ? ctx.tensor(op.inputs[2]) : 0;
  const bool ta = op.attrs<MatMulAttrs>().trans_a, tb = op.attrs<MatMulAttrs>().trans_b;
  const lowering::BlockGrid& grid = plan.grid;
  const int64_t shares = plan.k.parts;
  const uint32_t partials = ctx.add_temporary(op.name + "/partials", {shares, d.M, d.N});
  const int64_t vertices = grid.rows.parts * grid.cols.parts * shares;
  std::vector<uint32_t> tiles =
      ctx.awaits_placement(b) ? ctx.take_tiles_for_placement(vertices) : ctx.take_tiles(vertices);
  size_t next = 0;
  for (int64_t j = 0; j < grid.cols.parts; ++j) {
    const int64_t cb = j * grid.cols.chunk, ce = std::min(d.N, cb + grid.cols.chunk);
    for (int64_t i = 0; i < grid.rows.parts; ++i) {
      const int64_t rb = i * grid.rows.chunk, re = std::min(d.M, rb + grid.rows.chunk);
      for (int64_t s = 0; s < shares; ++s) {
        const int64_t kb = s * plan.k.chunk, ke = std::min(d.K, kb + plan.k.chunk);
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kMatMulPartial;
        const bool adds_bias = has_bias && s == 0;
        v.operands =
            adds_bias ? std::vector<uint32_t>{a, b, bias, partials} : std::vector<uint32_t>{a, b, partials};
        using P = format::params::MatMulPartial;
        v.params = format::make_params<P>({{P::kM, d.M},
                                           {P::kN, d.N},
                                           {P::kK, d.K},
                                           {P::kTransA, ta},
                                           {P::kTransB, tb},
                                           {P::kRowBegin, rb},
                                           {P::kRowEnd, re},
                                           {P::kColBegin, cb},
                                           {P::kColEnd, ce},
                                           {P::kKBegin, kb},
                                           {P::kKEnd, ke},
                                           {P::kParts, shares},
                                           {P::kPart, s}});
        v.compute_cycles = lowering::matmul_amp_cycles(ctx.target(), re - rb, ce - cb, ke - kb);
        v.reads.push_back(ta ? lowering::block_region(a, kb, ke, rb, re, d.M)
                             : lowering::block_region(a, rb, re, kb, ke, d.K));
        v.reads.push_back(tb ? lowering::block_region(b, cb, ce, kb, ke, d.K)
                             : lowering::block_region(b, kb, ke, cb, ce, d.N));
        if (i == 0) ctx.place_region(v.reads.back(), tiles[next]);
        if (adds_bias) v.reads.push_back(lowering::flat_region(bias, cb, ce));
        v.writes.push_back(lowering::block_region(partials, s * d.M + rb, s * d.M + re, cb, ce, d.N));
        ctx.emit(tiles[next++], std::move(v));
      }
    }
  }
  ctx.end_placement(b);
  emit_sum_of_shares(ctx, partials, c, shares, d.M * d.N, plan.reduce, tiles.front());
  return Status();
}

Status lower_matmul(LowerContext& ctx, const Op& op) {
  const Graph& g = ctx.graph();
  const MatMulDims d = matmul_dims(g, op);
  const uint32_t a = ctx.tensor(op.inputs[0]), b = ctx.tensor(op.inputs[1]), c = ctx.tensor(op.outputs[0]);
  const bool has_bias = op.inputs.size() == 3; // a BiasAdd folded in (passes/fuse_epilogues.h)
  const uint32_t bias = has_bias ? ctx.tensor(op.inputs[2]) : 0;
  // A fused Relu applies to the whole sum, so such a MatMul keeps K whole (a bias rides with the
  // first K share).
  const lowering::MatMulPlan plan = lowering::plan_matmul(
      d.M, d.N, d.K, ctx.target(), ctx.target().tiles_per_ipu, !op.attrs<MatMulAttrs>().fused_relu);
  if (plan.k.parts > 1) return lower_matmul_split_k(ctx, op, d, plan);
  const lowering::BlockGrid& grid = plan.grid;
  const int64_t vertices = grid.rows.parts * grid.cols.parts;
  std::vector<uint32_t> tiles =
      ctx.awaits_placement(b) ? ctx.take_tiles_for_placement(vertices) : ctx.take_tiles(vertices);
  size_t next = 0;
  // Blocks in any order: the runtime merges them into host tasks along the shorter side of C
  // whatever their order (runtime/engine/coalesce.h).
  for (int64_t j = 0; j < grid.cols.parts; ++j) {
    const int64_t cb = j * grid.cols.chunk, ce = std::min(d.N, cb + grid.cols.chunk);
    for (int64_t i = 0; i < grid.rows.parts; ++i) {
      const int64_t rb = i * grid.rows.chunk, re = std::min(d.M, rb + grid.rows.chunk);
      lowering::VertexSpec v;
      v.codelet = format::Codelet::kMatMul;
      v.operands = has_bias ? std::vector<uint32_t>{a, b, bias, c} : std::vector<uint32_t>{a, b, c};
      using P = format::params::MatMul;
      v.params = format::make_params<P>({{P::kM, d.M},
                                         {P::kN, d.N},
                                         {P::kK, d.K},
                                         {P::kTransA, op.attrs<MatMulAttrs>().trans_a},
                                         {P::kTransB, op.attrs<MatMulAttrs>().trans_b},
                                         {P::kRowBegin, rb},
                                         {P::kRowEnd, re},
                                         {P::kColBegin, cb},
                                         {P::kColEnd, ce},
                                         {P::kAccumulate, 0},
                                         {P::kFusedRelu, 1}});
      // Without a fused Relu the optional flag is left out, as before fusion existed: the same
      // bytes and cache keys for models that do not fuse.
      if (!op.attrs<MatMulAttrs>().fused_relu) v.params.pop_back();
      v.compute_cycles = lowering::matmul_amp_cycles(ctx.target(), re - rb, ce - cb, d.K);
      // op(A) rows [rb, re): rows of A, or columns of a transposed A.
      v.reads.push_back(op.attrs<MatMulAttrs>().trans_a ? lowering::block_region(a, 0, d.K, rb, re, d.M)
                                                        : lowering::block_region(a, rb, re, 0, d.K, d.K));
      v.reads.push_back(op.attrs<MatMulAttrs>().trans_b ? lowering::block_region(b, cb, ce, 0, d.K, d.K)
                                                        : lowering::block_region(b, 0, d.K, cb, ce, d.N));
      // A weight laid out by this MatMul lies where its first row of blocks reads it.
      if (i == 0) ctx.place_region(v.reads.back(), tiles[next]);
      if (has_bias) v.reads.push_back(lowering::flat_region(bias, cb, ce));
      v.writes.push_back(lowering::block_region(c, rb, re, cb, ce, d.N));
      ctx.emit(tiles[next++], std::move(v));
    }
  }
  ctx.end_placement(b);
  return Status();
}

// Y[M,N] = X[M,N] + b[N].
Status infer_bias_add(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  const TensorType& b = g.value(op.inputs[1]).type;
  if (x.shape.size() != 2 || b.shape.size() != 1 || b.shape[0] != x.shape[1]) {
    return invalid_argument("bias " + b.to_string() + " does not match input " + x.to_string());
  }
  out.push_back(x);
  return Status();
}

Status grad_bias_add(ir::GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  if (ctx.needs_gradient(op.inputs[0])) IPU_RETURN_IF_ERROR(ctx.add_gradient(op.inputs[0], dy));
  if (ctx.needs_gradient(op.inputs[1])) {
    IPU_ASSIGN_OR_RETURN(int id, ctx.graph().add_op(OpKind::kColumnSum, op.name + "/grad_bias", {dy}, {},
                                                    ir::Phase::kBackward, op.stage));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(op.inputs[1], ctx.graph().op(id).outputs[0]));
  }
  return Status();
}

Status lower_bias_add(LowerContext& ctx, const Op& op) {
  const auto& shape = ctx.graph().value(op.inputs[0]).type.shape;
  const int64_t M = shape[0], N = shape[1];
  const uint32_t x = ctx.tensor(op.inputs[0]), b = ctx.tensor(op.inputs[1]), y = ctx.tensor(op.outputs[0]);
  const double per_row = static_cast<double>(N) / ctx.target().cycles.vector_flops_per_cycle;
  lowering::lower_where_operands_live(
      ctx, {M, N, per_row, 4.0 * static_cast<double>(N), {x}}, [&](int64_t rb, int64_t re) {
        lowering::VertexSpec v;
        v.codelet = format::Codelet::kBiasAdd;
        v.operands = {x, b, y};
        using P = format::params::BiasAdd;
        v.params = format::make_params<P>({{P::kM, M}, {P::kN, N}, {P::kRowBegin, rb}, {P::kRowEnd, re}});
        v.compute_cycles = per_row * static_cast<double>(re - rb);
        v.reads = {lowering::flat_region(x, rb * N, re * N), lowering::flat_region(b, 0, N)};
        v.writes = {lowering::flat_region(y, rb * N, re * N)};
        return v;
      });
  return Status();
}

} // namespace

const OpDefinition& matmul_op() {
  static const OpDefinition def{{OpKind::kMatMul, 2, infer_matmul, grad_matmul}, lower_matmul};
  return def;
}
const OpDefinition& bias_add_op() {
  static const OpDefinition def{{OpKind::kBiasAdd, 2, infer_bias_add, grad_bias_add}, lower_bias_add};
  return def;
}

} // namespace ipu::ops
