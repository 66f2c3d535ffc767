// Unary (one codelet, a kind and two float parameters) and its gradient kernel UnaryGrad, Binary
// with numpy broadcasting, and Where: the elementwise ops of the ONNX importer.
#include <cmath>
#include <numbers>

#include "compiler/ops/element_cycles.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/tensor_util.h"

namespace ipu::ops {
using ir::BinaryAttrs;
using ir::DType;
using ir::GradContext;
using ir::Graph;
using ir::Op;
using ir::OpKind;
using ir::TensorType;
using ir::UnaryAttrs;

namespace {

using format::BinaryKind;
using format::UnaryKind;
using lowering::LowerContext;

std::vector<int64_t> dims_or_one(const std::vector<int64_t>& shape) {
  return shape.empty() ? std::vector<int64_t>{1} : shape;
}

Status infer_unary(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  if (x.dtype != DType::kFloat32) return invalid_argument("expects float32, got " + x.to_string());
  if (const auto kind = static_cast<int64_t>(op.attrs<UnaryAttrs>().kind);
      kind < 0 || kind >= format::kUnaryKindCount) {
    return invalid_argument("unknown unary kind");
  }
  out.push_back(x);
  return Status();
}

// dX = dY · f'(x) written with Unary and Binary ops, for the kinds whose derivative takes a pass
// or two that way; -1 for the others.
StatusOr<int> composed_gradient(GradContext& ctx, const Op& op, int dy) {
  const int x = op.inputs[0], y = op.outputs[0];
  const UnaryAttrs& unary = op.attrs<UnaryAttrs>();
  const float alpha = unary.alpha;
  int derivative = -1; // f'(x), for the kinds that do not return dX directly
  switch (unary.kind) {
  case UnaryKind::kIdentity:
    return dy;
  case UnaryKind::kNeg:
    return grad_unary(ctx, op, UnaryKind::kNeg, dy, 0, 0, "/grad");
  case UnaryKind::kAffine:
    return grad_unary(ctx, op, UnaryKind::kAffine, dy, alpha, 0, "/grad");
  case UnaryKind::kAbs: {
    IPU_ASSIGN_OR_RETURN(derivative, grad_unary(ctx, op, UnaryKind::kSign, x, 0, 0, "/grad_sign"));
    break;
  }
  case UnaryKind::kExp:
    derivative = y;
    break;
  case UnaryKind::kLog:
    return grad_binary(ctx, op, BinaryKind::kDiv, dy, x, "/grad");
  case UnaryKind::kSqrt: { // 1 / (2·√x)
    IPU_ASSIGN_OR_RETURN(int half, grad_binary(ctx, op, BinaryKind::kDiv, dy, y, "/grad_div"));
    return grad_unary(ctx, op, UnaryKind::kAffine, half, 0.5f, 0, "/grad");
  }
  case UnaryKind::kReciprocal: { // −1/x² = −y²
    IPU_ASSIGN_OR_RETURN(int sq, grad_unary(ctx, op, UnaryKind::kSquare, y, 0, 0, "/grad_square"));
    IPU_ASSIGN_OR_RETURN(derivative, grad_unary(ctx, op, UnaryKind::kNeg, sq, 0, 0, "/grad_neg"));
    break;
  }
  case UnaryKind::kSquare: {
    IPU_ASSIGN_OR_RETURN(derivative, grad_unary(ctx, op, UnaryKind::kAffine, x, 2, 0, "/grad_twice"));
    break;
  }
  case UnaryKind::kPowScalar: { // a·x^(a−1)
    IPU_ASSIGN_OR_RETURN(int p, grad_unary(ctx, op, UnaryKind::kPowScalar, x, alpha - 1.0f, 0, "/grad_pow"));
    IPU_ASSIGN_OR_RETURN(derivative, grad_unary(ctx, op, UnaryKind::kAffine, p, alpha, 0, "/grad_scale"));
    break;
  }
  case UnaryKind::kErf: { // 2/√π · e^(−x²)
    IPU_ASSIGN_OR_RETURN(int sq, grad_unary(ctx, op, UnaryKind::kSquare, x, 0, 0, "/grad_square"));
    IPU_ASSIGN_OR_RETURN(int neg, grad_unary(ctx, op, UnaryKind::kNeg, sq, 0, 0, "/grad_neg"));
    IPU_ASSIGN_OR_RETURN(int en, grad_unary(ctx, op, UnaryKind::kExp, neg, 0, 0, "/grad_exp_neg"));
    IPU_ASSIGN_OR_RETURN(derivative,
                         grad_unary(ctx, op, UnaryKind::kAffine, en,
                                    static_cast<float>(2.0 / std::sqrt(std::numbers::pi)), 0, "/grad_scale"));
    break;
  }
  case UnaryKind::kTanh: { // 1 − y²
    IPU_ASSIGN_OR_RETURN(int sq, grad_unary(ctx, op, UnaryKind::kSquare, y, 0, 0, "/grad_square"));
    IPU_ASSIGN_OR_RETURN(derivative, grad_unary(ctx, op, UnaryKind::kAffine, sq, -1, 1, "/grad_derivative"));
    break;
  }
  case UnaryKind::kSoftsign: { // 1 / (1 + |x|)²
    IPU_ASSIGN_OR_RETURN(int abs, grad_unary(ctx, op, UnaryKind::kAbs, x, 0, 0, "/grad_abs"));
    IPU_ASSIGN_OR_RETURN(int denominator,
                         grad_unary(ctx, op, UnaryKind::kAffine, abs, 1, 1, "/grad_one_plus"));
    IPU_ASSIGN_OR_RETURN(int squared,
                         grad_unary(ctx, op, UnaryKind::kSquare, denominator, 0, 0, "/grad_square"));
    return grad_binary(ctx, op, BinaryKind::kDiv, dy, squared, "/grad");
  }
  case UnaryKind::kSigmoid: { // y·(1 − y)
    IPU_ASSIGN_OR_RETURN(int one_minus,
                         grad_unary(ctx, op, UnaryKind::kAffine, y, -1, 1, "/grad_complement"));
    IPU_ASSIGN_OR_RETURN(derivative,
                         grad_binary(ctx, op, BinaryKind::kMul, y, one_minus, "/grad_derivative"));
    break;
  }
  case UnaryKind::kSoftplus: { // d/dx log(1 + eˣ) = sigmoid(x)
    IPU_ASSIGN_OR_RETURN(derivative, grad_unary(ctx, op, UnaryKind::kSigmoid, x, 0, 0, "/grad_sigmoid"));
    break;
  }
  default:
    return -1;
  }
  return grad_binary(ctx, op, BinaryKind::kMul, dy, derivative, "/grad");
}

// The ONNX op that a Unary of a kind without a gradient comes from, for the message refusing to
// train through it.
std::string onnx_op_of(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::kCeil:
    return "Ceil";
  case UnaryKind::kFloor:
    return "Floor";
  case UnaryKind::kSign:
    return "Sign";
  case UnaryKind::kNot:
    return "Not";
  case UnaryKind::kTrunc:   // to an integer type
  case UnaryKind::kNonZero: // to BOOL
    return "Cast";
  default:
    return "Unary";
  }
}

// dX = dY · f'(x): one UnaryGrad for the kinds with a gradient kernel (piecewise derivatives, or
// several functions of x), Unary and Binary ops for the rest. The piecewise-constant kinds (Ceil,
// Floor, Sign, Not and the casts) have none: training through them is refused, naming the node.
Status grad_unary_op(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  const int x = op.inputs[0];
  if (dy < 0 || !ctx.needs_gradient(x)) return Status();
  const UnaryAttrs& unary = op.attrs<UnaryAttrs>();
  int dx = -1;
  if (format::has_unary_grad_kernel(unary.kind)) {
    IPU_ASSIGN_OR_RETURN(dx, grad_op(ctx, op, OpKind::kUnaryGrad, {x, dy}, unary, "/grad"));
  } else {
    IPU_ASSIGN_OR_RETURN(dx, composed_gradient(ctx, op, dy));
  }
  if (dx < 0) {
    return unsupported("training through '" + onnx_op_of(unary.kind) + "' node '" + op.name +
                       "' is not supported: its gradient is not implemented");
  }
  return ctx.add_gradient(x, dx);
}

Status lower_unary(LowerContext& ctx, const Op& op) {
  const UnaryAttrs& unary = op.attrs<UnaryAttrs>();
  const UnaryKind kind = unary.kind;
  const double per = unary_cycles_per_element(ctx.target().cycles, kind, unary.alpha);
  using P = format::params::Unary;
  using F = format::fparams::Unary;
  lower_output_range(ctx, op, format::Codelet::kUnary, per,
                     format::make_fparams<F>({{F::kAlpha, unary.alpha}, {F::kBeta, unary.beta}}),
                     [&](int64_t begin, int64_t end) {
                       return format::make_params<P>(
                           {{P::kKind, static_cast<int64_t>(kind)}, {P::kBegin, begin}, {P::kEnd, end}});
                     });
  return Status();
}

// UnaryGrad(X, dY) = dX: a kind with format::has_unary_grad_kernel, X and dY of one shape.
Status infer_unary_grad(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& x = g.value(op.inputs[0]).type;
  const TensorType& dy = g.value(op.inputs[1]).type;
  if (x.dtype != DType::kFloat32 || dy.dtype != x.dtype || dy.shape != x.shape)
    return invalid_argument("expects float32 X and dY of one shape, got " + x.to_string() + " and " +
                            dy.to_string());
  if (!format::has_unary_grad_kernel(op.attrs<UnaryAttrs>().kind))
    return invalid_argument("this unary kind has no gradient kernel");
  out.push_back(x);
  return Status();
}

Status lower_unary_grad(LowerContext& ctx, const Op& op) {
  const UnaryAttrs& unary = op.attrs<UnaryAttrs>();
  using P = format::params::UnaryGrad;
  using F = format::fparams::UnaryGrad;
  lower_output_range(
      ctx, op, format::Codelet::kUnaryGrad, unary_grad_cycles_per_element(ctx.target().cycles, unary.kind),
      format::make_fparams<F>({{F::kAlpha, unary.alpha}, {F::kBeta, unary.beta}}),
      [&](int64_t begin, int64_t end) {
        return format::make_params<P>(
            {{P::kKind, static_cast<int64_t>(unary.kind)}, {P::kBegin, begin}, {P::kEnd, end}});
      });
  return Status();
}

Status infer_binary(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  const TensorType& a = g.value(op.inputs[0]).type;
  const TensorType& b = g.value(op.inputs[1]).type;
  if (a.dtype != DType::kFloat32 || b.dtype != DType::kFloat32) {
    return invalid_argument("expects float32, got " + a.to_string() + " and " + b.to_string());
  }
  if (const auto kind = static_cast<int64_t>(op.attrs<BinaryAttrs>().kind);
      kind < 0 || kind >= format::kBinaryKindCount) {
    return invalid_argument("unknown binary kind");
  }
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ir::broadcast_shapes(a.shape, b.shape));
  TensorType y{DType::kFloat32, shape};
  IPU_RETURN_IF_ERROR(check_rank(y));
  out.push_back(y);
  return Status();
}

Status grad_binary_op(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  const int a = op.inputs[0], b = op.inputs[1], y = op.outputs[0];
  const bool need_a = ctx.needs_gradient(a), need_b = ctx.needs_gradient(b);
  if (!need_a && !need_b) return Status();
  int da = -1, db = -1; // full (broadcast-shaped) gradients
  switch (op.attrs<BinaryAttrs>().kind) {
  case BinaryKind::kAdd:
    da = db = dy;
    break;
  case BinaryKind::kSub:
    da = dy;
    if (need_b) {
      IPU_ASSIGN_OR_RETURN(db, grad_unary(ctx, op, UnaryKind::kNeg, dy, 0, 0, "/grad_b_neg"));
    }
    break;
  case BinaryKind::kMul:
    if (need_a) {
      IPU_ASSIGN_OR_RETURN(da, grad_binary(ctx, op, BinaryKind::kMul, dy, b, "/grad_a"));
    }
    if (need_b) {
      IPU_ASSIGN_OR_RETURN(db, grad_binary(ctx, op, BinaryKind::kMul, dy, a, "/grad_b"));
    }
    break;
  case BinaryKind::kDiv: { // dA = dY/B; dB = −dY·Y/B
    IPU_ASSIGN_OR_RETURN(int q, grad_binary(ctx, op, BinaryKind::kDiv, dy, b, "/grad_a"));
    da = q;
    if (need_b) {
      IPU_ASSIGN_OR_RETURN(int qy, grad_binary(ctx, op, BinaryKind::kMul, q, y, "/grad_b_mul"));
      IPU_ASSIGN_OR_RETURN(db, grad_unary(ctx, op, UnaryKind::kNeg, qy, 0, 0, "/grad_b"));
    }
    break;
  }
  case BinaryKind::kPow: { // dA = dY·B·A^(B−1); dB = dY·Y·ln A
    if (need_a) {
      IPU_ASSIGN_OR_RETURN(int bm1, grad_unary(ctx, op, UnaryKind::kAffine, b, 1, -1, "/grad_a_exponent"));
      IPU_ASSIGN_OR_RETURN(int p, grad_binary(ctx, op, BinaryKind::kPow, a, bm1, "/grad_a_pow"));
      IPU_ASSIGN_OR_RETURN(int bp, grad_binary(ctx, op, BinaryKind::kMul, p, b, "/grad_a_scale"));
      IPU_ASSIGN_OR_RETURN(da, grad_binary(ctx, op, BinaryKind::kMul, dy, bp, "/grad_a"));
    }
    if (need_b) {
      IPU_ASSIGN_OR_RETURN(int ln, grad_unary(ctx, op, UnaryKind::kLog, a, 0, 0, "/grad_b_log"));
      IPU_ASSIGN_OR_RETURN(int yl, grad_binary(ctx, op, BinaryKind::kMul, y, ln, "/grad_b_scale"));
      IPU_ASSIGN_OR_RETURN(db, grad_binary(ctx, op, BinaryKind::kMul, dy, yl, "/grad_b"));
    }
    break;
  }
  case BinaryKind::kFmod:
  case BinaryKind::kMod: { // Y = A − B·q, q = A/B rounded toward zero (fmod) or down: dA = dY; dB = −dY·q
    da = dy;
    if (need_b) {
      const bool floors = op.attrs<BinaryAttrs>().kind == BinaryKind::kMod;
      IPU_ASSIGN_OR_RETURN(int ratio, grad_binary(ctx, op, BinaryKind::kDiv, a, b, "/grad_b_ratio"));
      IPU_ASSIGN_OR_RETURN(int q, grad_unary(ctx, op, floors ? UnaryKind::kFloor : UnaryKind::kTrunc, ratio,
                                             0, 0, "/grad_b_quotient"));
      IPU_ASSIGN_OR_RETURN(int dq, grad_binary(ctx, op, BinaryKind::kMul, dy, q, "/grad_b_mul"));
      IPU_ASSIGN_OR_RETURN(db, grad_unary(ctx, op, UnaryKind::kNeg, dq, 0, 0, "/grad_b"));
    }
    break;
  }
  case BinaryKind::kMax:
  case BinaryKind::kMin: { // the gradient goes to the selected operand; ties to A
    const bool max = op.attrs<BinaryAttrs>().kind == BinaryKind::kMax;
    IPU_ASSIGN_OR_RETURN(int mask_a,
                         grad_binary(ctx, op, max ? BinaryKind::kGreaterOrEqual : BinaryKind::kLessOrEqual, a,
                                     b, "/grad_mask"));
    if (need_a) {
      IPU_ASSIGN_OR_RETURN(da, grad_binary(ctx, op, BinaryKind::kMul, dy, mask_a, "/grad_a"));
    }
    if (need_b) {
      IPU_ASSIGN_OR_RETURN(int mask_b, grad_unary(ctx, op, UnaryKind::kNot, mask_a, 0, 0, "/grad_mask_b"));
      IPU_ASSIGN_OR_RETURN(db, grad_binary(ctx, op, BinaryKind::kMul, dy, mask_b, "/grad_b"));
    }
    break;
  }
  default:
    return Status(); // comparisons and logic: piecewise constant, no gradient flows
  }
  if (need_a) {
    IPU_ASSIGN_OR_RETURN(int ga, unbroadcast(ctx, op, da, ctx.graph().value(a).type.shape, "/grad_a_reduce"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(a, ga));
  }
  if (need_b) {
    IPU_ASSIGN_OR_RETURN(int gb, unbroadcast(ctx, op, db, ctx.graph().value(b).type.shape, "/grad_b_reduce"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(b, gb));
  }
  return Status();
}

// The output dims followed by each input's broadcast strides over them: the params that Binary
// and Where take after their work range.
std::vector<int64_t> broadcast_tail(const Graph& g, const Op& op, const std::vector<int64_t>& dims) {
  std::vector<int64_t> tail = dims;
  for (int in : op.inputs) {
    const std::vector<int64_t> s = ir::broadcast_strides(g.value(in).type.shape, dims);
    tail.insert(tail.end(), s.begin(), s.end());
  }
  return tail;
}

// Each operand read at its broadcast strides: a vertex reads only the part its outputs map to.
std::vector<InputAccess> broadcast_access(const Graph& g, const Op& op, const std::vector<int64_t>& dims) {
  std::vector<InputAccess> access;
  for (int in : op.inputs)
    access.push_back({dims, ir::broadcast_strides(g.value(in).type.shape, dims)});
  return access;
}

Status lower_binary(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t> dims = dims_or_one(ctx.graph().value(op.outputs[0]).type.shape);
  const std::vector<int64_t> tail = broadcast_tail(ctx.graph(), op, dims);
  const BinaryKind kind = op.attrs<BinaryAttrs>().kind;
  const double per = binary_cycles_per_element(ctx.target().cycles, kind);
  lower_output_range(
      ctx, op, format::Codelet::kBinary, per, {},
      [&](int64_t begin, int64_t end) {
        using P = format::params::Binary;
        return format::make_params<P>({{P::kKind, static_cast<int64_t>(kind)},
                                       {P::kRank, static_cast<int64_t>(dims.size())},
                                       {P::kBegin, begin},
                                       {P::kEnd, end}},
                                      tail);
      },
      broadcast_access(ctx.graph(), op, dims));
  return Status();
}

// Where(C, A, B): C selects A (nonzero) or B, all three broadcast.
Status infer_where(const Graph& g, const Op& op, std::vector<TensorType>& out) {
  std::vector<int64_t> shape;
  for (int in : op.inputs) {
    IPU_ASSIGN_OR_RETURN(shape, ir::broadcast_shapes(shape, g.value(in).type.shape));
  }
  TensorType y{DType::kFloat32, shape};
  IPU_RETURN_IF_ERROR(check_rank(y));
  out.push_back(y);
  return Status();
}

// dA = dY·(C ≠ 0), dB = dY·(C = 0), each summed over its broadcast axes.
Status grad_where(GradContext& ctx, const Op& op) {
  const int dy = ctx.gradient_of(op.outputs[0]);
  if (dy < 0) return Status();
  const int c = op.inputs[0];
  for (int i : {1, 2}) {
    const int branch = op.inputs[static_cast<size_t>(i)];
    if (!ctx.needs_gradient(branch)) continue;
    const std::string side = i == 1 ? "/grad_a" : "/grad_b";
    IPU_ASSIGN_OR_RETURN(int mask, grad_unary(ctx, op, i == 1 ? UnaryKind::kNonZero : UnaryKind::kNot, c, 0,
                                              0, side + "_mask"));
    IPU_ASSIGN_OR_RETURN(int full, grad_binary(ctx, op, BinaryKind::kMul, dy, mask, side));
    IPU_ASSIGN_OR_RETURN(int g,
                         unbroadcast(ctx, op, full, ctx.graph().value(branch).type.shape, side + "_reduce"));
    IPU_RETURN_IF_ERROR(ctx.add_gradient(branch, g));
  }
  return Status();
}

Status lower_where(LowerContext& ctx, const Op& op) {
  const std::vector<int64_t> dims = dims_or_one(ctx.graph().value(op.outputs[0]).type.shape);
  const std::vector<int64_t> tail = broadcast_tail(ctx.graph(), op, dims);
  lower_output_range(
      ctx, op, format::Codelet::kWhere, 1.0, {},
      [&](int64_t begin, int64_t end) {
        using P = format::params::Where;
        return format::make_params<P>(
            {{P::kRank, static_cast<int64_t>(dims.size())}, {P::kBegin, begin}, {P::kEnd, end}}, tail);
      },
      broadcast_access(ctx.graph(), op, dims));
  return Status();
}

} // namespace

const OpDefinition& unary_op() {
  static const OpDefinition def{{OpKind::kUnary, 1, infer_unary, grad_unary_op}, lower_unary};
  return def;
}
const OpDefinition& unary_grad_op() {
  static const OpDefinition def{{OpKind::kUnaryGrad, 2, infer_unary_grad, nullptr}, lower_unary_grad};
  return def;
}
const OpDefinition& binary_op() {
  static const OpDefinition def{{OpKind::kBinary, 2, infer_binary, grad_binary_op}, lower_binary};
  return def;
}
const OpDefinition& where_op() {
  static const OpDefinition def{{OpKind::kWhere, 3, infer_where, grad_where}, lower_where};
  return def;
}

} // namespace ipu::ops
