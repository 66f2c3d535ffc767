// Builds the forward IR graph of a validated ModelSpec.
#include <algorithm>
#include <map>

#include "compiler/frontend/graph_spec.h"
#include "compiler/frontend/initializers.h"
#include "compiler/passes/stage_split.h"
#include "runtime/format/tensor_kinds.h"

namespace ipu::frontend {
namespace {

// A kernel beyond this many elements (1 GiB of float32) cannot be initialised on the host.
constexpr int64_t kMaxKernelElements = int64_t{1} << 28;

// Each layer without an explicit seed gets its own, so no two kernels start identical.
uint64_t default_seed(size_t layer_index) {
  return 0x1A7E5EEDull + 7919ull * layer_index;
}

StatusOr<int> add_activation(ir::Graph& graph, const LayerSpec& layer, int out, int stage) {
  static const std::map<std::string, ir::OpKind> kActivationOps = {{"relu", ir::OpKind::kRelu},
                                                                   {"sigmoid", ir::OpKind::kSigmoid},
                                                                   {"tanh", ir::OpKind::kTanh},
                                                                   {"softmax", ir::OpKind::kSoftmax}};
  auto it = kActivationOps.find(layer.activation);
  if (it == kActivationOps.end()) return out;
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(it->second, layer.name + "/" + layer.activation, {out}, {},
                                            ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

StatusOr<int> add_dense(ir::Graph& graph, const LayerSpec& layer, size_t index, int input, int stage) {
  const ir::TensorType& in = graph.value(input).type;
  if (in.shape.size() != 2) {
    return invalid_argument("expects a rank-2 input [batch, features], got " + in.to_string() +
                            "; add a Flatten layer first");
  }
  const int64_t fan_in = in.shape[1], units = layer.units;
  if (fan_in > kMaxKernelElements / units) {
    return invalid_argument("a kernel of " + std::to_string(fan_in) + " x " + std::to_string(units) +
                            " weights is larger than the supported " + std::to_string(kMaxKernelElements) +
                            " elements");
  }
  InitializerSpec kernel_init = layer.kernel_initializer;
  if (kernel_init.seed == 0) kernel_init.seed = default_seed(index);
  const int kernel =
      graph.add_value(layer.name + "/kernel", {ir::DType::kFloat32, {fan_in, units}}, ir::Role::kWeight);
  graph.value(kernel).initial = initial_values(kernel_init, fan_in, units, fan_in * units);
  graph.value(kernel).stage = stage;
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kMatMul, layer.name + "/matmul", {input, kernel},
                                            ir::MatMulAttrs{}, ir::Phase::kForward, stage));
  int out = graph.op(op).outputs[0];
  if (layer.use_bias) {
    const int bias = graph.add_value(layer.name + "/bias", {ir::DType::kFloat32, {units}}, ir::Role::kWeight);
    graph.value(bias).initial = initial_values(layer.bias_initializer, units, 1, units);
    graph.value(bias).stage = stage;
    IPU_ASSIGN_OR_RETURN(op, graph.add_op(ir::OpKind::kBiasAdd, layer.name + "/bias_add", {out, bias}, {},
                                          ir::Phase::kForward, stage));
    out = graph.op(op).outputs[0];
  }
  return add_activation(graph, layer, out, stage);
}

StatusOr<int> add_flatten(ir::Graph& graph, const LayerSpec& layer, int input, int stage) {
  const ir::TensorType& in = graph.value(input).type;
  ir::ReshapeAttrs attrs;
  attrs.shape = {in.shape[0], in.elements() / in.shape[0]};
  IPU_ASSIGN_OR_RETURN(
      int op, graph.add_op(ir::OpKind::kReshape, layer.name, {input}, attrs, ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

// A layer's output as the following layers see it. Values cross layers in Keras's channels-last
// layout; Conv2D, pooling and BatchNormalization run on NCHW, so their outputs are kept channels
// first and converted only where a layer needs channels last (Flatten, Dense, Reshape, the model
// output): a stack of them converts once at each end.
struct LayerOutput {
  int value = -1;
  bool channels_first = false;
};

// `out` in the layout asked for, adding a conversion on `stage` if needed. Where only one of
// the axes being moved is longer than 1 the bytes are already in order and a Reshape does.
StatusOr<int> in_layout(ir::Graph& graph, const LayerOutput& out, bool channels_first,
                        const std::string& name, int stage) {
  if (out.channels_first == channels_first) return out.value;
  const std::vector<int64_t> shape = graph.value(out.value).type.shape;
  if (shape.size() < 3) return out.value;
  const int64_t channels = channels_first ? shape.back() : shape[1];
  std::vector<int64_t> target = shape;
  if (channels_first) {
    target.pop_back();
    target.insert(target.begin() + 1, channels);
  } else {
    target.erase(target.begin() + 1);
    target.push_back(channels);
  }
  const int64_t spatial = graph.value(out.value).type.elements() / shape[0] / channels;
  ir::OpAttrs attrs;
  ir::OpKind kind = channels_first ? ir::OpKind::kToChannelsFirst : ir::OpKind::kToChannelsLast;
  if (channels == 1 || spatial == 1) {
    kind = ir::OpKind::kReshape;
    attrs = ir::ReshapeAttrs{target};
  }
  IPU_ASSIGN_OR_RETURN(
      int op, graph.add_op(kind, name + (channels_first ? "/to_channels_first" : "/to_channels_last"),
                           {out.value}, attrs, ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

// Keras's "same" padding: ceil(in / stride) outputs, the odd padding at the end.
ir::WindowAttrs keras_window(const LayerSpec& layer, const std::vector<int64_t>& nchw,
                             std::array<int64_t, 2> kernel, std::array<int64_t, 2> strides) {
  ir::WindowAttrs w;
  w.kernel = kernel;
  w.strides = strides;
  if (layer.padding == "same") {
    for (size_t i = 0; i < 2; ++i) {
      const int64_t in = nchw[2 + i], out = (in + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + kernel[i] - in);
      w.pads[i] = total / 2;
      w.pads[2 + i] = total - total / 2;
    }
  }
  return w;
}

// Conv2D over NHWC input; the kernel is stored [filters, in_channels, kh, kw] (ONNX's layout, not
// Keras's [kh, kw, in, filters]), initialised with Keras's fans (receptive field × channels).
StatusOr<int> add_conv2d(ir::Graph& graph, const LayerSpec& layer, size_t index, int x, int stage) {
  const std::vector<int64_t> shape = graph.value(x).type.shape;
  if (shape.size() != 4) {
    return invalid_argument("expects a rank-4 input [batch, height, width, channels], got " +
                            graph.value(x).type.to_string() + "; add a Reshape layer first");
  }
  const int64_t channels = shape[1], taps = layer.kernel_size[0] * layer.kernel_size[1];
  if (channels * taps > kMaxKernelElements / layer.filters) {
    return invalid_argument("a kernel of " + std::to_string(layer.filters * channels * taps) +
                            " weights is larger than the supported " + std::to_string(kMaxKernelElements) +
                            " elements");
  }
  InitializerSpec kernel_init = layer.kernel_initializer;
  if (kernel_init.seed == 0) kernel_init.seed = default_seed(index);
  const int kernel = graph.add_value(
      layer.name + "/kernel",
      {ir::DType::kFloat32, {layer.filters, channels, layer.kernel_size[0], layer.kernel_size[1]}},
      ir::Role::kWeight);
  graph.value(kernel).initial =
      initial_values(kernel_init, channels * taps, layer.filters * taps, layer.filters * channels * taps);
  graph.value(kernel).stage = stage;
  std::vector<int> inputs = {x, kernel};
  if (layer.use_bias) {
    const int bias =
        graph.add_value(layer.name + "/bias", {ir::DType::kFloat32, {layer.filters}}, ir::Role::kWeight);
    graph.value(bias).initial = initial_values(layer.bias_initializer, layer.filters, 1, layer.filters);
    graph.value(bias).stage = stage;
    inputs.push_back(bias);
  }
  ir::ConvAttrs attrs;
  attrs.window =
      keras_window(layer, shape, layer.kernel_size, layer.strides.value_or(std::array<int64_t, 2>{1, 1}));
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kConv, layer.name + "/conv", inputs, attrs,
                                            ir::Phase::kForward, stage));
  return add_activation(graph, layer, graph.op(op).outputs[0], stage);
}

StatusOr<int> add_pool(ir::Graph& graph, const LayerSpec& layer, int x, int stage) {
  const std::vector<int64_t> shape = graph.value(x).type.shape;
  if (shape.size() != 4) {
    return invalid_argument("expects a rank-4 input [batch, height, width, channels], got " +
                            graph.value(x).type.to_string());
  }
  const ir::WindowAttrs attrs =
      keras_window(layer, shape, layer.pool_size, layer.strides.value_or(layer.pool_size));
  const ir::OpKind kind = layer.type == "AveragePooling2D" ? ir::OpKind::kAveragePool : ir::OpKind::kMaxPool;
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(kind, layer.name, {x}, attrs, ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

// Keras BatchNormalization with its inference semantics: y = (x − moving_mean) /
// sqrt(moving_variance + epsilon) · gamma + beta over the last (channel) axis. gamma (ones) and
// beta (zeros) are trainable; the moving statistics start at 0 and 1 and stay there (constants:
// training never computes batch statistics).
StatusOr<int> add_batch_norm(ir::Graph& graph, const LayerSpec& layer, int x, int stage) {
  const int64_t channels = graph.value(x).type.shape.size() >= 2 ? graph.value(x).type.shape[1] : 0;
  if (channels == 0)
    return invalid_argument("expects an input with a channel axis, got " + graph.value(x).type.to_string());
  auto add = [&](const char* suffix, float value, ir::Role role) {
    const int id = graph.add_value(layer.name + suffix, {ir::DType::kFloat32, {channels}}, role);
    graph.value(id).initial.assign(static_cast<size_t>(channels), value);
    graph.value(id).stage = stage;
    return id;
  };
  const int gamma = add("/gamma", 1.0f, ir::Role::kWeight), beta = add("/beta", 0.0f, ir::Role::kWeight);
  const int mean = add("/moving_mean", 0.0f, ir::Role::kConstant),
            var = add("/moving_variance", 1.0f, ir::Role::kConstant);
  ir::NormAttrs attrs;
  attrs.epsilon = static_cast<float>(layer.epsilon);
  IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kBatchNorm, layer.name, {x, gamma, beta, mean, var},
                                            attrs, ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

// Keras Reshape: target_shape per sample, one entry may be -1.
StatusOr<int> add_reshape(ir::Graph& graph, const LayerSpec& layer, int x, int stage) {
  const ir::TensorType& in = graph.value(x).type;
  const int64_t per_sample = in.elements() / in.shape[0];
  const Status mismatch = invalid_argument("cannot reshape " + in.to_string() + " to a target_shape of " +
                                           std::to_string(per_sample) + " elements per sample");
  // Bounded by the sample's size on the way, so the product cannot overflow.
  int64_t known = 1;
  for (int64_t d : layer.target_shape) {
    if (d != -1 && (d > per_sample || (known *= d) > per_sample)) return mismatch;
  }
  if (per_sample % known != 0) return mismatch;
  std::vector<int64_t> shape = {in.shape[0]};
  for (int64_t d : layer.target_shape)
    shape.push_back(d == -1 ? per_sample / known : d);
  ir::ReshapeAttrs attrs;
  attrs.shape = shape;
  if (ir::TensorType{in.dtype, shape}.elements() != in.elements()) return mismatch;
  IPU_ASSIGN_OR_RETURN(
      int op, graph.add_op(ir::OpKind::kReshape, layer.name, {x}, attrs, ir::Phase::kForward, stage));
  return graph.op(op).outputs[0];
}

// Keras's axis of a channels-last value of `rank`, counting the batch axis, as an axis of the
// value in the layout it is kept in. The batch axis cannot be merged along.
StatusOr<int64_t> merge_axis(int64_t axis, size_t rank, bool channels_first) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r || axis == 0 || axis == -r) {
    return invalid_argument("'axis' " + std::to_string(axis) + " is not a sample axis of a rank-" +
                            std::to_string(r) + " input (1.." + std::to_string(r - 1) +
                            ", or negative from the end)");
  }
  if (axis < 0) axis += r;
  if (channels_first && r >= 3)
    axis = axis == r - 1 ? 1 : axis + 1; // NHWC's C is NCHW's 1, H and W move right
  return axis;
}

// Add and Concatenate. Inputs stay channels first when all of them are (a residual connection
// between convolutions needs no conversions); otherwise they meet channels last, as Keras sees them.
StatusOr<LayerOutput> add_merge(ir::Graph& graph, const LayerSpec& layer,
                                const std::vector<LayerOutput>& inputs, int stage) {
  const bool channels_first =
      std::all_of(inputs.begin(), inputs.end(), [](const LayerOutput& in) { return in.channels_first; });
  std::vector<int> values;
  for (const LayerOutput& in : inputs) {
    IPU_ASSIGN_OR_RETURN(
        int x, in_layout(graph, in, channels_first, layer.name + "/" + std::to_string(values.size()), stage));
    values.push_back(x);
  }
  const ir::TensorType first = graph.value(values[0]).type;
  for (int x : values) {
    const ir::TensorType& type = graph.value(x).type;
    if (layer.type == "Add" ? type.shape != first.shape : type.shape.size() != first.shape.size()) {
      return invalid_argument(
          "inputs of shapes " + first.to_string() + " and " + type.to_string() + " cannot be " +
          (layer.type == "Add" ? "added: Add needs equal shapes" : "concatenated: ranks differ"));
    }
  }
  LayerOutput out{values[0], channels_first};
  if (layer.type == "Add") {
    ir::BinaryAttrs attrs;
    attrs.kind = format::BinaryKind::kAdd;
    for (size_t i = 1; i < values.size(); ++i) {
      IPU_ASSIGN_OR_RETURN(int op, graph.add_op(ir::OpKind::kBinary,
                                                layer.name + (i == 1 ? "" : "/" + std::to_string(i)),
                                                {out.value, values[i]}, attrs, ir::Phase::kForward, stage));
      out.value = graph.op(op).outputs[0];
    }
    return out;
  }
  ir::AxisAttrs attrs;
  IPU_ASSIGN_OR_RETURN(attrs.axis, merge_axis(layer.axis, first.shape.size(), channels_first));
  IPU_ASSIGN_OR_RETURN(
      int op, graph.add_op(ir::OpKind::kConcat, layer.name, values, attrs, ir::Phase::kForward, stage));
  out.value = graph.op(op).outputs[0];
  return out;
}

// Adds one layer reading `inputs` (one, except for merge layers).
StatusOr<LayerOutput> add_layer(ir::Graph& graph, const LayerSpec& layer, size_t index,
                                const std::vector<LayerOutput>& inputs, int stage, bool training) {
  const std::string& t = layer.type;
  if (t == "Add" || t == "Concatenate") return add_merge(graph, layer, inputs, stage);
  const LayerOutput& input = inputs.at(0);
  if (t == "Dropout") {
    if (training && layer.rate > 0) {
      return unsupported(
          "Dropout is applied at inference only (the identity); training with it is not supported, "
          "remove the layer or set its rate to 0");
    }
    return input;
  }
  const bool channels_first = t == "Conv2D" || t == "MaxPool2D" || t == "MaxPooling2D" ||
                              t == "AveragePooling2D" || t == "BatchNormalization";
  IPU_ASSIGN_OR_RETURN(int x, in_layout(graph, input, channels_first, layer.name, stage));
  LayerOutput out{-1, channels_first};
  if (t == "Dense") {
    IPU_ASSIGN_OR_RETURN(out.value, add_dense(graph, layer, index, x, stage));
  } else if (t == "Flatten") {
    IPU_ASSIGN_OR_RETURN(out.value, add_flatten(graph, layer, x, stage));
  } else if (t == "Conv2D") {
    IPU_ASSIGN_OR_RETURN(out.value, add_conv2d(graph, layer, index, x, stage));
  } else if (t == "BatchNormalization") {
    IPU_ASSIGN_OR_RETURN(out.value, add_batch_norm(graph, layer, x, stage));
  } else if (t == "Reshape") {
    IPU_ASSIGN_OR_RETURN(out.value, add_reshape(graph, layer, x, stage));
  } else {
    IPU_ASSIGN_OR_RETURN(out.value, add_pool(graph, layer, x, stage));
  }
  return out;
}

} // namespace

StatusOr<ForwardGraph> build_forward_graph(const ModelSpec& spec, int64_t batch_size, bool training) {
  ForwardGraph result;
  ir::Graph& graph = result.graph;
  std::vector<int64_t> shape = {batch_size};
  shape.insert(shape.end(), spec.input.shape.begin(), spec.input.shape.end());
  const int features = graph.add_value(spec.input.name, {ir::DType::kFloat32, shape}, ir::Role::kInput);
  result.inputs.push_back({features, spec.input.name});

  std::map<std::string, LayerOutput> output_of = {{spec.input.name, {features, false}}};
  passes::StageCopies stage_copies;
  std::string problems;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    std::vector<LayerOutput> inputs;
    for (const std::string& name : layer.inputs) {
      auto found = output_of.find(name);
      if (found == output_of.end()) break; // its producer failed and was reported
      LayerOutput input = found->second;
      IPU_ASSIGN_OR_RETURN(input.value, stage_copies.value_on_stage(graph, input.value, spec.stages[i]));
      inputs.push_back(input);
    }
    if (inputs.size() != layer.inputs.size()) continue;
    StatusOr<LayerOutput> out = add_layer(graph, layer, i, inputs, spec.stages[i], training);
    if (!out.ok()) {
      problems += (problems.empty() ? "" : "\n") + spec.path + ": layer '" + layer.name + "' (" + layer.type +
                  "): " + out.status().message();
      continue;
    }
    output_of[layer.name] = *out;
  }
  if (!problems.empty()) return invalid_argument(problems);
  const LayerOutput& last = output_of.at(spec.output);
  const size_t last_index =
      static_cast<size_t>(std::find_if(spec.layers.begin(), spec.layers.end(),
                                       [&](const LayerSpec& l) { return l.name == spec.output; }) -
                          spec.layers.begin());
  const int output_stage = last_index < spec.stages.size() ? spec.stages[last_index] : 0;
  IPU_ASSIGN_OR_RETURN(int output, in_layout(graph, last, false, spec.output, output_stage));
  result.outputs.push_back({output, spec.output});
  result.num_stages = spec.num_stages;
  result.name = spec.name;
  return result;
}

} // namespace ipu::frontend
