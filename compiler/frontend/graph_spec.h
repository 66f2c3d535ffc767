// The JSON graph spec (docs/graph_spec.md): a Keras-like model description in Sequential or
// Functional form, parsed and validated into a ModelSpec, then built into an IR graph.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/frontend/forward_graph.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/training.h"
#include "runtime/base/status.h"

namespace ipu::frontend {

struct InitializerSpec {
  std::string type = "zeros"; // "glorot_uniform" or "zeros"
  uint64_t seed = 0;
};

struct LayerSpec {
  std::string name;
  std::string type; // Dense, Flatten, Conv2D, MaxPooling2D, AveragePooling2D, Dropout, BatchNormalization,
                    // Reshape, Add, Concatenate
  std::vector<std::string> inputs; // one, or several for Add and Concatenate
  int64_t units = 0;
  std::string activation = "none"; // none, relu, sigmoid, tanh, softmax
  bool use_bias = true;
  InitializerSpec kernel_initializer{"glorot_uniform", 0};
  InitializerSpec bias_initializer;
  std::optional<int> stage;
  // Conv2D and pooling (height, width).
  int64_t filters = 0;
  std::array<int64_t, 2> kernel_size{0, 0};
  std::array<int64_t, 2> pool_size{2, 2};
  std::optional<std::array<int64_t, 2>> strides; // default: 1 (Conv2D), pool_size (pooling)
  std::string padding = "valid";                 // valid or same
  double rate = 0.0;                             // Dropout
  double epsilon = 1e-3;                         // BatchNormalization
  std::vector<int64_t> target_shape;             // Reshape, per sample; one entry may be -1
  int64_t axis = -1;                             // Concatenate, counting the batch axis (Keras)
};

struct InputSpec {
  std::string name;
  std::vector<int64_t> shape; // per sample, without the batch axis
};

struct ModelSpec {
  std::string path; // for messages
  std::string name;
  InputSpec input;
  std::vector<LayerSpec> layers; // topological order
  std::string output;            // name of the layer whose output the model returns
  passes::LossConfig loss;
  std::optional<std::vector<passes::MetricConfig>> metrics; // the spec's "metrics"; none: the loss's default
  passes::OptimizerConfig optimizer;
  int num_stages = 1;
  std::vector<int> stages; // stage of each layer (all zero without annotations)
};

// Parses and validates; reports every problem found at once, one per line, each starting with
// the file and the layer ("model.json: layer 'd3' (Dense): 'units' must be a positive integer").
// InvalidArgument, or Unsupported when a problem is a loss, optimizer or input dtype ipucc does
// not implement.
StatusOr<ModelSpec> parse_graph_spec(std::string_view text, const std::string& path);

// parse_graph_spec of a document already parsed (LoadedModel), nested at most kMaxJsonNesting deep.
StatusOr<ModelSpec> parse_graph_spec(const nlohmann::json& document, const std::string& path);

// Applies a stage assignment given on the command line, with the same checks as the spec's.
Status apply_stage_assignment(ModelSpec& spec, const std::vector<int>& stages);

// Builds the forward IR graph for micro-batch `batch_size`, with deterministic initial weights.
// `training` refuses layers that only have inference semantics here (Dropout).
StatusOr<ForwardGraph> build_forward_graph(const ModelSpec& spec, int64_t batch_size, bool training = false);

} // namespace ipu::frontend
