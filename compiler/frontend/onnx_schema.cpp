#include "compiler/frontend/onnx_schema.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

namespace ipu::frontend {
namespace {

int ai_onnx_opset(const onnx::ModelProto& model) {
  for (const auto& op_set : model.opset_import()) {
    if (op_set.domain().empty() || op_set.domain() == "ai.onnx") return static_cast<int>(op_set.version());
  }
  return -1;
}

std::string versions_text(const std::vector<int>& versions) {
  std::string out;
  for (int v : versions)
    out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

// Schema versions released after the ONNX this build's libonnx implements (1.12: opset 17), for
// the ops of the converter table. Without them a model of a newer opset would be read with the
// newest schema libonnx knows, whose semantics may differ (ReduceMean-18 takes its axes as an
// input, Split-18 has num_outputs). Versions that only add element types are listed too.
const std::map<std::string_view, std::vector<int>>& later_versions() {
  static const std::map<std::string_view, std::vector<int>> table = {
      {"AveragePool", {19, 22}},
      {"Cast", {19, 21, 23, 24, 25}},
      {"Constant", {19, 21, 23, 24, 25}},
      {"ConstantOfShape", {20, 21, 23, 24, 25}},
      {"Conv", {22}},
      {"Dropout", {22}},
      {"Elu", {22}},
      {"Equal", {19}},
      {"Flatten", {21, 23, 24, 25}},
      {"GRU", {22}},
      {"Gelu", {20}},
      {"GlobalAveragePool", {22}},
      {"HardSigmoid", {22}},
      {"HardSwish", {22}},
      {"Identity", {19, 21, 23, 24, 25}},
      {"LSTM", {22}},
      {"MaxPool", {22}},
      {"NegativeLogLikelihoodLoss", {22}},
      {"Pad", {18, 19, 21, 23, 24, 25}},
      {"RNN", {22}},
      {"ReduceMax", {18, 20}},
      {"ReduceMean", {18}},
      {"ReduceMin", {18, 20}},
      {"ReduceProd", {18}},
      {"Reshape", {19, 21, 23, 24, 25}},
      {"Selu", {22}},
      {"Shape", {19, 21, 23, 24, 25}},
      {"Size", {19, 21, 23, 24, 25}},
      {"Softplus", {22}},
      {"Softsign", {22}},
      {"Split", {18}},
      {"Squeeze", {21, 23, 24, 25}},
      {"Transpose", {21, 23, 24, 25}},
      {"Unsqueeze", {21, 23, 24, 25}},
  };
  return table;
}

// The highest ai.onnx opset libonnx has schemas for.
int newest_known_opset() {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
}

} // namespace

StatusOr<int> model_opset(const onnx::ModelProto& model, const std::string& path) {
  const int opset = ai_onnx_opset(model);
  if (opset < 1) {
    for (const auto& node : model.graph().node()) {
      if (node.domain().empty() || node.domain() == "ai.onnx") {
        return invalid_argument(path + ": the model imports no ai.onnx opset, which its " + node.op_type() +
                                " nodes need");
      }
    }
  }
  return opset;
}

StatusOr<int> schema_version(const std::string& op_type, int opset, const OnnxOpDef& def) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op_type, opset, "");
  int version = schema ? schema->since_version() : -1;
  if (opset > newest_known_opset()) {
    auto later = later_versions().find(op_type);
    if (later != later_versions().end()) {
      for (int v : later->second) {
        if (v <= opset) version = std::max(version, v);
      }
    }
  }
  if (version < 0)
    return invalid_argument("op " + op_type + " does not exist in opset " + std::to_string(opset));
  if (std::find(def.versions.begin(), def.versions.end(), version) == def.versions.end()) {
    return unsupported("version " + std::to_string(version) + " of " + op_type + " (opset " +
                       std::to_string(opset) +
                       ") is not supported; supported versions: " + versions_text(def.versions));
  }
  return version;
}

Status check_attributes(const onnx::NodeProto& node, const OnnxOpDef& def, int opset, int version) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
  if (schema && schema->since_version() != version) schema = nullptr; // a version newer than libonnx's
  std::string unknown;
  for (const auto& a : node.attribute()) {
    if (a.name().rfind("__", 0) == 0) continue; // framework annotations such as PopART's
    const bool read =
        std::find(def.attributes.begin(), def.attributes.end(), a.name()) != def.attributes.end();
    if (!read || (schema && !schema->attributes().count(a.name()))) {
      unknown += (unknown.empty() ? "'" : ", '") + a.name() + "'";
    }
  }
  if (!unknown.empty()) return unsupported("attribute " + unknown + " not supported");
  return Status();
}

} // namespace ipu::frontend
