// The op schema versions of an ONNX model: the ai.onnx opset it imports, and per node the
// `since_version` in effect at that opset, from libonnx's schema registry and, for opsets newer
// than libonnx's, the versions released since (docs/onnx.md).
#pragma once

#include <string>

#include "compiler/frontend/onnx_ops.h"
#include "runtime/base/status.h"

namespace onnx {
class ModelProto;
class NodeProto;
} // namespace onnx

namespace ipu::frontend {

// The model's ai.onnx opset (domain "" or "ai.onnx"), or -1 if it imports none. A model of another
// domain's ops only (ONNX's ai.onnx.preview.training tests import nothing else) is valid, and its
// nodes unsupported, each named by the importer; a node of the default domain without the ai.onnx
// import is a malformed model (InvalidArgument naming `path`).
StatusOr<int> model_opset(const onnx::ModelProto& model, const std::string& path);

// The schema version of `op_type` in effect at `opset`: InvalidArgument if the op does not exist
// in that opset, Unsupported if `def` does not implement that version.
StatusOr<int> schema_version(const std::string& op_type, int opset, const OnnxOpDef& def);

// Every attribute must be one the converter reads and, where libonnx has the node's schema
// version, one that version has: an opset-6 attribute (Add's `broadcast`) on a later version is
// not read with the old meaning.
Status check_attributes(const onnx::NodeProto& node, const OnnxOpDef& def, int opset, int version);

} // namespace ipu::frontend
