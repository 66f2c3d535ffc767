#include "compiler/frontend/graph_spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "compiler/frontend/graph_spec_internal.h"
#include "compiler/frontend/json_nesting.h"
#include "compiler/frontend/problems.h"

namespace ipu::frontend {

// A short, bounded rendering of a value for messages: never a recursive dump of a hostile tree.
std::string describe(const nlohmann::json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  std::string text = j.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

namespace {

using nlohmann::json;

// Bounds that keep every later size computation far from overflow.
constexpr int64_t kMaxUnits = int64_t{1} << 24;
constexpr int64_t kMaxSampleElements = int64_t{1} << 28;

const std::set<std::string> kActivations = {"none", "linear", "relu", "sigmoid", "tanh", "softmax"};
constexpr int64_t kMaxWindow = int64_t{1} << 16;
constexpr int64_t kMaxFilters = int64_t{1} << 16;
// Keras merges take any number of inputs; more than this is a mistake, not a model.
constexpr size_t kMaxMergeInputs = 64;

const std::set<std::string> kCommonKeys = {"name", "type", "inputs", "stage"};
// The attributes of each layer type besides the common ones.
const std::map<std::string, std::set<std::string>> kLayerTypes = {
    {"Dense", {"units", "activation", "use_bias", "kernel_initializer", "bias_initializer"}},
    {"Flatten", {}},
    {"Conv2D",
     {"filters", "kernel_size", "strides", "padding", "activation", "use_bias", "kernel_initializer",
      "bias_initializer"}},
    {"MaxPool2D", {"pool_size", "strides", "padding"}},
    {"MaxPooling2D", {"pool_size", "strides", "padding"}},
    {"AveragePooling2D", {"pool_size", "strides", "padding"}},
    {"Dropout", {"rate"}},
    {"BatchNormalization", {"epsilon"}},
    {"Reshape", {"target_shape"}},
    {"Add", {}},
    {"Concatenate", {"axis"}},
};

// Merge layers read several inputs, so only the functional form can wire them.
bool is_merge_layer(const std::string& type) {
  return type == "Add" || type == "Concatenate";
}

std::string supported_types() {
  std::string out;
  for (const auto& entry : kLayerTypes)
    out += (out.empty() ? "" : ", ") + entry.first;
  return out;
}

bool known_key(const std::string& key) {
  if (kCommonKeys.count(key)) return true;
  for (const auto& entry : kLayerTypes) {
    if (entry.second.count(key)) return true;
  }
  return false;
}

// An integer or a list of two, each in [1, limit] (Keras's int-or-tuple arguments).
std::optional<std::array<int64_t, 2>> parse_pair(const json& j, int64_t limit) {
  auto ok = [&](const json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= limit;
  };
  if (ok(j)) return std::array<int64_t, 2>{j.get<int64_t>(), j.get<int64_t>()};
  if (j.is_array() && j.size() == 2 && ok(j[0]) && ok(j[1])) {
    return std::array<int64_t, 2>{j[0].get<int64_t>(), j[1].get<int64_t>()};
  }
  return std::nullopt;
}

std::optional<int> parse_stage(const json& j) {
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > kMaxStage) return std::nullopt;
  return static_cast<int>(j.get<int64_t>());
}

std::string layer_label(const LayerSpec& layer) {
  return "layer '" + layer.name + "'" + (layer.type.empty() ? "" : " (" + layer.type + ")");
}

std::optional<InitializerSpec> parse_initializer(const json& j, Problems& problems,
                                                 const std::string& where) {
  InitializerSpec init;
  if (j.is_string()) {
    init.type = j.get<std::string>();
  } else if (j.is_object() && j.contains("type") && j["type"].is_string()) {
    init.type = j["type"].get<std::string>();
    if (j.contains("seed")) {
      if (!j["seed"].is_number_unsigned()) {
        problems.add(where, "initializer 'seed' must be a non-negative integer");
        return std::nullopt;
      }
      init.seed = j["seed"].get<uint64_t>();
    }
  } else {
    problems.add(where, "an initializer is a name or {\"type\": ..., \"seed\": ...}");
    return std::nullopt;
  }
  if (init.type != "glorot_uniform" && init.type != "zeros") {
    problems.add(where, "unknown initializer '" + init.type + "' (expected glorot_uniform or zeros)");
    return std::nullopt;
  }
  return init;
}

// The layer's 'inputs' (functional specs only: one, or several for a merge layer) and the axis
// Concatenate joins them along.
void read_layer_inputs(const json& j, bool functional, const std::string& where, LayerSpec& layer,
                       Problems& problems) {
  const bool merge = is_merge_layer(layer.type);
  if (functional) {
    const json* inputs = j.contains("inputs") && j["inputs"].is_array() ? &j["inputs"] : nullptr;
    const bool names =
        inputs && std::all_of(inputs->begin(), inputs->end(), [](const json& v) { return v.is_string(); });
    if (merge && !(names && inputs->size() >= 2 && inputs->size() <= kMaxMergeInputs)) {
      problems.add(where, "'inputs' must list 2 to " + std::to_string(kMaxMergeInputs) + " input names");
    } else if (!merge && !(names && inputs->size() == 1)) {
      problems.add(where, "'inputs' must list exactly one input name");
    } else {
      for (const json& name : *inputs)
        layer.inputs.push_back(name.get<std::string>());
    }
  } else if (j.contains("inputs")) {
    problems.add(where, "'inputs' belongs to functional specs; a sequential layer reads the previous one");
  } else if (merge) {
    problems.add(where,
                 layer.type +
                     " merges several layers: use the functional form, whose nodes list their 'inputs'");
  }
  if (layer.type == "Concatenate" && j.contains("axis")) {
    if (!j["axis"].is_number_integer()) {
      problems.add(where, "'axis' must be an integer (negative counts from the last axis)");
    } else {
      layer.axis = j["axis"].get<int64_t>();
    }
  }
}

// Dense's units, and Conv2D's filters and kernel_size.
void read_layer_sizes(const json& j, const std::string& where, LayerSpec& layer, Problems& problems) {
  if (layer.type == "Dense") {
    if (!j.contains("units") || !j["units"].is_number_integer() || j["units"].get<int64_t>() <= 0 ||
        j["units"].get<int64_t>() > kMaxUnits) {
      problems.add(where, "'units' must be an integer in [1, " + std::to_string(kMaxUnits) + "]");
    } else {
      layer.units = j["units"].get<int64_t>();
    }
  }
  if (layer.type == "Conv2D") {
    if (!j.contains("filters") || !j["filters"].is_number_integer() || j["filters"].get<int64_t>() <= 0 ||
        j["filters"].get<int64_t>() > kMaxFilters) {
      problems.add(where, "'filters' must be an integer in [1, " + std::to_string(kMaxFilters) + "]");
    } else {
      layer.filters = j["filters"].get<int64_t>();
    }
    auto kernel = j.contains("kernel_size") ? parse_pair(j["kernel_size"], kMaxWindow) : std::nullopt;
    if (!kernel) {
      problems.add(where, "'kernel_size' must be an integer or two integers in [1, " +
                              std::to_string(kMaxWindow) + "]");
    } else {
      layer.kernel_size = *kernel;
    }
  }
}

// pool_size, strides and padding, where the layer's type takes them (`type`: its kLayerTypes entry).
void read_window_attributes(const json& j, std::map<std::string, std::set<std::string>>::const_iterator type,
                            const std::string& where, LayerSpec& layer, Problems& problems) {
  if (j.contains("pool_size") && type != kLayerTypes.end() && type->second.count("pool_size")) {
    if (auto pool = parse_pair(j["pool_size"], kMaxWindow)) {
      layer.pool_size = *pool;
    } else {
      problems.add(where, "'pool_size' must be an integer or two integers in [1, " +
                              std::to_string(kMaxWindow) + "]");
    }
  }
  if (j.contains("strides") && type != kLayerTypes.end() && type->second.count("strides")) {
    layer.strides = parse_pair(j["strides"], kMaxWindow);
    if (!layer.strides) {
      problems.add(where,
                   "'strides' must be an integer or two integers in [1, " + std::to_string(kMaxWindow) + "]");
    }
  }
  if (j.contains("padding") && type != kLayerTypes.end() && type->second.count("padding")) {
    if (j["padding"] != "valid" && j["padding"] != "same") {
      problems.add(where, "'padding' must be \"valid\" or \"same\", got " + describe(j["padding"]));
    } else {
      layer.padding = j["padding"].get<std::string>();
    }
  }
}

// Dropout's rate, BatchNormalization's epsilon and Reshape's target_shape.
void read_layer_parameters(const json& j, const std::string& where, LayerSpec& layer, Problems& problems) {
  if (layer.type == "Dropout") {
    if (!j.contains("rate") || !j["rate"].is_number() || j["rate"].get<double>() < 0 ||
        j["rate"].get<double>() >= 1) {
      problems.add(where, "'rate' must be a number in [0, 1)");
    } else {
      layer.rate = j["rate"].get<double>();
    }
  }
  if (layer.type == "BatchNormalization" && j.contains("epsilon")) {
    if (!j["epsilon"].is_number() || j["epsilon"].get<double>() <= 0 || j["epsilon"].get<double>() > 1) {
      problems.add(where, "'epsilon' must be a number in (0, 1]");
    } else {
      layer.epsilon = j["epsilon"].get<double>();
    }
  }
  if (layer.type == "Reshape") {
    const json* target = j.contains("target_shape") ? &j["target_shape"] : nullptr;
    bool ok = target && target->is_array() && !target->empty();
    int inferred = 0;
    for (size_t i = 0; ok && i < target->size(); ++i) {
      const json& d = (*target)[i];
      ok = d.is_number_integer() &&
           (d.get<int64_t>() == -1 || (d.get<int64_t>() >= 1 && d.get<int64_t>() <= kMaxSampleElements));
      if (ok && d.get<int64_t>() == -1) ok = ++inferred == 1;
      if (ok) layer.target_shape.push_back(d.get<int64_t>());
    }
    if (!ok) {
      problems.add(where, "'target_shape' must list positive integers per sample (one may be -1)");
      layer.target_shape.clear();
    }
  }
}

// Dense's and Conv2D's activation, use_bias and initializers.
void read_product_attributes(const json& j, const std::string& where, LayerSpec& layer, Problems& problems) {
  if (layer.type == "Dense" || layer.type == "Conv2D") {
    if (j.contains("activation")) {
      if (!j["activation"].is_string() || !kActivations.count(j["activation"].get<std::string>())) {
        problems.add(where, "unknown activation " + describe(j["activation"]) +
                                " (expected none, relu, sigmoid, tanh or softmax)");
      } else {
        layer.activation = j["activation"].get<std::string>();
        if (layer.activation == "linear") layer.activation = "none";
      }
    }
    if (j.contains("use_bias")) {
      if (!j["use_bias"].is_boolean())
        problems.add(where, "'use_bias' must be true or false");
      else
        layer.use_bias = j["use_bias"].get<bool>();
    }
    if (j.contains("kernel_initializer")) {
      if (auto init = parse_initializer(j["kernel_initializer"], problems, where))
        layer.kernel_initializer = *init;
    }
    if (j.contains("bias_initializer")) {
      if (auto init = parse_initializer(j["bias_initializer"], problems, where))
        layer.bias_initializer = *init;
    }
  }
}

LayerSpec parse_layer(const json& j, size_t index, bool functional, Problems& problems) {
  LayerSpec layer;
  if (!j.is_object()) {
    problems.add("layer " + std::to_string(index), "must be an object");
    return layer;
  }
  layer.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>()
                                                           : "layer" + std::to_string(index);
  if (!j.contains("type") || !j["type"].is_string()) {
    problems.add(layer_label(layer), "missing 'type'");
    return layer;
  }
  layer.type = j["type"].get<std::string>();
  const std::string where = layer_label(layer);
  auto type = kLayerTypes.find(layer.type);
  if (type == kLayerTypes.end()) {
    problems.add(where, "unknown layer type (supported: " + supported_types() + ")");
  }
  for (const auto& [key, value] : j.items()) {
    if (!known_key(key)) {
      problems.add(where, "unknown attribute '" + key + "'");
    } else if (type != kLayerTypes.end() && !kCommonKeys.count(key) && !type->second.count(key)) {
      problems.add(where, "'" + key + "' does not apply to " + layer.type);
    }
  }
  read_layer_inputs(j, functional, where, layer, problems);
  read_layer_sizes(j, where, layer, problems);
  read_window_attributes(j, type, where, layer, problems);
  read_layer_parameters(j, where, layer, problems);
  read_product_attributes(j, where, layer, problems);
  if (j.contains("stage")) {
    layer.stage = parse_stage(j["stage"]);
    if (!layer.stage)
      problems.add(where, "'stage' must be an integer in [0, " + std::to_string(kMaxStage) + "]");
  }
  return layer;
}

std::optional<InputSpec> parse_input(const json& j, Problems& problems) {
  if (!j.is_object() || !j.contains("shape") || !j["shape"].is_array() || j["shape"].empty()) {
    problems.add("input", "needs a non-empty 'shape' (per sample, without the batch axis)");
    return std::nullopt;
  }
  InputSpec input;
  input.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : "input";
  int64_t elements = 1;
  for (const auto& d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > kMaxSampleElements / elements) {
      problems.add("input '" + input.name + "'", "shape dimensions must be positive integers with at most " +
                                                     std::to_string(kMaxSampleElements) +
                                                     " elements per sample");
      return std::nullopt;
    }
    elements *= d.get<int64_t>();
    input.shape.push_back(d.get<int64_t>());
  }
  if (j.contains("dtype") && j["dtype"] != "float32") {
    const std::string what = "dtype " + describe(j["dtype"]) + " is not supported (float32 only)";
    if (j["dtype"].is_string()) {
      problems.add_unsupported("input '" + input.name + "'", what);
    } else {
      problems.add("input '" + input.name + "'", "'dtype' must be a string such as \"float32\"");
    }
  }
  return input;
}

// Stages are PopART-style: all layers or none, non-negative, each used stage contiguous from 0,
// and a layer never reads from a later stage.
void check_stages(ModelSpec& spec, Problems& problems) {
  size_t annotated = 0;
  for (const auto& layer : spec.layers)
    annotated += layer.stage.has_value();
  spec.stages.assign(spec.layers.size(), 0);
  if (annotated == 0) return;
  if (annotated != spec.layers.size()) {
    problems.add("", "stage annotations must be on every layer or on none (" + std::to_string(annotated) +
                         " of " + std::to_string(spec.layers.size()) + " have one)");
    return;
  }
  std::map<std::string, int> stage_of;
  std::set<int> used;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    spec.stages[i] = *layer.stage;
    used.insert(*layer.stage);
    stage_of[layer.name] = *layer.stage;
    for (const auto& in : layer.inputs) {
      auto it = stage_of.find(in);
      if (it != stage_of.end() && it->second > *layer.stage) {
        problems.add(layer_label(layer), "stage " + std::to_string(*layer.stage) + " reads '" + in +
                                             "' from later stage " + std::to_string(it->second));
      }
    }
  }
  if (*used.rbegin() + 1 != static_cast<int>(used.size())) {
    problems.add("", "stages must be numbered 0.." + std::to_string(used.size() - 1) + " without gaps");
  }
  spec.num_stages = static_cast<int>(used.size());
}

// Wires sequential layers in order and checks functional inputs refer to earlier nodes.
void check_wiring(ModelSpec& spec, bool functional, const json& j, Problems& problems) {
  std::set<std::string> names = {spec.input.name};
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    LayerSpec& layer = spec.layers[i];
    if (!names.insert(layer.name).second) problems.add(layer_label(layer), "name is used twice");
    if (!functional) {
      layer.inputs = {i == 0 ? spec.input.name : spec.layers[i - 1].name};
      continue;
    }
    for (const auto& in : layer.inputs) {
      bool earlier = in == spec.input.name;
      for (size_t k = 0; k < i && !earlier; ++k)
        earlier = spec.layers[k].name == in;
      if (!earlier)
        problems.add(layer_label(layer), "input '" + in + "' is not the model input or an earlier layer");
    }
  }
  if (spec.layers.empty()) {
    problems.add("", "the model has no layers");
    return;
  }
  if (!functional) {
    spec.output = spec.layers.back().name;
  } else if (!j.contains("outputs") || !j["outputs"].is_array() || j["outputs"].size() != 1 ||
             !j["outputs"][0].is_string()) {
    problems.add("", "'outputs' must list exactly one layer name");
  } else {
    spec.output = j["outputs"][0].get<std::string>();
    if (!names.count(spec.output)) problems.add("", "output '" + spec.output + "' names no layer");
  }
}

// The keys a spec may have at its top level; any other is a typo that would otherwise be ignored.
const std::set<std::string> kTopLevelKeys = {"name",   "type",    "input",    "inputs",
                                             "layers", "nodes",   "outputs",  "stage_assignment",
                                             "loss",   "metrics", "optimizer"};

std::string join(const std::set<std::string>& words) {
  std::string out;
  for (const auto& word : words)
    out += (out.empty() ? "" : ", ") + word;
  return out;
}

// Reads a document without building it, to learn where and why it stops being JSON. json::parse
// loses the position for some errors (a number too large for a double throws out_of_range, which
// has no byte offset); the SAX interface reports every error with one.
class JsonErrorLocator final : public nlohmann::json_sax<json> {
public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) override {
    position_ = position;
    message_ = error.what();
    return false;
  }

  // The 1-based offset where the parser stopped (at most one past the end).
  size_t position() const { return position_; }
  // What went wrong, without nlohmann's "[json.exception.parse_error.101] parse error at line L,
  // column C: " prefix, which repeats what PATH:LINE:COLUMN says.
  std::string message() const {
    std::string what = message_;
    if (const size_t bracket = what.find("] ");
        what.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    if (what.rfind("parse error", 0) == 0) {
      if (const size_t colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    }
    return what;
  }

private:
  size_t position_ = 0;
  std::string message_;
};

// Parses text, or says where it stops being JSON as PATH:LINE:COLUMN (where the parser stopped,
// 1-based, as nlohmann's own messages count), as compilers and editors do. Specs are small, so
// reading one twice when it is valid costs nothing a user would notice.
StatusOr<json> parse_json(std::string_view text, const std::string& path) {
  JsonErrorLocator locator;
  if (json::sax_parse(text, &locator)) return json::parse(text);
  const size_t end = std::min<size_t>(locator.position() == 0 ? 0 : locator.position() - 1, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return invalid_argument(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                          ": not valid JSON: " + locator.message());
}

} // namespace

StatusOr<ModelSpec> parse_graph_spec(std::string_view text, const std::string& path) {
  if (json_nesting_depth(text) > kMaxJsonNesting) {
    return invalid_argument(path + ": nested more than " + std::to_string(kMaxJsonNesting) + " levels deep");
  }
  IPU_ASSIGN_OR_RETURN(json j, parse_json(text, path));
  return parse_graph_spec(j, path);
}

StatusOr<ModelSpec> parse_graph_spec(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return invalid_argument(path + ": the spec must be a JSON object");
  Problems problems(path);
  for (const auto& [key, value] : j.items()) {
    if (!kTopLevelKeys.count(key)) {
      problems.add("", "unknown top-level key '" + key + "' (expected " + join(kTopLevelKeys) + ")");
    }
  }
  ModelSpec spec;
  spec.path = path;
  spec.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : "model";
  const std::string form = j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  const bool functional = form == "functional";
  if (form != "sequential" && form != "functional") {
    problems.add("", "'type' must be \"sequential\" or \"functional\"");
    return problems.status();
  }
  if (functional) {
    if (!j.contains("inputs") || !j["inputs"].is_array() || j["inputs"].size() != 1) {
      problems.add("", "'inputs' must list exactly one input");
    } else if (auto input = parse_input(j["inputs"][0], problems)) {
      spec.input = *input;
    }
  } else if (!j.contains("input")) {
    problems.add("", "missing 'input'");
  } else if (auto input = parse_input(j["input"], problems)) {
    spec.input = *input;
  }
  const char* list_key = functional ? "nodes" : "layers";
  if (!j.contains(list_key) || !j[list_key].is_array()) {
    problems.add("", std::string("missing '") + list_key + "' list");
    return problems.status();
  }
  for (size_t i = 0; i < j[list_key].size(); ++i)
    spec.layers.push_back(parse_layer(j[list_key][i], i, functional, problems));
  check_wiring(spec, functional, j, problems);
  if (j.contains("stage_assignment")) {
    const json& list = j["stage_assignment"];
    bool per_layer = false;
    for (const auto& layer : spec.layers)
      per_layer = per_layer || layer.stage.has_value();
    if (per_layer) {
      problems.add("", "give either per-layer 'stage' or a model-level 'stage_assignment', not both");
    } else if (!list.is_array() || list.size() != spec.layers.size()) {
      problems.add("", "'stage_assignment' has " + std::to_string(list.is_array() ? list.size() : 0) +
                           " entries for " + std::to_string(spec.layers.size()) + " layers");
    } else {
      for (size_t i = 0; i < list.size(); ++i) {
        spec.layers[i].stage = parse_stage(list[i]);
        if (!spec.layers[i].stage) {
          problems.add("", "'stage_assignment' entry " + std::to_string(i) + " must be an integer in [0, " +
                               std::to_string(kMaxStage) + "]");
        }
      }
    }
  }
  check_stages(spec, problems);
  parse_training(j, spec, problems);
  if (!problems.empty()) return problems.status();
  return spec;
}

Status apply_stage_assignment(ModelSpec& spec, const std::vector<int>& stages) {
  Problems problems(spec.path);
  if (stages.size() != spec.layers.size()) {
    problems.add("", "--stage-assignment has " + std::to_string(stages.size()) + " entries for " +
                         std::to_string(spec.layers.size()) + " layers");
    return problems.status();
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i] < 0 || stages[i] > kMaxStage) {
      problems.add("", "--stage-assignment entry " + std::to_string(i) + " is outside [0, " +
                           std::to_string(kMaxStage) + "]");
      return problems.status();
    }
    spec.layers[i].stage = stages[i];
  }
  check_stages(spec, problems);
  return problems.empty() ? Status() : problems.status();
}

} // namespace ipu::frontend
