#include "compiler/frontend/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "compiler/frontend/onnx_ops.h"
#include "compiler/frontend/onnx_schema.h"
#include "compiler/frontend/onnx_tensor_helpers.h"
#include "compiler/frontend/problems.h"
#include "runtime/base/printable.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::frontend {
namespace {

// Largest input of one micro-batch: 2^30 float32 values (4 GiB), so element counts never overflow.
constexpr int64_t kMaxInputElements = int64_t{1} << 30;
constexpr std::string_view kStageAttribute = "__pipeline_stage";
constexpr std::string_view kIpuAttribute = "__ipu_number";

std::string node_label(const onnx::NodeProto& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  return "node " + name + " (" + node.op_type() + ")";
}

// Stages from PopART's attributes or the override, checked with PopART's rules: on every node or
// none, non-negative, each stage on one IPU; plus ipucc's placement (stage s on IPU s of its
// replica) and numbering without gaps. Data flow from a later stage is checked as nodes import.
std::vector<int> node_stages(const onnx::GraphProto& graph, const OnnxImportOptions& options,
                             Problems& problems, int& num_stages) {
  const int n = graph.node_size();
  std::vector<int> stages(static_cast<size_t>(n), 0);
  num_stages = 1;
  if (!options.stage_assignment.empty()) {
    if (static_cast<int>(options.stage_assignment.size()) != n) {
      problems.add("", invalid_argument("--stage-assignment has " +
                                        std::to_string(options.stage_assignment.size()) + " entries for " +
                                        std::to_string(n) + " nodes"));
      return stages;
    }
    stages = options.stage_assignment;
  } else {
    int annotated = 0;
    for (int i = 0; i < n; ++i) {
      const auto& node = graph.node(i);
      std::optional<int64_t> stage, ipu;
      for (const auto& a : node.attribute()) {
        if (a.name() == kStageAttribute) stage = a.type() == onnx::AttributeProto::INT ? a.i() : -1;
        if (a.name() == kIpuAttribute) ipu = a.type() == onnx::AttributeProto::INT ? a.i() : -1;
      }
      if (!stage && ipu) stage = ipu; // virtual-graph only (no pipeline attribute): stage = IPU
      if (!stage) continue;
      ++annotated;
      if (*stage < 0 || *stage > kMaxStage) {
        problems.add(node_label(node, i),
                     invalid_argument(std::string(kStageAttribute) + " must be an integer in [0, " +
                                      std::to_string(kMaxStage) + "]"));
        continue;
      }
      if (ipu && *ipu != *stage) {
        problems.add(node_label(node, i),
                     unsupported("stage " + std::to_string(*stage) + " on IPU " + std::to_string(*ipu) +
                                 ": ipucc runs stage s on IPU s of its replica, so " +
                                 std::string(kIpuAttribute) + " must equal " + std::string(kStageAttribute)));
      }
      stages[static_cast<size_t>(i)] = static_cast<int>(*stage);
    }
    if (annotated != 0 && annotated != n) {
      problems.add("", invalid_argument("pipeline stage annotations must be on every node or on none (" +
                                        std::to_string(annotated) + " of " + std::to_string(n) +
                                        " nodes have one)"));
    }
  }
  std::set<int> used(stages.begin(), stages.end());
  for (int s : used) {
    if (s < 0 || s > kMaxStage) {
      problems.add("", invalid_argument("stage " + std::to_string(s) + " is outside [0, " +
                                        std::to_string(kMaxStage) + "]"));
      return stages;
    }
  }
  if (!used.empty() && *used.rbegin() != static_cast<int>(used.size()) - 1) {
    problems.add("", invalid_argument("stages must be numbered 0.." + std::to_string(used.size() - 1) +
                                      " without gaps"));
  }
  num_stages = std::max<int>(1, static_cast<int>(used.size()));
  return stages;
}

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

// ONNX's names are UTF-8 strings, but protobuf does not check proto2 strings as it parses. The
// executable (proto3) and the checkpoint index (JSON) hold only UTF-8: a name that is not would
// make an executable that does not load, so every such name is reported, once (InvalidArgument).
Status check_names_are_utf8(const onnx::GraphProto& g, const std::string& path) {
  std::vector<std::string> lines;
  std::set<std::string> reported;
  const auto check = [&](const std::string& where, const std::string& name) {
    if (is_valid_utf8(name) || !reported.insert(name).second) return;
    lines.push_back(path + ": " + where + " '" + printable(name) + "': the name is not UTF-8");
  };
  check("graph", g.name());
  for (const auto& init : g.initializer())
    check("initializer", init.name());
  for (const auto& in : g.input())
    check("graph input", in.name());
  for (const auto& out : g.output())
    check("graph output", out.name());
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    check("node #" + std::to_string(i) + " (" + printable(node.op_type()) + ")", node.name());
    for (const std::string& name : node.input())
      check(node_label(node, i) + ": input", name);
    for (const std::string& name : node.output())
      check(node_label(node, i) + ": output", name);
  }
  if (lines.empty()) return Status();
  std::string message;
  for (const auto& line : lines)
    message += (message.empty() ? "" : "\n") + line;
  return invalid_argument(message);
}

// ONNX graphs are in static single assignment form (onnx.checker): every value has one producer,
// a graph input, an initializer or one output of one node. With two, which one a reader gets would
// depend on the order of import, so every value defined twice is reported (InvalidArgument, one
// line each, naming both definitions). An initializer may also be listed as a graph input (IR < 4).
Status check_single_assignment(const onnx::GraphProto& g, const std::string& path) {
  std::vector<std::string> lines;
  const auto report = [&](const std::string& what) { lines.push_back(path + ": " + what); };
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) {
    if (!initializers.insert(init.name()).second) {
      report("initializer '" + init.name() + "' is defined twice");
    }
  }
  std::set<std::string> inputs;
  for (const auto& in : g.input()) {
    if (!inputs.insert(in.name()).second) report("graph input '" + in.name() + "' is listed twice");
  }
  std::map<std::string, int> producer; // value -> the node writing it
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    for (const std::string& name : node.output()) {
      if (name.empty()) continue; // an optional output left out
      const std::string writes = node_label(node, i) + " writes '" + name + "'";
      if (initializers.count(name)) {
        report(writes + ", which is an initializer: a value of an ONNX graph has one producer (SSA form)");
        continue;
      }
      if (inputs.count(name)) {
        report(writes + ", which is a graph input: a value of an ONNX graph has one producer (SSA form)");
        continue;
      }
      auto [first, inserted] = producer.emplace(name, i);
      if (inserted) continue;
      if (first->second == i) {
        report(writes + " twice: a value of an ONNX graph has one producer (SSA form)");
      } else {
        report(node_label(g.node(first->second), first->second) + " and " + node_label(node, i) +
               " both write '" + name + "': a value of an ONNX graph has one producer (SSA form)");
      }
    }
  }
  if (lines.empty()) return Status();
  std::string message;
  for (const auto& line : lines)
    message += (message.empty() ? "" : "\n") + line;
  return invalid_argument(message);
}

// Imports one node. A node whose input failed to import earlier is skipped silently (OK): its
// producer's problem was reported.
Status import_node(OnnxImportContext& ctx, const onnx::NodeProto& node, int stage, int opset,
                   const std::set<std::string>& declared_names,
                   const std::map<std::string, int>& stage_of_output) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return unsupported("op " + node.op_type() + " of domain '" + node.domain() +
                       "' is not supported (ipucc implements ops of the ai.onnx domain)");
  }
  const OnnxOpDef* def = find_onnx_op(node.op_type());
  if (!def) return unsupported("op " + node.op_type() + " is not supported");
  IPU_ASSIGN_OR_RETURN(int version, schema_version(node.op_type(), opset, *def));
  IPU_RETURN_IF_ERROR(check_attributes(node, *def, opset, version));
  // Every input must exist and come from this stage or an earlier one.
  bool inputs_ready = true;
  for (const std::string& name : node.input()) {
    if (name.empty()) continue;
    auto from = stage_of_output.find(name);
    if (from != stage_of_output.end() && from->second > stage) {
      return invalid_argument("stage " + std::to_string(stage) + " reads '" + name + "' from later stage " +
                              std::to_string(from->second));
    }
    if (ctx.is_known(name)) continue;
    if (from == stage_of_output.end() && !declared_names.count(name)) {
      return invalid_argument("input '" + name +
                              "' is not a graph input, an initializer or the output of an earlier node");
    }
    inputs_ready = false;
  }
  if (!inputs_ready) return Status();
  ctx.begin_node(node, stage, version);
  return def->convert(ctx);
}

// True if every output of `node` (imported) is known at compile time.
bool computed_at_compile_time(OnnxImportContext& ctx, const onnx::NodeProto& node) {
  bool any = false;
  for (const std::string& name : node.output()) {
    if (name.empty()) continue;
    if (!ctx.is_compile_time_constant(name)) return false;
    any = true;
  }
  return any;
}

// Replaces what the imported graph computes from constants by the constants (passes::fold_constants).
// A graph whose constants cannot be evaluated (one beyond float32's exact integers, or too large
// for one IPU) keeps its ops, which then run on the device as before, and says why.
void fold_computed_constants(ForwardGraph& forward, const passes::ConstantEvaluator& evaluate) {
  std::vector<int> interface;
  for (const auto* list : {&forward.inputs, &forward.outputs}) {
    for (const ModelIo& io : *list)
      interface.push_back(io.value);
  }
  StatusOr<passes::FoldedGraph> folded = passes::fold_constants(forward.graph, interface, evaluate);
  if (!folded.ok()) {
    forward.folding_note = "constants computed by ops stay on the device: " + folded.status().message();
    return;
  }
  for (auto* list : {&forward.inputs, &forward.outputs}) {
    for (ModelIo& io : *list)
      io.value = folded->new_value_id.at(static_cast<size_t>(io.value));
  }
}

// Float initializers become weights on first use, integer and bool ones constants. Returns all their names.
std::set<std::string> import_initializers(const onnx::GraphProto& g, OnnxImportContext& ctx,
                                          Problems& problems) {
  std::set<std::string> initializer_names;
  for (const auto& init : g.initializer()) {
    initializer_names.insert(init.name());
    StatusOr<data::NpyArray> array = data::decode_tensor_proto(init, "initializer '" + init.name() + "'");
    if (!array.ok()) {
      problems.add("", array.status());
    } else if (array->dtype == "f4" || array->dtype == "f2") {
      ctx.add_initializer(init.name(), std::move(*array));
    } else if (array->dtype[0] == 'i' || array->dtype[0] == 'u' || array->dtype == "b1") {
      ctx.add_constant(init.name(), std::move(*array));
    } else {
      problems.add("", unsupported("initializer '" + init.name() + "' has dtype '" + array->dtype +
                                   "'; weights must be FLOAT or FLOAT16"));
    }
  }
  for (const auto& sparse : g.sparse_initializer()) {
    problems.add("", unsupported("sparse initializer '" + sparse.values().name() + "' is not supported"));
  }
  return initializer_names;
}

// Binds each graph input that is not an initializer to its --constant-input value, or adds it to
// `result`'s inputs. Returns the names of initializers and graph inputs, imported or not: a node
// reading one that failed to import is skipped, its problem having been reported.
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

// Adds the graph's outputs to `result`, each with its host dtype and whether it is batched.
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

} // namespace

bool looks_like_onnx(std::string_view bytes, const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) return true;
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return false;
  for (char c : bytes) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c != '{';
  }
  return false;
}

int onnx_stage_count(const onnx::ModelProto& model, const std::vector<int>& stage_assignment) {
  OnnxImportOptions options;
  options.stage_assignment = stage_assignment;
  Problems problems("");
  int stages = 1;
  node_stages(model.graph(), options, problems, stages);
  return problems.empty() ? stages : 1;
}

Status parse_onnx_model(std::string_view bytes, const std::string& path, onnx::ModelProto& model) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return invalid_argument(path + ": larger than the 2 GiB protobuf limit");
  }
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return invalid_argument(path + ": not an ONNX model (the ModelProto does not parse)");
  }
  return Status();
}

StatusOr<ForwardGraph> import_onnx(std::string_view bytes, const std::string& path,
                                   const OnnxImportOptions& options) {
  onnx::ModelProto model;
  IPU_RETURN_IF_ERROR(parse_onnx_model(bytes, path, model));
  return import_onnx(std::move(model), path, options);
}

StatusOr<ForwardGraph> import_onnx(onnx::ModelProto model, const std::string& path,
                                   const OnnxImportOptions& options) {
  if (!model.has_graph()) return invalid_argument(path + ": the ONNX model has no graph");
  IPU_ASSIGN_OR_RETURN(const int opset, model_opset(model, path));
  const onnx::GraphProto& g = model.graph();
  // Before anything imports: a name the executable cannot hold, or a value defined twice, makes
  // every later message doubtful.
  IPU_RETURN_IF_ERROR(check_names_are_utf8(g, path));
  IPU_RETURN_IF_ERROR(check_single_assignment(g, path));

  ForwardGraph result;
  result.name = g.name().empty() ? path : g.name();
  OnnxImportContext ctx(result.graph, options.training, options.bytes_per_tile, options.evaluate_constants);
  Problems problems(path);

  const std::set<std::string> initializer_names = import_initializers(g, ctx, problems);
  const std::set<std::string> declared_names =
      import_graph_inputs(g, options, initializer_names, ctx, result, problems);

  const std::vector<int> stages = node_stages(g, options, problems, result.num_stages);
  std::map<std::string, int> stage_of_output;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const int stage = stages[static_cast<size_t>(i)];
    Status status = import_node(ctx, node, stage, opset, declared_names, stage_of_output);
    if (!status.ok()) problems.add(node_label(node, i), status);
    if (status.ok() && node.op_type() != "Constant" && computed_at_compile_time(ctx, node))
      ++result.folded_nodes;
    // Registered even when the node failed, so its consumers are skipped rather than reported.
    for (const std::string& name : node.output())
      stage_of_output[name] = stage;
  }

  add_graph_outputs(g, options, ctx, result, problems);
  if (options.training) {
    // Updating float16 weights is mixed-precision training, which ipucc does not implement yet.
    for (const ir::Value& v : result.graph.values()) {
      if (!v.declared_half) continue;
      problems.add("", unsupported("value '" + v.name +
                                   "' is FLOAT16: models with float16 values compile for inference "
                                   "only (--mode infer)"));
      break;
    }
  }
  if (!problems.empty()) return problems.status();
  // Keep the model without the weights' data (the executable holds those) for --export-onnx.
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (ctx.is_weight(init.name())) {
      init.clear_raw_data();
      init.clear_float_data();
      init.clear_int32_data(); // a FLOAT16 weight's bit patterns without raw_data
    }
  }
  result.source_onnx = model.SerializeAsString();
  // Last: folding renumbers the graph's values, which the context's tables name.
  if (options.evaluate_constants) fold_computed_constants(result, options.evaluate_constants);
  return result;
}

} // namespace ipu::frontend
