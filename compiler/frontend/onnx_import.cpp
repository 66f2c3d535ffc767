#include "compiler/frontend/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "compiler/frontend/onnx_graph_io.h"
#include "compiler/frontend/onnx_ops.h"
#include "compiler/frontend/onnx_schema.h"
#include "compiler/frontend/problems.h"
#include "runtime/base/printable.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::frontend {
namespace {

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
