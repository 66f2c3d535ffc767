// The ONNX graph's interface as the importer binds it (onnx_import.cpp): each graph input that is
// not an initializer becomes a model input, or a constant when --constant-input binds it, with its
// host dtype and whether its first axis is the micro-batch; each graph output becomes a model
// output the same way. Internal to the frontend.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

#include "compiler/frontend/forward_graph.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/onnx_ops.h"
#include "compiler/frontend/problems.h"

namespace ipu::frontend {

// Binds each graph input that is not an initializer to its --constant-input value, or adds it to
// `result`'s inputs. Returns the names of initializers and graph inputs, imported or not: a node
// reading one that failed to import is skipped, its problem having been reported.
std::set<std::string> import_graph_inputs(const onnx::GraphProto& g, const OnnxImportOptions& options,
                                          const std::set<std::string>& initializer_names,
                                          OnnxImportContext& ctx, ForwardGraph& result, Problems& problems);

// Adds the graph's outputs to `result`, each with its host dtype and whether it is batched.
void add_graph_outputs(const onnx::GraphProto& g, const OnnxImportOptions& options, OnnxImportContext& ctx,
                       ForwardGraph& result, Problems& problems);

} // namespace ipu::frontend
