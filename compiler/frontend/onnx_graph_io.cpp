#include "compiler/frontend/onnx_graph_io.h"

#include <utility>

#include "compiler/frontend/onnx_tensor_helpers.h"
#include "runtime/base/printable.h"

namespace ipu::frontend {
namespace {

// Largest input of one micro-batch: 2^30 float32 values (4 GiB), so element counts never overflow.
constexpr int64_t kMaxInputElements = int64_t{1} << 30;

// The host dtype (npy code) of an ONNX element type that inputs and outputs may have, or "".
std::string host_dtype(int elem_type) {
  switch (elem_type) {
  case onnx::TensorProto::FLOAT:
    return "f4";
  case onnx::TensorProto::FLOAT16:
    return "f2";
  case onnx::TensorProto::INT64:
    return "i8";
  case onnx::TensorProto::INT32:
    return "i4";
  case onnx::TensorProto::BOOL:
    return "b1";
  // The narrower and unsigned integers: exact float32 values on the device like the others (the
  // host refuses an input beyond 2^24), and converted back to their own type on output, where
  // the low bytes of the exact integer give unsigned arithmetic's wrap-around.
  case onnx::TensorProto::INT8:
    return "i1";
  case onnx::TensorProto::UINT8:
    return "u1";
  case onnx::TensorProto::INT16:
    return "i2";
  case onnx::TensorProto::UINT16:
    return "u2";
  case onnx::TensorProto::UINT32:
    return "u4";
  case onnx::TensorProto::UINT64:
    return "u8";
  default:
    return "";
  }
}

// A graph input that is not an initializer. A dynamic first axis (a dim_param or no value) is the
// micro-batch, bound to `batch_size`; an input whose dims are all fixed is fed whole every step.
// The first dimension is the batch when it is dynamic, or, in a training import, when it is fixed
// at the batch size: what torch.onnx.export writes without dynamic_axes, the batch it traced.
StatusOr<ModelIo> add_graph_input(ir::Graph& graph, const onnx::ValueInfoProto& in, int64_t batch_size,
                                  bool training) {
  const std::string where = "input '" + in.name() + "'";
  if (!in.type().has_tensor_type()) return unsupported(where + " is not a tensor");
  const auto& tensor = in.type().tensor_type();
  ModelIo io;
  io.name = in.name();
  io.dtype = host_dtype(tensor.elem_type());
  if (io.dtype.empty()) {
    return unsupported(where + " has element type " + element_type_name(tensor.elem_type()) +
                       "; inputs may be FLOAT, FLOAT16, BOOL or an integer type");
  }
  if (!tensor.has_shape()) return unsupported(where + " has no static shape");
  std::vector<int64_t> shape;
  io.batched = false;
  for (int axis = 0; axis < tensor.shape().dim_size(); ++axis) {
    const auto& dim = tensor.shape().dim(axis);
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      io.batched = io.batched || (axis == 0 && training && dim.dim_value() == batch_size);
      shape.push_back(dim.dim_value());
    } else if (axis == 0) {
      io.batched = true;
      shape.push_back(batch_size);
    } else {
      return unsupported(where + " has a dynamic dimension" +
                         (dim.has_dim_param() ? " '" + dim.dim_param() + "'" : std::string()) + " at axis " +
                         std::to_string(axis) + "; only the batch axis may be dynamic");
    }
  }
  for (int64_t d : shape) {
    if (d == 0) {
      // Only a constant may be empty (an empty axes list, say); worded like
      // OnnxImportContext::constant_required, which scripts/conformance.sh recognises.
      return unsupported("graph input '" + in.name() + "' must be a compile-time constant: it has shape " +
                         shape_text(shape) +
                         " and empty tensors cannot be runtime inputs; bind it with "
                         "--constant-input " +
                         in.name() + "=FILE");
    }
  }
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d > 0 && elements > kMaxInputElements / d) {
      return invalid_argument(where + " holds more than " + std::to_string(kMaxInputElements) +
                              " values per step");
    }
    elements *= d;
  }
  io.value = graph.add_value(in.name(), {ir::DType::kFloat32, shape}, ir::Role::kInput);
  graph.value(io.value).declared_half = io.dtype == "f2";
  graph.value(io.value).keeps_float32 = is_integer_dtype(io.dtype);
  return io;
}

// The ONNX element types a bound constant may hold (those of integer initializers, plus FLOAT and
// FLOAT16) and their npy codes.
constexpr std::pair<int, std::string_view> kConstantTypes[] = {
    {onnx::TensorProto::FLOAT, "f4"},  {onnx::TensorProto::FLOAT16, "f2"}, {onnx::TensorProto::INT8, "i1"},
    {onnx::TensorProto::INT16, "i2"},  {onnx::TensorProto::INT32, "i4"},   {onnx::TensorProto::INT64, "i8"},
    {onnx::TensorProto::UINT8, "u1"},  {onnx::TensorProto::UINT16, "u2"},  {onnx::TensorProto::UINT32, "u4"},
    {onnx::TensorProto::UINT64, "u8"}, {onnx::TensorProto::BOOL, "b1"},
};

std::string constant_dtype(int elem_type) {
  for (const auto& [type, code] : kConstantTypes) {
    if (type == elem_type) return std::string(code);
  }
  return "";
}

// "INT32" for "i4"; the code itself for a type no constant may have ("f8").
std::string constant_type_name(const std::string& code) {
  for (const auto& [type, c] : kConstantTypes) {
    if (c == code) return element_type_name(type);
  }
  return code;
}

// Checks a --constant-input value against the graph input it binds: the same element type, the
// same rank, and every fixed dimension equal (a symbolic one takes the value's size).
Status check_constant_input(const onnx::ValueInfoProto& in, const ConstantInput& bound) {
  const std::string where = "input '" + in.name() + "' bound by --constant-input to " + bound.source;
  if (!in.type().has_tensor_type()) return invalid_argument(where + ": the input is not a tensor");
  const auto& tensor = in.type().tensor_type();
  const std::string dtype = constant_dtype(tensor.elem_type());
  if (dtype.empty()) {
    return unsupported(where + ": the input has element type " + element_type_name(tensor.elem_type()) +
                       "; constant inputs may be FLOAT, FLOAT16, integers or BOOL");
  }
  std::vector<int64_t> declared;
  bool matches = bound.value.dtype == dtype;
  if (tensor.has_shape()) {
    matches = matches && tensor.shape().dim_size() == static_cast<int>(bound.value.shape.size());
    for (int axis = 0; axis < tensor.shape().dim_size(); ++axis) {
      const auto& dim = tensor.shape().dim(axis);
      declared.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      if (matches && dim.has_dim_value() && dim.dim_value() != bound.value.shape[static_cast<size_t>(axis)]) {
        matches = false;
      }
    }
  }
  if (matches) return Status();
  std::string declared_text = tensor.has_shape() ? shape_text(declared) : "of any shape";
  if (declared_text.find("-1") != std::string::npos) declared_text += " (-1: any size)";
  return invalid_argument(where + ": the value is " + constant_type_name(bound.value.dtype) + " " +
                          shape_text(bound.value.shape) + ", the input is " +
                          element_type_name(tensor.elem_type()) + " " + declared_text);
}

// Whether a graph output is split over steps like the batched inputs: by its declared first
// dimension if it has one (dynamic, or in a training import fixed at the batch size, as the
// inputs), else by its shape.
bool output_is_batched(const onnx::ValueInfoProto& out, const std::vector<int64_t>& shape, bool any_batched,
                       int64_t batch_size, bool training) {
  if (!any_batched || shape.empty() || shape[0] != batch_size) return false;
  const auto& type = out.type();
  if (type.has_tensor_type() && type.tensor_type().has_shape() && type.tensor_type().shape().dim_size() > 0) {
    const auto& first = type.tensor_type().shape().dim(0);
    return !first.has_dim_value() || (training && first.dim_value() == batch_size);
  }
  return true;
}

} // namespace

std::set<std::string> import_graph_inputs(const onnx::GraphProto& g, const OnnxImportOptions& options,
                                          const std::set<std::string>& initializer_names,
                                          OnnxImportContext& ctx, ForwardGraph& result, Problems& problems) {
  std::set<std::string> declared_names = initializer_names;
  std::set<std::string> bound_names;
  for (const auto& in : g.input()) {
    if (initializer_names.count(in.name())) continue; // IR < 4 lists initializers as inputs too
    declared_names.insert(in.name());
    if (auto bound = options.constant_inputs.find(in.name()); bound != options.constant_inputs.end()) {
      bound_names.insert(in.name());
      Status checked = check_constant_input(in, bound->second);
      if (checked.ok()) {
        ctx.add_constant(in.name(), bound->second.value);
      } else {
        problems.add("", checked);
      }
      continue;
    }
    StatusOr<ModelIo> io = add_graph_input(result.graph, in, options.batch_size, options.training);
    if (!io.ok()) {
      problems.add("", io.status());
      continue;
    }
    ctx.bind(io->name, io->value, io->dtype);
    result.inputs.push_back(std::move(*io));
  }
  for (const auto& [name, bound] : options.constant_inputs) {
    if (bound_names.count(name)) continue;
    std::string inputs;
    for (const auto& in : g.input()) {
      if (!initializer_names.count(in.name())) inputs += (inputs.empty() ? "'" : ", '") + in.name() + "'";
    }
    problems.add("", invalid_argument("--constant-input " + name + "=" + bound.source +
                                      ": the model has no graph input '" + name +
                                      "' (its inputs: " + (inputs.empty() ? "none" : inputs) + ")"));
  }
  return declared_names;
}

void add_graph_outputs(const onnx::GraphProto& g, const OnnxImportOptions& options, OnnxImportContext& ctx,
                       ForwardGraph& result, Problems& problems) {
  if (g.output_size() == 0) problems.add("", invalid_argument("the graph has no outputs"));
  bool any_batched = false;
  for (const auto& in : result.inputs)
    any_batched = any_batched || in.batched;
  for (const auto& out : g.output()) {
    if (!problems.empty()) break;
    StatusOr<int> value = ctx.output_value(out.name());
    if (!value.ok()) {
      problems.add("output '" + out.name() + "'", value.status());
      continue;
    }
    if (result.graph.value(*value).type.elements() == 0) {
      problems.add("output '" + out.name() + "'",
                   unsupported("it is empty (shape " + shape_text(result.graph.value(*value).type.shape) +
                               "); empty tensors are not supported"));
      continue;
    }
    ModelIo io;
    io.value = *value;
    io.name = out.name();
    const int declared = out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0;
    io.dtype = declared ? host_dtype(declared) : ctx.host_dtype_of(out.name());
    if (io.dtype.empty()) {
      problems.add("output '" + out.name() + "'",
                   unsupported("element type " + element_type_name(declared) + " is not supported"));
      continue;
    }
    io.batched = output_is_batched(out, result.graph.value(*value).type.shape, any_batched,
                                   options.batch_size, options.training);
    result.outputs.push_back(std::move(io));
  }
}

} // namespace ipu::frontend
