// ONNX models in: ModelProto (Debian's libonnx protobuf) → the forward IR graph.
//
// Initializers become weights (trainable in --mode train), Constant nodes and integer
// initializers become compile-time constants, a dynamic batch axis is bound to the micro-batch
// size, and PopART's integer node attributes `__pipeline_stage` / `__ipu_number` give the
// pipeline stages. Every node that cannot be imported is reported at once (docs/onnx.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/frontend/forward_graph.h"
#include "runtime/base/status.h"

namespace ipu::frontend {

struct OnnxImportOptions {
  int64_t batch_size = 1;
  std::vector<int> stage_assignment;  // per node, in node order; overrides the attributes
  bool training = false;              // ops whose training semantics differ are refused
};

// Errors: InvalidArgument (not an ONNX model, malformed graph, bad stages, wrong shapes; every
// problem listed, each naming the file and the node), Unsupported (ops, opset versions,
// attributes or types ipucc does not implement; every offending node listed).
StatusOr<ForwardGraph> import_onnx(std::string_view bytes, const std::string& path, const OnnxImportOptions& options);

// True if `bytes` should be read as ONNX rather than as a JSON graph spec: the path ends in
// .onnx, or the content does not start like JSON.
bool looks_like_onnx(std::string_view bytes, const std::string& path);

}  // namespace ipu::frontend
