// ONNX models in: ModelProto (Debian's libonnx protobuf) → the forward IR graph.
//
// Initializers become weights (trainable in --mode train), Constant nodes and integer
// initializers become compile-time constants, a dynamic batch axis is bound to the micro-batch
// size, and PopART's integer node attributes `__pipeline_stage` / `__ipu_number` give the
// pipeline stages. Every node that cannot be imported is reported at once (docs/onnx.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/frontend/forward_graph.h"
#include "compiler/passes/constant_folding.h"
#include "runtime/base/status.h"
#include "runtime/data/npy.h"

namespace onnx {
class ModelProto;
}

namespace ipu::frontend {

// A graph input bound to a value at compile time (`--constant-input NAME=FILE`): it is imported
// as a constant, like an integer initializer, and is no longer an input of the executable.
struct ConstantInput {
  data::NpyArray value; // dtype and shape must match the input's declaration
  std::string source;   // the file it came from, for messages
};

struct OnnxImportOptions {
  int64_t batch_size = 1;
  std::vector<int> stage_assignment;                    // per node, in node order; overrides the attributes
  bool training = false;                                // ops whose training semantics differ are refused
  std::map<std::string, ConstantInput> constant_inputs; // by graph input name
  // The target's memory per tile (0: unknown). A 2-D pool whose one plane would crowd a tile runs
  // as two 1-D pools over rows (convert_pool), since its vertices own whole planes.
  uint64_t bytes_per_tile = 0;
  // Computes what ops compute from constants alone (passes/constant_folding.h): values converters
  // need as constants (a Reshape's shape from Shape → Gather → Concat), and, once the graph is
  // imported, every such value the rest of the graph reads, so that no constant work reaches the
  // device. Without it nothing is folded, and such a Reshape is refused.
  passes::ConstantEvaluator evaluate_constants = nullptr;
};

// Errors: InvalidArgument (not an ONNX model, malformed graph, bad stages, wrong shapes, a
// constant input that names no graph input or whose value does not match its declaration; every
// problem listed, each naming the file and the node), Unsupported (ops, opset versions,
// attributes or types ipucc does not implement; every offending node listed).
StatusOr<ForwardGraph> import_onnx(std::string_view bytes, const std::string& path,
                                   const OnnxImportOptions& options);

// import_onnx of a parsed model, which becomes the graph's source_onnx (without its weights' data).
StatusOr<ForwardGraph> import_onnx(onnx::ModelProto model, const std::string& path,
                                   const OnnxImportOptions& options);

// Parses `bytes` into `model`. InvalidArgument naming `path` when they are not a ModelProto or
// exceed protobuf's 2 GiB limit.
Status parse_onnx_model(std::string_view bytes, const std::string& path, onnx::ModelProto& model);

// The pipeline stages a model declares (PopART's attributes, or `stage_assignment`) without
// importing it, for the options that default from the stage count before a compile and its cache
// key. 1 for a model without stages or whose stages are not valid (its import says why).
int onnx_stage_count(const onnx::ModelProto& model, const std::vector<int>& stage_assignment);

// True if `bytes` should be read as ONNX rather than as a JSON graph spec: the path ends in
// .onnx, or the content does not start like JSON.
bool looks_like_onnx(std::string_view bytes, const std::string& path);

} // namespace ipu::frontend
