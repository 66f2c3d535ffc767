#include "compiler/frontend/loaded_model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <utility>

#include "compiler/frontend/json_nesting.h"
#include "compiler/frontend/onnx_ops.h"
#include "runtime/base/sha256.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::frontend {
namespace {

// Float initializers that some node may fold into compile-time constants: their values shape
// the program, so they are structure, not weights.
std::set<std::string> folded_initializers(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const auto& node : graph.node()) {
    const std::vector<int>* folded = folded_float_inputs(node.op_type());
    if (!folded) continue;
    for (int index : *folded) {
      if (index < node.input_size()) names.insert(node.input(index));
    }
  }
  return names;
}

// The model serialized deterministically (protobuf's default serialization may order map
// entries differently between runs) without the values of its weights: they are moved out for
// the serialization and back, never copied.
std::string structure_bytes(onnx::ModelProto& model) {
  // mutable_graph() below gives a model without a graph an empty one, which its bytes have long
  // held (and so its key); the model itself must stay without it, for the import to report that.
  const bool had_graph = model.has_graph();
  const std::set<std::string> folded = folded_initializers(model.graph());
  std::vector<onnx::TensorProto*> weights;
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.data_type() == onnx::TensorProto::FLOAT && !folded.count(init.name())) weights.push_back(&init);
  }
  // Released and set back rather than swapped with an empty string, so a weight's raw_data keeps
  // its presence bit (proto2) and the bytes are those of a model with the values cleared.
  std::vector<std::string*> raw(weights.size(), nullptr);
  std::vector<google::protobuf::RepeatedField<float>> floats(weights.size());
  auto swap_values = [&] {
    for (size_t i = 0; i < weights.size(); ++i) {
      std::string* held = weights[i]->release_raw_data();
      weights[i]->set_allocated_raw_data(raw[i]);
      raw[i] = held;
      weights[i]->mutable_float_data()->Swap(&floats[i]);
    }
  };
  swap_values();
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    model.SerializeToCodedStream(&coded);
  }
  swap_values();
  if (!had_graph) model.clear_graph();
  return out;
}

StatusOr<std::map<std::string, std::string>> onnx_weights(const onnx::ModelProto& model,
                                                          const std::string& path) {
  std::map<std::string, std::string> weights;
  for (const auto& init : model.graph().initializer()) {
    if (init.data_type() != onnx::TensorProto::FLOAT) continue;
    IPU_ASSIGN_OR_RETURN(data::NpyArray array,
                         data::decode_tensor_proto(init, path + ": initializer '" + init.name() + "'"));
    weights[init.name()] = std::move(array.data);
  }
  return weights;
}

// Names and values with their lengths, in name order, so no two different sets hash alike. The
// weights are hashed where the model holds them, never copied: a large model's values would
// otherwise be written into fresh memory twice before a cache hit could use any of them.
class WeightsDigest {
public:
  void add(std::string_view name, std::string_view value) {
    m_hash.update(std::to_string(name.size()) + ":");
    m_hash.update(name);
    m_hash.update(std::to_string(value.size()) + ":");
    m_hash.update(value);
  }
  std::string hex() {
    const std::array<uint8_t, 32> digest = m_hash.finish();
    return to_hex(digest.data(), digest.size());
  }

private:
  Sha256 m_hash;
};

std::string no_weights_digest() {
  return WeightsDigest().hex();
}

// The digest of onnx_weights(model, path), or its error.
StatusOr<std::string> onnx_weights_digest(const onnx::ModelProto& model, const std::string& path) {
  // Of two alike names, the last counts, as in onnx_weights.
  std::map<std::string_view, const onnx::TensorProto*> by_name;
  for (const auto& init : model.graph().initializer()) {
    if (init.data_type() == onnx::TensorProto::FLOAT) by_name[init.name()] = &init;
  }
  WeightsDigest digest;
  std::string scratch;
  for (const auto& [name, init] : by_name) {
    IPU_ASSIGN_OR_RETURN(
        const std::string_view value,
        data::view_tensor_proto_data(*init, path + ": initializer '" + init->name() + "'", scratch));
    digest.add(name, value);
  }
  return digest.hex();
}

ModelTraining onnx_training() {
  ModelTraining t;
  t.loss.from_logits = true;
  t.optimizer.momentum = 0.0f;
  return t;
}

} // namespace

LoadedModel::LoadedModel(std::string path, bool is_onnx)
    : m_path(std::move(path)), m_is_onnx(is_onnx),
      m_spec(invalid_argument(m_path + ": not a JSON graph spec")) {}
LoadedModel::LoadedModel(LoadedModel&&) noexcept = default;
LoadedModel& LoadedModel::operator=(LoadedModel&&) noexcept = default;
LoadedModel::~LoadedModel() = default;

LoadedModel LoadedModel::parse(std::string_view text, const std::string& path) {
  LoadedModel model(path, looks_like_onnx(text, path));
  // Bytes that parse as neither format are keyed whole.
  const auto key_whole_text = [&] { model.m_fingerprint = {sha256_hex(text), no_weights_digest()}; };
  if (model.m_is_onnx) {
    auto proto = std::make_unique<onnx::ModelProto>();
    Status parsed = parse_onnx_model(text, path, *proto);
    if (!parsed.ok()) {
      model.m_spec = parsed; // forward_graph reports it
      key_whole_text();
      return model;
    }
    StatusOr<std::string> weights = onnx_weights_digest(*proto, path);
    if (weights.ok()) {
      model.m_fingerprint = {sha256_hex(structure_bytes(*proto)), std::move(*weights)};
    } else {
      key_whole_text();
    }
    model.m_onnx = std::move(proto);
    return model;
  }
  if (json_nesting_depth(text) <= kMaxJsonNesting) {
    const nlohmann::json document = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!document.is_discarded()) {
      model.m_fingerprint = {sha256_hex(document.dump()), no_weights_digest()};
      model.m_spec = parse_graph_spec(document, path);
      return model;
    }
  }
  key_whole_text();
  model.m_spec = parse_graph_spec(text, path); // not JSON: parsing the text again says where and why
  return model;
}

StatusOr<std::map<std::string, std::string>> LoadedModel::weights() const {
  if (!m_is_onnx) return std::map<std::string, std::string>();
  if (!m_onnx) return m_spec.status();
  return onnx_weights(*m_onnx, m_path);
}

int LoadedModel::stage_count(const std::vector<int>& stage_assignment) const {
  if (m_is_onnx) return m_onnx ? onnx_stage_count(*m_onnx, stage_assignment) : 1;
  if (!m_spec.ok()) return 1;
  if (stage_assignment.empty()) return std::max(1, m_spec->num_stages);
  ModelSpec spec = *m_spec;
  if (!apply_stage_assignment(spec, stage_assignment).ok()) return 1;
  return std::max(1, spec.num_stages);
}

std::vector<LoadedModel::LossOutput> LoadedModel::loss_outputs() const {
  std::vector<LossOutput> losses;
  if (!m_is_onnx || !m_onnx) return losses;
  std::map<std::string, std::string> scores_of_loss;
  for (const auto& node : m_onnx->graph().node()) {
    const bool ai_onnx = node.domain().empty() || node.domain() == "ai.onnx";
    if (ai_onnx && node.output_size() > 0 && node.input_size() > 0 &&
        (node.op_type() == "SoftmaxCrossEntropyLoss" || node.op_type() == "NegativeLogLikelihoodLoss"))
      scores_of_loss[node.output(0)] = node.input(0);
  }
  for (const auto& out : m_onnx->graph().output()) {
    auto found = scores_of_loss.find(out.name());
    if (found != scores_of_loss.end()) losses.push_back({out.name(), found->second});
  }
  return losses;
}

std::vector<std::string> LoadedModel::stage_units() const {
  std::vector<std::string> units;
  if (m_is_onnx) {
    if (!m_onnx) return units;
    for (int i = 0; i < m_onnx->graph().node_size(); ++i) {
      const std::string& name = m_onnx->graph().node(i).name();
      units.push_back(name.empty() ? "#" + std::to_string(i) : name);
    }
  } else if (m_spec.ok()) {
    for (const LayerSpec& layer : m_spec->layers)
      units.push_back(layer.name);
  }
  return units;
}

ModelTraining LoadedModel::training() const {
  if (m_is_onnx) return onnx_training();
  return m_spec.ok() ? ModelTraining{passes::loss_name(m_spec->loss.kind), m_spec->loss, m_spec->optimizer,
                                     m_spec->metrics}
                     : ModelTraining{};
}

StatusOr<ForwardGraph> LoadedModel::forward_graph(const OnnxImportOptions& options) && {
  if (m_is_onnx) {
    if (!m_onnx) return m_spec.status();
    return import_onnx(std::move(*m_onnx), m_path, options);
  }
  if (!m_spec.ok()) return m_spec.status();
  ModelSpec& spec = *m_spec;
  if (!options.stage_assignment.empty())
    IPU_RETURN_IF_ERROR(apply_stage_assignment(spec, options.stage_assignment));
  return build_forward_graph(spec, options.batch_size, options.training);
}

StatusOr<ForwardGraph> LoadedModel::forward_graph(const OnnxImportOptions& options) const& {
  if (m_is_onnx) {
    if (!m_onnx) return m_spec.status();
    return import_onnx(onnx::ModelProto(*m_onnx), m_path, options);
  }
  if (!m_spec.ok()) return m_spec.status();
  ModelSpec spec = *m_spec;
  if (!options.stage_assignment.empty())
    IPU_RETURN_IF_ERROR(apply_stage_assignment(spec, options.stage_assignment));
  return build_forward_graph(spec, options.batch_size, options.training);
}

} // namespace ipu::frontend
