// A model file parsed once, for everything a compile asks of it: its identity for the executable
// cache, its weight values, what it says about training and pipeline stages (the options that
// default from the model), and its forward graph.
//
// The identity has two parts: the structure, which shapes the compiled program and goes into the
// cache key, and the weight values, which only become the executable's initial tensor values and
// so are kept out of the key (docs/cache.md). Models that differ only in weights share one
// compiled program; the weights are swapped in on a hit.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/frontend/forward_graph.h"
#include "compiler/frontend/graph_spec.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/passes/training.h"
#include "runtime/base/status.h"

namespace onnx {
class ModelProto;
}

namespace ipu::frontend {

struct ModelFingerprint {
  std::string structure_sha256;
  std::string weights_sha256;
};

// What a model says about training before the options override it. A JSON spec names its loss
// and optimizer; an ONNX model names neither and trains with SGD at OptimizerConfig's defaults
// (no momentum) under the loss the options give.
struct ModelTraining {
  std::string loss_name; // empty: the model has no loss
  passes::LossConfig loss;
  passes::OptimizerConfig optimizer;
  std::optional<std::vector<passes::MetricConfig>> metrics; // a spec's; none: the loss's default
};

class LoadedModel {
public:
  // Never fails: bytes that do not parse are kept as a problem that forward_graph reports, and
  // every other question gets the answer for a model without stages, weights or training
  // settings. ONNX or JSON is chosen by looks_like_onnx.
  static LoadedModel parse(std::string_view text, const std::string& path);

  LoadedModel(LoadedModel&&) noexcept;
  LoadedModel& operator=(LoadedModel&&) noexcept;
  ~LoadedModel();

  const std::string& path() const { return m_path; }
  bool is_onnx() const { return m_is_onnx; }

  // ONNX: the ModelProto with the values of its FLOAT initializers removed (names, dims and data
  // types kept), serialized deterministically; the weights are those values. Initializers a
  // converter may fold into constants (folded_float_inputs: BatchNormalization's statistics) keep
  // their values: they shape the program. JSON spec: the parsed document re-serialized with
  // sorted keys and no whitespace; a spec holds no weight values (its initializers are seeded
  // functions of the structure), so its weights part is constant. Bytes that parse as neither are
  // hashed whole as structure: the compile then reports the problem.
  const ModelFingerprint& fingerprint() const { return m_fingerprint; }

  // The initial weight values by tensor name, as raw little-endian float32 bytes: the values the
  // ONNX importer gives the weights named after FLOAT initializers. Empty for a JSON spec.
  // Errors: InvalidArgument (not an ONNX model), those of decoding an initializer.
  StatusOr<std::map<std::string, std::string>> weights() const;

  // The pipeline stages the model declares, or `stage_assignment` gives it when non-empty; 1 for
  // a model without stages or whose stages are not valid (forward_graph says why).
  int stage_count(const std::vector<int>& stage_assignment) const;

  // What a stage assignment numbers, in order: the spec's layers or the ONNX graph's nodes (a
  // node without a name as "#INDEX"); empty for a model that does not parse.
  std::vector<std::string> stage_units() const;

  // The graph outputs an ONNX loss node (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss)
  // computes as its output 0, in the graph's output order: the loss a training compile takes from
  // the model (docs/training.md, "Models whose graph ends in their loss"). Empty for a JSON spec
  // and for a model that does not parse.
  struct LossOutput {
    std::string output; // the graph output
    std::string scores; // the loss node's input 0: what the model predicts
  };
  std::vector<LossOutput> loss_outputs() const;

  // The defaults of a model that does not parse: its compile fails, so nothing is stored under
  // a key made from them.
  ModelTraining training() const;

  // The forward graph for `options` (a JSON spec uses batch_size, stage_assignment and
  // training). Consumes the model: an ONNX model moves into its graph's source_onnx. Errors:
  // those of import_onnx and of parse_graph_spec, apply_stage_assignment and build_forward_graph.
  StatusOr<ForwardGraph> forward_graph(const OnnxImportOptions& options) &&;
  // The same from a copy, leaving the model as it is: the automatic pipeline split builds a graph
  // to measure before the one it compiles.
  StatusOr<ForwardGraph> forward_graph(const OnnxImportOptions& options) const&;

private:
  LoadedModel(std::string path, bool is_onnx);

  std::string m_path;
  bool m_is_onnx = false;
  ModelFingerprint m_fingerprint;
  std::unique_ptr<onnx::ModelProto> m_onnx; // null unless an ONNX model that parsed
  // JSON: the spec, or why the text is not one. ONNX: why the ModelProto does not parse, when
  // m_onnx is null.
  StatusOr<ModelSpec> m_spec;
};

} // namespace ipu::frontend
