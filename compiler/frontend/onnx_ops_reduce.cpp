// ONNX converters for reductions (Reduce*, ArgMax/ArgMin), Softmax and LogSoftmax over any
// axis, LayerNormalization (written as reductions and broadcasts, so its gradient comes from
// theirs), MatMul with numpy batch broadcasting and Gemm with any alpha, beta and C.
#include <onnx/onnx_pb.h>

#include <algorithm>

#include "compiler/frontend/onnx_tensor_helpers.h"

namespace ipu::frontend {
namespace {

using format::BinaryKind;
using format::ReduceKind;
using format::UnaryKind;

StatusOr<int> add_reduce(OnnxImportContext& ctx, int x, ReduceKind kind, std::vector<int64_t> axes, bool keep,
                         const std::string& suffix = "") {
  ir::ReduceAttrs attrs;
  attrs.kind = kind;
  attrs.axes = std::move(axes);
  attrs.keep_dims = keep;
  return ctx.add_op(ir::OpKind::kReduce, {x}, attrs, suffix);
}

// The axes of a Reduce* node: an attribute before `input_since`, else the optional constant
// input 1. Empty means all axes unless noop_with_empty_axes (then the node is the identity).
template <ReduceKind K, int kInputSince> Status convert_reduce(OnnxImportContext& ctx) {
  const std::string dtype = ctx.input_dtype(0);
  if (K == ReduceKind::kMean && is_integer_dtype(dtype))
    return unsupported("ReduceMean of dtype '" + dtype + "'");
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (ctx.version() < kInputSince) {
    axes = ctx.ints_attr("axes");
  } else if (ctx.has_input(1)) {
    IPU_ASSIGN_OR_RETURN(axes, ctx.int_constant_input(1));
  }
  const bool keep = ctx.int_attr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (ctx.version() >= kInputSince && ctx.int_attr("noop_with_empty_axes", 0) != 0) {
      ctx.set_output(0, x, dtype);
      return Status();
    }
    for (int64_t k = 0; k < rank; ++k)
      axes.push_back(k);
  }
  for (int64_t& a : axes) {
    IPU_ASSIGN_OR_RETURN(a, normalize_axis(a, rank, "axis"));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  IPU_RETURN_IF_ERROR(check_not_empty(in, "input"));
  int y = x;
  if (!axes.empty()) {
    IPU_ASSIGN_OR_RETURN(y, add_reduce(ctx, x, K, axes, keep));
  }
  ctx.set_output(0, y, dtype);
  return Status();
}

// ArgMax / ArgMin along `axis`: int64 indices (as floats on the device).
template <bool kMax> Status convert_arg(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  IPU_ASSIGN_OR_RETURN(int64_t axis,
                       normalize_axis(ctx.int_attr("axis", 0), static_cast<int64_t>(in.size()), "axis"));
  IPU_RETURN_IF_ERROR(check_not_empty(in, "input"));
  const bool last = ctx.int_attr("select_last_index", 0) != 0;
  const ReduceKind kind = kMax ? (last ? ReduceKind::kArgMaxLast : ReduceKind::kArgMax)
                               : (last ? ReduceKind::kArgMinLast : ReduceKind::kArgMin);
  IPU_ASSIGN_OR_RETURN(int y, add_reduce(ctx, x, kind, {axis}, ctx.int_attr("keepdims", 1) != 0));
  ctx.set_output(0, y, "i8");
  return Status();
}

// Softmax / LogSoftmax. Versions 1 and 11 coerce the input to 2-D at `axis` (default 1) and
// normalize over the flattened trailing part; 13 normalizes over the single `axis` (default
// -1). Either is an AxisSoftmax over the middle axis of [outer, n, inner]; a rank-2 softmax
// over the last axis keeps the Softmax op of the Dense models.
template <format::SoftmaxKind K> Status convert_softmax(OnnxImportContext& ctx) {
  if (is_integer_dtype(ctx.input_dtype(0)))
    return unsupported("softmax of dtype '" + ctx.input_dtype(0) + "'");
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size());
  const bool single_axis = ctx.version() >= 13;
  if (rank == 0) return unsupported("softmax of a scalar");
  IPU_ASSIGN_OR_RETURN(int64_t axis,
                       normalize_axis(ctx.int_attr("axis", single_axis ? -1 : 1), rank, "axis"));
  IPU_RETURN_IF_ERROR(check_not_empty(in, "input"));
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = product(in, 0, a);
  const int64_t n = single_axis ? in[a] : product(in, a, in.size());
  const int64_t inner = single_axis ? product(in, a + 1, in.size()) : 1;
  int y = -1;
  if (K == format::SoftmaxKind::kSoftmax && rank == 2 && inner == 1) {
    IPU_ASSIGN_OR_RETURN(y, ctx.add_op(ir::OpKind::kSoftmax, {x}));
  } else {
    IPU_ASSIGN_OR_RETURN(int x3, ctx.reshape(x, {outer, n, inner}, "/view"));
    ir::SoftmaxAttrs attrs;
    attrs.kind = K;
    IPU_ASSIGN_OR_RETURN(int y3, ctx.add_op(ir::OpKind::kAxisSoftmax, {x3}, attrs));
    IPU_ASSIGN_OR_RETURN(y, ctx.reshape(y3, in, "/shape"));
  }
  ctx.set_output(0, y);
  return Status();
}

// LayerNormalization over axes [axis, rank): Y = (X − mean)·(var + ε)^−½·Scale + B, and the
// optional Mean and InvStdDev outputs (shaped with ones on the normalized axes).
// (x − mean) / sqrt(var + epsilon) over `axes` (kept as size 1), with the mean and 1/stddev:
// the part LayerNormalization and InstanceNormalization share.
struct Normalized {
  int y, mean, inv_stddev;
};

StatusOr<Normalized> add_normalize(OnnxImportContext& ctx, int x, const std::vector<int64_t>& axes,
                                   float epsilon) {
  IPU_ASSIGN_OR_RETURN(int mean, add_reduce(ctx, x, ReduceKind::kMean, axes, true, "/mean"));
  IPU_ASSIGN_OR_RETURN(int centered, add_binary(ctx, x, mean, BinaryKind::kSub, "/center"));
  IPU_ASSIGN_OR_RETURN(int square, add_unary(ctx, centered, UnaryKind::kSquare, 0, 0, "/square"));
  IPU_ASSIGN_OR_RETURN(int var, add_reduce(ctx, square, ReduceKind::kMean, axes, true, "/variance"));
  IPU_ASSIGN_OR_RETURN(int shifted, add_unary(ctx, var, UnaryKind::kAffine, 1.0f, epsilon, "/epsilon"));
  IPU_ASSIGN_OR_RETURN(int stddev, add_unary(ctx, shifted, UnaryKind::kSqrt, 0, 0, "/stddev"));
  IPU_ASSIGN_OR_RETURN(int inv, add_unary(ctx, stddev, UnaryKind::kReciprocal, 0, 0, "/inv_stddev"));
  IPU_ASSIGN_OR_RETURN(int y, add_binary(ctx, centered, inv, BinaryKind::kMul, "/normalize"));
  return Normalized{y, mean, inv};
}

Status convert_layer_norm(OnnxImportContext& ctx) {
  if (ctx.int_attr("stash_type", 1) != onnx::TensorProto::FLOAT) {
    return unsupported("stash_type other than FLOAT is not supported");
  }
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(in.size());
  IPU_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.int_attr("axis", -1), rank, "axis"));
  IPU_RETURN_IF_ERROR(check_not_empty(in, "input"));
  std::vector<int64_t> axes;
  for (int64_t k = axis; k < rank; ++k)
    axes.push_back(k);
  IPU_ASSIGN_OR_RETURN(Normalized n, add_normalize(ctx, x, axes, ctx.float_attr("epsilon", 1e-5f)));
  const int mean = n.mean, inv = n.inv_stddev;
  int y = n.y;
  IPU_ASSIGN_OR_RETURN(int scale, ctx.input(1));
  IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, scale, BinaryKind::kMul, "/scale"));
  if (ctx.has_input(2)) {
    IPU_ASSIGN_OR_RETURN(int bias, ctx.input(2));
    IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, bias, BinaryKind::kAdd, "/bias"));
  }
  ctx.set_output(0, y);
  ctx.set_output(1, mean);
  ctx.set_output(2, inv);
  return Status();
}

// InstanceNormalization: each (sample, channel) normalized over its spatial positions, then
// scale[c]·x̂ + B[c]: the LayerNormalization chain over axes 2.. with a per-channel affine.
Status convert_instance_norm(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> in = ctx.shape(x);
  if (in.size() < 3)
    return invalid_argument("input " + shape_text(in) + " has no spatial axis ([N, C, D1, ...])");
  IPU_RETURN_IF_ERROR(check_not_empty(in, "input"));
  std::vector<int64_t> axes, per_channel = {in[1]};
  for (size_t k = 2; k < in.size(); ++k) {
    axes.push_back(static_cast<int64_t>(k));
    per_channel.push_back(1);
  }
  IPU_ASSIGN_OR_RETURN(Normalized n, add_normalize(ctx, x, axes, ctx.float_attr("epsilon", 1e-5f)));
  IPU_ASSIGN_OR_RETURN(int scale, ctx.input(1));
  IPU_ASSIGN_OR_RETURN(int bias, ctx.input(2));
  for (auto [value, name] : {std::pair{scale, "scale"}, std::pair{bias, "B"}}) {
    if (ctx.shape(value) != std::vector<int64_t>{in[1]}) {
      return invalid_argument(std::string(name) + " " + shape_text(ctx.shape(value)) + " does not match " +
                              std::to_string(in[1]) + " channels");
    }
  }
  IPU_ASSIGN_OR_RETURN(scale, ctx.reshape(scale, per_channel, "/scale_shape"));
  IPU_ASSIGN_OR_RETURN(bias, ctx.reshape(bias, per_channel, "/bias_shape"));
  IPU_ASSIGN_OR_RETURN(int y, add_binary(ctx, n.y, scale, BinaryKind::kMul, "/scale"));
  IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, bias, BinaryKind::kAdd, "/bias"));
  ctx.set_output(0, y);
  return Status();
}

// MatMul with numpy semantics: rank-1 operands gain (and lose) a unit axis, batch axes
// broadcast. A rank-2 right operand (a weight) keeps the tiled 2-D MatMul on a flattened left
// operand.
Status convert_matmul(OnnxImportContext& ctx) {
  if (is_integer_dtype(ctx.input_dtype(0)))
    return unsupported("MatMul of dtype '" + ctx.input_dtype(0) + "'");
  IPU_ASSIGN_OR_RETURN(int a, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int b, ctx.input(1));
  std::vector<int64_t> as = ctx.shape(a), bs = ctx.shape(b);
  if (as.empty() || bs.empty()) return invalid_argument("MatMul of a scalar");
  IPU_RETURN_IF_ERROR(check_not_empty(as, "A"));
  IPU_RETURN_IF_ERROR(check_not_empty(bs, "B"));
  const bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) as.insert(as.begin(), 1);
  if (b_vector) bs.push_back(1);
  IPU_ASSIGN_OR_RETURN(a, ctx.reshape(a, as, "/a_matrix"));
  IPU_ASSIGN_OR_RETURN(b, ctx.reshape(b, bs, "/b_matrix"));
  const int64_t K = as.back();
  if (bs[bs.size() - 2] != K) {
    return invalid_argument("inner dimensions differ: " + shape_text(ctx.shape(a)) + " · " +
                            shape_text(ctx.shape(b)));
  }
  int y = -1;
  std::vector<int64_t> out;
  if (bs.size() == 2) {
    out.assign(as.begin(), as.end() - 1);
    out.push_back(bs[1]);
    IPU_ASSIGN_OR_RETURN(int flat, ctx.reshape(a, {product(as, 0, as.size() - 1), K}, "/flatten"));
    IPU_ASSIGN_OR_RETURN(y, ctx.add_op(ir::OpKind::kMatMul, {flat, b}, ir::MatMulAttrs{}));
  } else {
    IPU_ASSIGN_OR_RETURN(y, ctx.add_op(ir::OpKind::kBatchMatMul, {a, b}));
    out = ctx.shape(y);
  }
  if (a_vector) out.erase(out.end() - 2);
  if (b_vector) out.pop_back();
  IPU_ASSIGN_OR_RETURN(y, ctx.reshape(y, out, "/shape"));
  ctx.set_output(0, y);
  return Status();
}

// Y = alpha·op(A)·op(B) + beta·C with C broadcast to [M, N]; a bias row C with beta = 1 is the
// Dense layer's BiasAdd.
Status convert_gemm(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int a, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int b, ctx.input(1));
  if (ctx.shape(a).size() != 2 || ctx.shape(b).size() != 2)
    return invalid_argument("Gemm takes rank-2 A and B");
  ir::MatMulAttrs attrs;
  attrs.trans_a = ctx.int_attr("transA", 0) != 0;
  attrs.trans_b = ctx.int_attr("transB", 0) != 0;
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(ir::OpKind::kMatMul, {a, b}, attrs, "/matmul"));
  const float alpha = ctx.float_attr("alpha", 1.0f), beta = ctx.float_attr("beta", 1.0f);
  if (alpha != 1.0f) {
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, y, UnaryKind::kAffine, alpha, 0, "/alpha"));
  }
  if (ctx.has_input(2)) {
    IPU_ASSIGN_OR_RETURN(int c, ctx.input(2));
    const std::vector<int64_t> ys = ctx.shape(y);
    const std::vector<int64_t> cs = ctx.shape(c);
    // Gemm-6 broadcasts C only with broadcast=1 (then as version 7 does); without, C is [M,N].
    if (ctx.version() < 7 && ctx.int_attr("broadcast", 0) == 0 && cs != ys) {
      return invalid_argument("without 'broadcast' (version 6) C must be " + shape_text(ys) + ", got " +
                              shape_text(cs));
    }
    const bool row = (cs.size() == 1 && cs[0] == ys[1]) || (cs.size() == 2 && cs[0] == 1 && cs[1] == ys[1]);
    if (row && beta == 1.0f) {
      IPU_ASSIGN_OR_RETURN(int bias, ctx.reshape(c, {ys[1]}, "/bias_shape"));
      IPU_ASSIGN_OR_RETURN(y, ctx.add_op(ir::OpKind::kBiasAdd, {y, bias}, {}, "/bias_add"));
    } else {
      if (beta != 1.0f) {
        IPU_ASSIGN_OR_RETURN(c, add_unary(ctx, c, UnaryKind::kAffine, beta, 0, "/beta"));
      }
      IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, c, BinaryKind::kAdd, "/add_c"));
    }
  }
  ctx.set_output(0, y);
  return Status();
}

} // namespace

std::vector<OnnxOpDef> reduce_onnx_ops() {
  return {
      {"ArgMax", {1, 11, 12, 13}, {"axis", "keepdims", "select_last_index"}, convert_arg<true>},
      {"ArgMin", {1, 11, 12, 13}, {"axis", "keepdims", "select_last_index"}, convert_arg<false>},
      {"Gemm", {6, 7, 9, 11, 13}, {"alpha", "beta", "transA", "transB", "broadcast"}, convert_gemm},
      {"InstanceNormalization", {6, 22}, {"epsilon"}, convert_instance_norm},
      {"LayerNormalization", {17}, {"axis", "epsilon", "stash_type"}, convert_layer_norm},
      {"LogSoftmax", {1, 11, 13}, {"axis"}, convert_softmax<format::SoftmaxKind::kLogSoftmax>},
      {"MatMul", {1, 9, 13}, {}, convert_matmul},
      {"ReduceMax",
       {1, 11, 12, 13, 18, 20},
       {"axes", "keepdims", "noop_with_empty_axes"},
       convert_reduce<ReduceKind::kMax, 18>},
      {"ReduceMean",
       {1, 11, 13, 18},
       {"axes", "keepdims", "noop_with_empty_axes"},
       convert_reduce<ReduceKind::kMean, 18>},
      {"ReduceMin",
       {1, 11, 12, 13, 18, 20},
       {"axes", "keepdims", "noop_with_empty_axes"},
       convert_reduce<ReduceKind::kMin, 18>},
      {"ReduceProd",
       {1, 11, 13, 18},
       {"axes", "keepdims", "noop_with_empty_axes"},
       convert_reduce<ReduceKind::kProd, 18>},
      {"ReduceSum",
       {1, 11, 13},
       {"axes", "keepdims", "noop_with_empty_axes"},
       convert_reduce<ReduceKind::kSum, 13>},
      {"Softmax", {1, 11, 13}, {"axis"}, convert_softmax<format::SoftmaxKind::kSoftmax>},
  };
}

} // namespace ipu::frontend
