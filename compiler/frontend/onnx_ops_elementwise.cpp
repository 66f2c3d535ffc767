// ONNX elementwise converters: unary math onto the Unary op (a kind and two float parameters),
// numpy-broadcasting binary ops (and the variadic Sum, Mean, Max, Min as chains of them), Where,
// Clip and Cast. Integer and bool tensors are exact floats on the device; an op whose integer
// semantics would differ from float arithmetic (integer Div) is reported as unsupported.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <optional>

#include "compiler/frontend/onnx_tensor_helpers.h"

namespace ipu::frontend {

using format::BinaryKind;
using format::UnaryKind;

StatusOr<int64_t> normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return invalid_argument(what + " " + std::to_string(axis) + " is outside the rank " +
                            std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

bool is_integer_dtype(const std::string& dtype) {
  return dtype != "f4" && dtype != "f2";
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i)
    p *= dims[i];
  return p;
}

StatusOr<int> add_unary(OnnxImportContext& ctx, int x, UnaryKind kind, float alpha, float beta,
                        const std::string& suffix) {
  ir::UnaryAttrs attrs;
  attrs.kind = kind;
  attrs.alpha = alpha;
  attrs.beta = beta;
  return ctx.add_op(ir::OpKind::kUnary, {x}, attrs, suffix);
}

StatusOr<int> add_binary(OnnxImportContext& ctx, int a, int b, BinaryKind kind, const std::string& suffix) {
  ir::BinaryAttrs attrs;
  attrs.kind = kind;
  return ctx.add_op(ir::OpKind::kBinary, {a, b}, attrs, suffix);
}

StatusOr<int> add_strided_copy(OnnxImportContext& ctx, int x, std::vector<int64_t> shape,
                               std::vector<int64_t> strides, int64_t offset, const std::string& suffix) {
  ir::StridedCopyAttrs attrs;
  attrs.shape = std::move(shape);
  attrs.strides = std::move(strides);
  attrs.offset = offset;
  return ctx.add_op(ir::OpKind::kStridedCopy, {x}, attrs, suffix);
}

Status check_not_empty(const std::vector<int64_t>& shape, const std::string& what) {
  for (int64_t d : shape) {
    if (d <= 0)
      return unsupported(what + " " + shape_text(shape) + " is empty; empty tensors are not supported");
  }
  return Status();
}

data::NpyArray make_i64_array(const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  data::NpyArray array;
  array.dtype = "i8";
  array.shape = std::move(shape);
  array.data.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  return array;
}

namespace {

// Unary math on float tensors (the kinds whose integer use ONNX does not define, or where
// float arithmetic would differ, refuse integer inputs).
template <UnaryKind K> Status convert_unary(OnnxImportContext& ctx) {
  const std::string dtype = ctx.input_dtype(0);
  const bool exact_on_integers =
      K == UnaryKind::kAbs || K == UnaryKind::kNeg || K == UnaryKind::kSign || K == UnaryKind::kNot;
  if (is_integer_dtype(dtype) && !exact_on_integers) {
    return unsupported(ctx.node().op_type() + " of dtype '" + dtype + "' is not supported (float32 only)");
  }
  float alpha = 0, beta = 0;
  switch (K) {
  case UnaryKind::kElu:
    alpha = ctx.float_attr("alpha", 1.0f);
    break;
  case UnaryKind::kSelu:
    alpha = ctx.float_attr("alpha", 1.67326319217681884765625f);
    beta = ctx.float_attr("gamma", 1.05070102214813232421875f);
    break;
  case UnaryKind::kLeakyRelu:
    alpha = ctx.float_attr("alpha", 0.01f);
    break;
  case UnaryKind::kHardSigmoid:
    alpha = ctx.float_attr("alpha", 0.2f);
    beta = ctx.float_attr("beta", 0.5f);
    break;
  case UnaryKind::kHardSwish: // no attributes: HardSigmoid's with alpha 1/6, beta 0.5
    alpha = 1.0f / 6.0f;
    beta = 0.5f;
    break;
  case UnaryKind::kCelu:
    alpha = ctx.float_attr("alpha", 1.0f);
    if (alpha == 0.0f) return invalid_argument("alpha must not be 0");
    break;
  default:
    break;
  }
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int y, add_unary(ctx, x, K, alpha, beta));
  ctx.set_output(0, y, dtype);
  return Status();
}

Status convert_gelu(OnnxImportContext& ctx) {
  std::string approximate = "none";
  if (const onnx::AttributeProto* a = ctx.attribute("approximate")) approximate = a->s();
  if (approximate != "none" && approximate != "tanh") {
    return invalid_argument("approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  if (is_integer_dtype(ctx.input_dtype(0))) return unsupported("Gelu of dtype '" + ctx.input_dtype(0) + "'");
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int y,
                       add_unary(ctx, x, approximate == "tanh" ? UnaryKind::kGeluTanh : UnaryKind::kGelu));
  ctx.set_output(0, y);
  return Status();
}

// Float inputs, or integer ones where the float result is the exact integer result.
// Input 1 of a binary op, as numpy broadcasting may take it. Before opset 7 (Add, Sub, Mul, Div
// of version 6, Pow of version 1) broadcasting was explicit: without `broadcast` the shapes are
// equal; with broadcast=1 B's shape is a contiguous run of A's starting at `axis` (default: its
// trailing dims) or B has one element. Padding B with 1s around that run makes numpy's rules
// give the same result, so the legacy versions import as the later ones.
StatusOr<int> second_operand(OnnxImportContext& ctx, int a) {
  IPU_ASSIGN_OR_RETURN(int b, ctx.input(1));
  if (ctx.version() >= 7) return b;
  const std::vector<int64_t> as = ctx.shape(a), bs = ctx.shape(b);
  if (ctx.int_attr("broadcast", 0) == 0) {
    if (as != bs) {
      return invalid_argument("without 'broadcast' (version " + std::to_string(ctx.version()) +
                              ") the inputs must have one shape, got " + shape_text(as) + " and " +
                              shape_text(bs));
    }
    return b;
  }
  const int64_t rank = static_cast<int64_t>(as.size()), b_rank = static_cast<int64_t>(bs.size());
  int64_t elements = 1;
  for (int64_t d : bs)
    elements *= d;
  int64_t axis = ctx.attribute("axis") ? ctx.int_attr("axis", 0) : rank - b_rank;
  if (axis < 0) axis += rank;
  if (elements == 1)
    return ctx.reshape(b, std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(rank, 1)), 1),
                       "/broadcast");
  if (axis < 0 || axis + b_rank > rank || !std::equal(bs.begin(), bs.end(), as.begin() + axis)) {
    return invalid_argument("B " + shape_text(bs) + " is not a run of A " + shape_text(as) + " at axis " +
                            std::to_string(axis));
  }
  std::vector<int64_t> padded(static_cast<size_t>(rank), 1);
  std::copy(bs.begin(), bs.end(), padded.begin() + axis);
  return ctx.reshape(b, padded, "/broadcast");
}

constexpr bool gives_bool(BinaryKind kind) {
  return kind >= BinaryKind::kEqual && kind <= BinaryKind::kXor;
}

template <BinaryKind K> Status convert_binary(OnnxImportContext& ctx) {
  const std::string dtype = ctx.input_dtype(0);
  IPU_ASSIGN_OR_RETURN(int a, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int b, second_operand(ctx, a));
  IPU_ASSIGN_OR_RETURN(int y, add_binary(ctx, a, b, K));
  if ((K == BinaryKind::kDiv || K == BinaryKind::kPow) && is_integer_dtype(dtype)) {
    // An integer result keeps its type: the quotient (or a fractional power) is truncated as
    // integer arithmetic does. Integers are exact in float32 up to 2^24, and below that the
    // rounded quotient truncates to the exact one: a quotient that is not an integer lies at
    // least 1/|B| from one, more than half a float32 step at its magnitude.
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, y, UnaryKind::kTrunc, 0, 0, "/trunc"));
  }
  ctx.set_output(0, y, gives_bool(K) ? "b1" : dtype);
  return Status();
}

// Mod: fmod 1 is C's fmod (the dividend's sign), which ONNX requires of floats; fmod 0 the
// integers' Python-style remainder (the divisor's sign).
Status convert_mod(OnnxImportContext& ctx) {
  const bool fmod = ctx.int_attr("fmod", 0) != 0;
  if (!fmod && !is_integer_dtype(ctx.input_dtype(0))) {
    return invalid_argument("Mod of dtype '" + ctx.input_dtype(0) +
                            "' needs fmod 1 (ONNX requires it of floats)");
  }
  return fmod ? convert_binary<BinaryKind::kFmod>(ctx) : convert_binary<BinaryKind::kMod>(ctx);
}

// Pow of a float base by a constant single exponent (x.pow(2) in a LayerNorm's variance, as
// exporters write it: a Constant 2.0) is the scalar form, as popops' expression optimiser maps
// such exponents (a square to a multiply) rather than the generic POWER, so its cost and gradient
// are the scalar form's; any other Pow is the binary op.
Status convert_pow(OnnxImportContext& ctx) {
  const data::NpyArray* exponent = ctx.constant_input(1);
  IPU_ASSIGN_OR_RETURN(int a, ctx.input(0));
  if (exponent == nullptr || exponent->element_count() != 1 || is_integer_dtype(ctx.input_dtype(0)) ||
      exponent->shape.size() > ctx.shape(a).size()) {
    return convert_binary<BinaryKind::kPow>(ctx);
  }
  IPU_ASSIGN_OR_RETURN(std::vector<float> value, data::to_floats(*exponent, ctx.node().input(1)));
  IPU_ASSIGN_OR_RETURN(int y, add_unary(ctx, a, UnaryKind::kPowScalar, value[0]));
  ctx.set_output(0, y);
  return Status();
}

// Add; a bias row [N] or [1,N] added to [M,N] (what exporters write for a Linear layer) stays
// the BiasAdd of the Dense layer, whose gradient is a column sum.
Status convert_add(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int a, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int b, second_operand(ctx, a));
  int x = a, bias = b;
  if (ctx.shape(x).size() < ctx.shape(bias).size()) std::swap(x, bias);
  const std::vector<int64_t> xs = ctx.shape(x);
  const std::vector<int64_t> bs = ctx.shape(bias);
  const bool row = xs.size() == 2 &&
                   ((bs.size() == 1 && bs[0] == xs[1]) || (bs.size() == 2 && bs[0] == 1 && bs[1] == xs[1]));
  int y = -1;
  if (row && !is_integer_dtype(ctx.input_dtype(0))) {
    IPU_ASSIGN_OR_RETURN(int flat, ctx.reshape(bias, {xs[1]}, "/bias_shape"));
    IPU_ASSIGN_OR_RETURN(y, ctx.add_op(ir::OpKind::kBiasAdd, {x, flat}, {}, "/bias_add"));
  } else {
    IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, a, b, BinaryKind::kAdd));
  }
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Max, Min, Sum (and Mean, scaled) of any number of broadcast inputs, folded left to right.
// Opset 6's versions do not broadcast: their inputs have one shape, where the two agree.
template <BinaryKind K, bool kMean = false> Status convert_variadic(OnnxImportContext& ctx) {
  const std::string dtype = ctx.input_dtype(0);
  if (kMean && is_integer_dtype(dtype)) return unsupported("Mean of dtype '" + dtype + "' is not supported");
  const int n = ctx.num_inputs();
  if (n < 1) return invalid_argument("needs at least one input");
  IPU_ASSIGN_OR_RETURN(int y, ctx.input(0));
  for (int i = 1; i < n; ++i) {
    IPU_ASSIGN_OR_RETURN(int x, ctx.input(i));
    if (ctx.version() < 8 && ctx.shape(x) != ctx.shape(y)) {
      return invalid_argument("version " + std::to_string(ctx.version()) + " does not broadcast: input " +
                              std::to_string(i) + " is " + shape_text(ctx.shape(x)) + ", input 0 " +
                              shape_text(ctx.shape(y)));
    }
    IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, x, K, "/" + std::to_string(i)));
  }
  if (kMean && n > 1) {
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, y, UnaryKind::kAffine, 1.0f / static_cast<float>(n), 0, "/mean"));
  }
  ctx.set_output(0, y, dtype);
  return Status();
}

// PRelu: x where x ≥ 0, slope·x below, the slope broadcast to x (exporters write it per channel,
// [C,1,1]): relu(x) + slope·(x − relu(x)), so a trained slope gets its gradient like any weight.
Status convert_prelu(OnnxImportContext& ctx) {
  if (is_integer_dtype(ctx.input_dtype(0)))
    return unsupported("PRelu of dtype '" + ctx.input_dtype(0) + "' is not supported");
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int slope, ctx.input(1));
  const std::vector<int64_t> xs = ctx.shape(x), ss = ctx.shape(slope);
  IPU_ASSIGN_OR_RETURN(int positive, ctx.add_op(ir::OpKind::kRelu, {x}, {}, "/positive"));
  IPU_ASSIGN_OR_RETURN(int negative, add_binary(ctx, x, positive, BinaryKind::kSub, "/negative"));
  IPU_ASSIGN_OR_RETURN(int scaled, add_binary(ctx, slope, negative, BinaryKind::kMul, "/scaled"));
  if (ctx.shape(scaled) != xs)
    return invalid_argument("slope " + shape_text(ss) + " does not broadcast to X " + shape_text(xs));
  IPU_ASSIGN_OR_RETURN(int y, add_binary(ctx, positive, scaled, BinaryKind::kAdd));
  ctx.set_output(0, y);
  return Status();
}

Status convert_where(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int c, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int a, ctx.input(1));
  IPU_ASSIGN_OR_RETURN(int b, ctx.input(2));
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(ir::OpKind::kWhere, {c, a, b}));
  ctx.set_output(0, y, ctx.input_dtype(1));
  return Status();
}

// A scalar bound of Clip given as input `index`, if constant.
StatusOr<std::optional<float>> constant_bound(OnnxImportContext& ctx, int index) {
  if (!ctx.has_input(index))
    return std::optional<float>(index == 1 ? -std::numeric_limits<float>::infinity()
                                           : std::numeric_limits<float>::infinity());
  const data::NpyArray* c = ctx.constant_input(index);
  if (!c) return std::optional<float>();
  IPU_ASSIGN_OR_RETURN(std::vector<float> v, data::to_floats(*c, "input " + std::to_string(index)));
  if (v.size() != 1) return invalid_argument("the bounds of Clip must be scalars");
  return std::optional<float>(v[0]);
}

// Clip: attributes min/max (version 6) or optional scalar inputs (11+); a bound computed at run
// time becomes a broadcast Max/Min.
Status convert_clip(OnnxImportContext& ctx) {
  const std::string dtype = ctx.input_dtype(0);
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  int y = -1;
  if (ctx.version() < 11) {
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, x, UnaryKind::kClip, ctx.float_attr("min", -3.402823e+38f),
                                      ctx.float_attr("max", 3.402823e+38f)));
  } else {
    IPU_ASSIGN_OR_RETURN(std::optional<float> lo, constant_bound(ctx, 1));
    IPU_ASSIGN_OR_RETURN(std::optional<float> hi, constant_bound(ctx, 2));
    if (lo && hi) {
      IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, x, UnaryKind::kClip, *lo, *hi));
    } else {
      y = x;
      for (int i : {1, 2}) {
        if (!ctx.has_input(i)) continue;
        IPU_ASSIGN_OR_RETURN(int bound, ctx.input(i));
        IPU_ASSIGN_OR_RETURN(y, add_binary(ctx, y, bound, i == 1 ? BinaryKind::kMax : BinaryKind::kMin,
                                           i == 1 ? "/min" : "/max"));
      }
    }
  }
  ctx.set_output(0, y, dtype);
  return Status();
}

// Cast between FLOAT, FLOAT16, INT32, INT64 and BOOL: to an integer truncates toward zero, to BOOL
// tests != 0, the rest keep the value, except that a cast to FLOAT16 rounds it to binary16. A cast
// into or out of FLOAT16 copies (an Identity): the copy is a value of its own, FLOAT16 on the
// device when it is float16, so the device rounds what the copy writes (to nearest, ties to even,
// unless ipurun --stochastic-rounding) and a float32 value is never marked float16.
Status convert_cast(OnnxImportContext& ctx) {
  const int64_t to = ctx.int_attr("to", 0);
  std::string out;
  switch (to) {
  case onnx::TensorProto::FLOAT:
    out = "f4";
    break;
  case onnx::TensorProto::FLOAT16:
    out = "f2";
    break;
  case onnx::TensorProto::INT32:
    out = "i4";
    break;
  case onnx::TensorProto::INT64:
    out = "i8";
    break;
  case onnx::TensorProto::BOOL:
    out = "b1";
    break;
  default: {
    return unsupported("Cast to element type " + element_type_name(static_cast<int>(to)) +
                       " is not supported (FLOAT, FLOAT16, INT32, INT64 and BOOL are)");
  }
  }
  const std::string in = ctx.input_dtype(0);
  if (in != "f4" && in != "f2" && in != "i4" && in != "i8" && in != "b1")
    return unsupported("Cast from dtype '" + in + "'");
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  int y = x;
  if (out == "b1" && in != "b1") {
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, x, UnaryKind::kNonZero));
  } else if (is_integer_dtype(out) && !is_integer_dtype(in)) {
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, x, UnaryKind::kTrunc));
  } else if ((out == "f2") != (in == "f2")) {
    IPU_ASSIGN_OR_RETURN(y, add_unary(ctx, x, UnaryKind::kIdentity));
  }
  ctx.set_output(0, y, out);
  return Status();
}

} // namespace

std::vector<OnnxOpDef> elementwise_onnx_ops() {
  return {
      {"Abs", {6, 13}, {}, convert_unary<UnaryKind::kAbs>},
      {"Add", {6, 7, 13, 14}, {"broadcast", "axis"}, convert_add},
      {"And", {7}, {}, convert_binary<BinaryKind::kAnd>},
      {"Cast", {6, 9, 13, 19, 21, 23, 24, 25}, {"to", "saturate"}, convert_cast},
      {"Ceil", {6, 13}, {}, convert_unary<UnaryKind::kCeil>},
      {"Celu", {12}, {"alpha"}, convert_unary<UnaryKind::kCelu>},
      {"Clip", {6, 11, 12, 13}, {"min", "max"}, convert_clip},
      {"Div", {6, 7, 13, 14}, {"broadcast", "axis"}, convert_binary<BinaryKind::kDiv>},
      {"Elu", {6, 22}, {"alpha"}, convert_unary<UnaryKind::kElu>},
      {"Equal", {7, 11, 13, 19}, {}, convert_binary<BinaryKind::kEqual>},
      {"Erf", {9, 13}, {}, convert_unary<UnaryKind::kErf>},
      {"Exp", {6, 13}, {}, convert_unary<UnaryKind::kExp>},
      {"Floor", {6, 13}, {}, convert_unary<UnaryKind::kFloor>},
      {"Gelu", {20}, {"approximate"}, convert_gelu},
      {"Greater", {7, 9, 13}, {}, convert_binary<BinaryKind::kGreater>},
      {"GreaterOrEqual", {12, 16}, {}, convert_binary<BinaryKind::kGreaterOrEqual>},
      {"HardSigmoid", {6, 22}, {"alpha", "beta"}, convert_unary<UnaryKind::kHardSigmoid>},
      {"HardSwish", {14, 22}, {}, convert_unary<UnaryKind::kHardSwish>},
      {"LeakyRelu", {6, 16}, {"alpha"}, convert_unary<UnaryKind::kLeakyRelu>},
      {"Less", {7, 9, 13}, {}, convert_binary<BinaryKind::kLess>},
      {"LessOrEqual", {12, 16}, {}, convert_binary<BinaryKind::kLessOrEqual>},
      {"Log", {6, 13}, {}, convert_unary<UnaryKind::kLog>},
      {"Max", {6, 8, 12, 13}, {}, convert_variadic<BinaryKind::kMax>},
      {"Mean", {6, 8, 13}, {}, convert_variadic<BinaryKind::kAdd, true>},
      {"Min", {6, 8, 12, 13}, {}, convert_variadic<BinaryKind::kMin>},
      {"Mod", {10, 13}, {"fmod"}, convert_mod},
      {"Mul", {6, 7, 13, 14}, {"broadcast", "axis"}, convert_binary<BinaryKind::kMul>},
      {"Neg", {6, 13}, {}, convert_unary<UnaryKind::kNeg>},
      {"Not", {1}, {}, convert_unary<UnaryKind::kNot>},
      {"Or", {7}, {}, convert_binary<BinaryKind::kOr>},
      {"PRelu", {7, 9, 16}, {}, convert_prelu},
      {"Pow", {1, 7, 12, 13, 15}, {"broadcast", "axis"}, convert_pow},
      {"Reciprocal", {6, 13}, {}, convert_unary<UnaryKind::kReciprocal>},
      {"Selu", {6, 22}, {"alpha", "gamma"}, convert_unary<UnaryKind::kSelu>},
      {"Sign", {9, 13}, {}, convert_unary<UnaryKind::kSign>},
      {"Softplus", {1, 22}, {}, convert_unary<UnaryKind::kSoftplus>},
      {"Softsign", {1, 22}, {}, convert_unary<UnaryKind::kSoftsign>},
      {"Sqrt", {6, 13}, {}, convert_unary<UnaryKind::kSqrt>},
      {"Sub", {6, 7, 13, 14}, {"broadcast", "axis"}, convert_binary<BinaryKind::kSub>},
      {"Sum", {6, 8, 13}, {}, convert_variadic<BinaryKind::kAdd>},
      {"Where", {9, 16}, {}, convert_where},
      {"Xor", {7}, {}, convert_binary<BinaryKind::kXor>},
  };
}

} // namespace ipu::frontend
