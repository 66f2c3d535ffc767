// ONNX op converters: each maps one node onto IR ops of compiler/ir/ops.def. An attribute value
// or operand form a converter does not implement is reported as Unsupported, never approximated.
#include "compiler/frontend/onnx_ops.h"

#include <onnx/onnx_pb.h>

#include <algorithm>

#include "compiler/frontend/onnx_tensor_helpers.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::frontend {
namespace {

using ir::OpKind;

Status unary(OnnxImportContext& ctx, OpKind kind) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(int y, ctx.add_op(kind, {x}));
  ctx.set_output(0, y);
  return Status();
}

Status convert_relu(OnnxImportContext& ctx) {
  return unary(ctx, OpKind::kRelu);
}
Status convert_sigmoid(OnnxImportContext& ctx) {
  return unary(ctx, OpKind::kSigmoid);
}
Status convert_tanh(OnnxImportContext& ctx) {
  return unary(ctx, OpKind::kTanh);
}

Status convert_identity(OnnxImportContext& ctx) {
  if (const data::NpyArray* constant = ctx.constant_input(0)) {
    ctx.set_constant_output(0, *constant);
    return Status();
  }
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  ctx.set_output(0, x, ctx.input_dtype(0));
  return Status();
}

// Dropout drops nothing, and is the identity with a mask of all ones, unless it is in training
// mode with a positive ratio. Versions 12 on say the mode in their training_mode input (false when
// absent); versions 7 and 10 leave it to the runtime, so they are in training mode in a training
// program. Dropping draws a random mask every step, which ipucc does not implement: refused, and
// the message names the exports that work (torch writes a Dropout of p 0 as ratio 0).
Status convert_dropout(OnnxImportContext& ctx) {
  bool training_mode = ctx.version() < 12 && ctx.training();
  if (ctx.version() >= 12 && ctx.has_input(2)) {
    const data::NpyArray* mode = ctx.constant_input(2);
    if (!mode) return ctx.constant_required(2);
    if (mode->element_count() != 1) return invalid_argument("training_mode must be a scalar");
    training_mode = mode->data.find_first_not_of('\0') != std::string::npos;
  }
  if (training_mode) {
    float ratio = 0.5f; // ONNX's default: an attribute before version 12, an input from it
    if (ctx.version() < 12) {
      ratio = ctx.float_attr("ratio", ratio);
    } else if (ctx.has_input(1)) {
      const data::NpyArray* given = ctx.constant_input(1);
      if (!given) given = ctx.float_initializer_input(1);
      if (!given) return ctx.constant_required(1);
      IPU_ASSIGN_OR_RETURN(std::vector<float> r, data::to_floats(*given, "ratio"));
      if (r.size() != 1) return invalid_argument("ratio must be a scalar");
      ratio = r[0];
    }
    if (ratio != 0.0f) {
      return unsupported("Dropout in training mode with ratio " + std::to_string(ratio) +
                         " drops a random mask every step, which ipucc does not implement; export the "
                         "model with the dropout's probability set to 0 to train it, or in eval mode "
                         "(torch's default) to run inference");
    }
  }
  if (ctx.node().output_size() > 1 && !ctx.node().output(1).empty()) {
    // Nothing is dropped: the mask is all ones (bool from version 10, the input's type before).
    data::NpyArray mask;
    if (const data::NpyArray* constant = ctx.constant_input(0)) {
      mask.shape = constant->shape;
    } else {
      IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
      mask.shape = ctx.shape(x);
    }
    if (ctx.version() >= 10) {
      mask.dtype = "b1";
      mask.data.assign(mask.element_count(), '\1');
    } else {
      mask.dtype = "f4";
      const float one = 1.0f;
      for (size_t i = 0; i < mask.element_count(); ++i)
        mask.data.append(reinterpret_cast<const char*>(&one), sizeof one);
    }
    ctx.set_constant_output(1, std::move(mask));
  }
  return convert_identity(ctx);
}

// [d0..dn) → [prod(d0..d_axis), prod(d_axis..dn)].
Status convert_flatten(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  const std::vector<int64_t> shape = ctx.shape(x);
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = ctx.int_attr("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) {
    return invalid_argument("axis " + std::to_string(ctx.int_attr("axis", 1)) + " is outside the rank " +
                            std::to_string(rank) + " of the input");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= shape[static_cast<size_t>(i)];
  IPU_ASSIGN_OR_RETURN(int y, ctx.reshape(x, {outer, inner}));
  ctx.set_output(0, y, ctx.input_dtype(0));
  return Status();
}

// Reshape with a constant target shape: 0 copies the input's dimension (unless allowzero), one
// -1 is inferred.
Status convert_reshape(OnnxImportContext& ctx) {
  IPU_ASSIGN_OR_RETURN(int x, ctx.input(0));
  IPU_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx.int_constant_input(1));
  const std::vector<int64_t> in = ctx.shape(x);
  const bool allow_zero = ctx.int_attr("allowzero", 0) != 0;
  const int64_t elements = ctx.graph().value(x).type.elements();
  IPU_RETURN_IF_ERROR(check_not_empty(in, "the input"));
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (i >= in.size())
        return invalid_argument("shape entry " + std::to_string(i) + " is 0 beyond the input's rank");
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) return invalid_argument("shape " + shape_text(target) + " has more than one -1");
      inferred = static_cast<int>(i);
    } else if (target[i] < 0) {
      return invalid_argument("shape entry " + std::to_string(target[i]) + " is negative");
    } else if (target[i] > elements || (known *= target[i]) > elements) {
      // Bounded by the input's size on the way, so the product cannot overflow.
      return invalid_argument("cannot reshape " + shape_text(in) + " (" + std::to_string(elements) +
                              " elements) to " + shape_text(target));
    }
  }
  if (inferred >= 0) {
    if (known == 0 || elements % known != 0) {
      return invalid_argument("cannot reshape " + shape_text(in) + " to " + shape_text(target));
    }
    target[static_cast<size_t>(inferred)] = elements / known;
  } else if (known != elements) {
    return invalid_argument("cannot reshape " + shape_text(in) + " (" + std::to_string(elements) +
                            " elements) to " + shape_text(target));
  }
  IPU_ASSIGN_OR_RETURN(int y, ctx.reshape(x, target));
  ctx.set_output(0, y, ctx.input_dtype(0)); // an integer tensor stays one
  return Status();
}

Status convert_constant(OnnxImportContext& ctx) {
  const onnx::AttributeProto* a = nullptr;
  for (std::string_view name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    if ((a = ctx.attribute(name))) break;
  }
  if (!a)
    return unsupported("Constant without a value, value_float(s) or value_int(s) attribute is not supported");
  data::NpyArray array;
  if (a->name() == "value") {
    IPU_ASSIGN_OR_RETURN(array, data::decode_tensor_proto(a->t(), "attribute 'value'"));
  } else if (a->name() == "value_float" || a->name() == "value_floats") {
    std::vector<float> values = a->name() == "value_float"
                                    ? std::vector<float>{a->f()}
                                    : std::vector<float>(a->floats().begin(), a->floats().end());
    array = data::make_npy_f32(a->name() == "value_float"
                                   ? std::vector<int64_t>{}
                                   : std::vector<int64_t>{static_cast<int64_t>(values.size())},
                               values.data());
  } else {
    std::vector<int64_t> values = a->name() == "value_int"
                                      ? std::vector<int64_t>{a->i()}
                                      : std::vector<int64_t>(a->ints().begin(), a->ints().end());
    array.dtype = "i8";
    if (a->name() == "value_ints") array.shape = {static_cast<int64_t>(values.size())};
    array.data.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  }
  ctx.set_constant_output(0, std::move(array));
  return Status();
}

} // namespace

std::vector<OnnxOpDef> core_onnx_ops() {
  return {
      {"Constant",
       {1, 9, 11, 12, 13, 19, 21, 23, 24, 25},
       {"value", "value_float", "value_floats", "value_int", "value_ints"},
       convert_constant},
      {"Dropout", {7, 10, 12, 13, 22}, {"ratio", "seed"}, convert_dropout},
      {"Flatten", {1, 9, 11, 13, 21, 23, 24, 25}, {"axis"}, convert_flatten},
      {"Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}, {}, convert_identity},
      {"Relu", {6, 13, 14}, {}, convert_relu},
      {"Reshape", {5, 13, 14, 19, 21, 23, 24, 25}, {"allowzero"}, convert_reshape},
      {"Sigmoid", {6, 13}, {}, convert_sigmoid},
      {"Tanh", {6, 13}, {}, convert_tanh},
  };
}

const std::vector<OnnxOpDef>& onnx_ops() {
  static const std::vector<OnnxOpDef> ops = [] {
    std::vector<OnnxOpDef> all;
    for (auto family : {core_onnx_ops, elementwise_onnx_ops, shape_onnx_ops, reduce_onnx_ops, conv_onnx_ops,
                        batch_norm_onnx_ops, loss_onnx_ops, recurrent_onnx_ops}) {
      std::vector<OnnxOpDef> defs = family();
      all.insert(all.end(), defs.begin(), defs.end());
    }
    return all;
  }();
  return ops;
}

const std::vector<int>* folded_float_inputs(std::string_view op_type) {
  static const std::map<std::string_view, std::vector<int>> kFolded = {
      // convert_batch_norm folds scale, B, mean and var into ChannelAffine's constants.
      {"BatchNormalization", {1, 2, 3, 4}},
      // convert_dropout decides from the ratio whether training-mode Dropout is the identity.
      {"Dropout", {1}},
  };
  auto found = kFolded.find(op_type);
  return found == kFolded.end() ? nullptr : &found->second;
}

const OnnxOpDef* find_onnx_op(std::string_view op_type) {
  const auto& ops = onnx_ops();
  auto it = std::find_if(ops.begin(), ops.end(), [&](const OnnxOpDef& d) { return d.op_type == op_type; });
  return it == ops.end() ? nullptr : &*it;
}

} // namespace ipu::frontend
