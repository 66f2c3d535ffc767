// Builds the forward IR graph of a validated ModelSpec.
#include <map>

#include "compiler/frontend/graph_spec.h"
#include "compiler/frontend/initializers.h"
#include "compiler/passes/stage_split.h"

namespace ipu::frontend {
namespace {

// A kernel beyond this many elements (1 GiB of float32) cannot be initialised on the host.
constexpr int64_t kMaxKernelElements = int64_t{1} << 28;

// Each layer without an explicit seed gets its own, so no two kernels start identical.
uint64_t default_seed(size_t layer_index) { return 0x1A7E5EEDull + 7919ull * layer_index; }

StatusOr<int> add_dense(ir::Graph& graph, const LayerSpec& layer, size_t index, int input, int stage) {
  const ir::TensorType& in = graph.value(input).type;
  if (in.shape.size() != 2) {
    return invalid_argument("expects a rank-2 input [batch, features], got " + in.to_string() + "; add a Flatten layer first");
  }
  const int64_t fan_in = in.shape[1], units = layer.units;
  if (fan_in > kMaxKernelElements / units) {
    return invalid_argument("a kernel of " + std::to_string(fan_in) + " x " + std::to_string(units) +
                            " weights is larger than the supported " + std::to_string(kMaxKernelElements) + " elements");
  }
  InitializerSpec kernel_init = layer.kernel_initializer;
  if (kernel_init.seed == 0) kernel_init.seed = default_seed(index);
  const int kernel = graph.add_value(layer.name + "/kernel", {ir::DType::kFloat32, {fan_in, units}}, ir::Role::kWeight);
  graph.value(kernel).initial = initial_values(kernel_init, fan_in, units, fan_in * units);
  graph.value(kernel).stage = stage;
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kMatMul, layer.name + "/matmul", {input, kernel}, {},
                                            ir::Phase::kForward, stage));
  int out = graph.op(op).outputs[0];
  if (layer.use_bias) {
    const int bias = graph.add_value(layer.name + "/bias", {ir::DType::kFloat32, {units}}, ir::Role::kWeight);
    graph.value(bias).initial = initial_values(layer.bias_initializer, units, 1, units);
    graph.value(bias).stage = stage;
    IPU_ASSIGN_OR_RETURN(op, graph.add_op(ir::OpKind::kBiasAdd, layer.name + "/bias_add", {out, bias}, {},
                                          ir::Phase::kForward, stage));
    out = graph.op(op).outputs[0];
  }
  static const std::map<std::string, ir::OpKind> kActivationOps = {
      {"relu", ir::OpKind::kRelu}, {"sigmoid", ir::OpKind::kSigmoid}, {"tanh", ir::OpKind::kTanh},
      {"softmax", ir::OpKind::kSoftmax}};
  auto it = kActivationOps.find(layer.activation);
  if (it != kActivationOps.end()) {
    IPU_ASSIGN_OR_RETURN(op, graph.add_op(it->second, layer.name + "/" + layer.activation, {out}, {},
                                          ir::Phase::kForward, stage));
    out = graph.op(op).outputs[0];
  }
  return out;
}

StatusOr<int> add_flatten(ir::Graph& graph, const LayerSpec& layer, int input, int stage) {
  const ir::TensorType& in = graph.value(input).type;
  ir::OpAttrs attrs;
  attrs.shape = {in.shape[0], in.elements() / in.shape[0]};
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kReshape, layer.name, {input}, attrs, ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

}  // namespace

StatusOr<ForwardGraph> build_forward_graph(const ModelSpec& spec, int64_t batch_size) {
  ForwardGraph result;
  ir::Graph& graph = result.graph;
  std::vector<int64_t> shape = {batch_size};
  shape.insert(shape.end(), spec.input.shape.begin(), spec.input.shape.end());
  const int features = graph.add_value(spec.input.name, {ir::DType::kFloat32, shape}, ir::Role::kInput);
  result.inputs.push_back({features, spec.input.name});

  std::map<std::string, int> output_of = {{spec.input.name, features}};
  passes::StageCopies stage_copies;
  std::string problems;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    auto found = output_of.find(layer.inputs.at(0));
    if (found == output_of.end()) continue;  // its producer failed and was reported
    IPU_ASSIGN_OR_RETURN(int input, stage_copies.value_on_stage(graph, found->second, spec.stages[i]));
    StatusOr<int> out = layer.type == "Dense" ? add_dense(graph, layer, i, input, spec.stages[i])
                                              : add_flatten(graph, layer, input, spec.stages[i]);
    if (!out.ok()) {
      problems += (problems.empty() ? "" : "\n") + spec.path + ": layer '" + layer.name + "' (" + layer.type +
                  "): " + out.status().message();
      continue;
    }
    output_of[layer.name] = *out;
  }
  if (!problems.empty()) return invalid_argument(problems);
  result.outputs.push_back({output_of.at(spec.output), spec.output});
  result.num_stages = spec.num_stages;
  result.name = spec.name;
  return result;
}

}  // namespace ipu::frontend
