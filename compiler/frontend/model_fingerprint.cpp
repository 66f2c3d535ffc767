#include "compiler/frontend/model_fingerprint.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include <set>

#include "compiler/frontend/json_nesting.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/onnx_ops.h"
#include "runtime/base/sha256.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::frontend {
namespace {

bool parse_onnx(std::string_view text, onnx::ModelProto& model) {
  return text.size() <= static_cast<size_t>(INT32_MAX) && model.ParseFromArray(text.data(), static_cast<int>(text.size()));
}

// Protobuf's default serialization may order map entries differently between runs; the
// deterministic one does not.
std::string deterministic_bytes(const onnx::ModelProto& model) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    model.SerializeToCodedStream(&coded);
  }
  return out;
}

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

// Names and values with their lengths, so no two different maps hash alike.
std::string weights_digest(const std::map<std::string, std::string>& weights) {
  std::string text;
  for (const auto& [name, value] : weights) {
    text += std::to_string(name.size()) + ":" + name + std::to_string(value.size()) + ":" + value;
  }
  return sha256_hex(text);
}

}  // namespace

ModelFingerprint fingerprint_model(std::string_view text, const std::string& path) {
  if (looks_like_onnx(text, path)) {
    onnx::ModelProto model;
    auto weights = model_weights(text, path);
    if (parse_onnx(text, model) && weights.ok()) {
      const std::set<std::string> folded = folded_initializers(model.graph());
      for (auto& init : *model.mutable_graph()->mutable_initializer()) {
        if (init.data_type() != onnx::TensorProto::FLOAT || folded.count(init.name())) continue;
        init.clear_raw_data();
        init.clear_float_data();
      }
      return {sha256_hex(deterministic_bytes(model)), weights_digest(*weights)};
    }
  } else if (json_nesting_depth(text) <= kMaxJsonNesting) {
    nlohmann::json spec = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!spec.is_discarded()) return {sha256_hex(spec.dump()), weights_digest({})};
  }
  return {sha256_hex(text), weights_digest({})};
}

StatusOr<std::map<std::string, std::string>> model_weights(std::string_view text, const std::string& path) {
  std::map<std::string, std::string> weights;
  if (!looks_like_onnx(text, path)) return weights;
  onnx::ModelProto model;
  if (!parse_onnx(text, model)) return invalid_argument(path + ": not an ONNX model");
  for (const auto& init : model.graph().initializer()) {
    if (init.data_type() != onnx::TensorProto::FLOAT) continue;
    IPU_ASSIGN_OR_RETURN(data::NpyArray array, data::decode_tensor_proto(init, path + ": initializer '" + init.name() + "'"));
    weights[init.name()] = std::move(array.data);
  }
  return weights;
}

}  // namespace ipu::frontend
