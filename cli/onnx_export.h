// `ipurun train --export-onnx FILE`: the executable's ONNX model written back with the trained
// weights as its initializers, loadable by ONNX Runtime, PyTorch or ipucc itself.
#pragma once

#include <map>
#include <string>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"
#include "runtime/session/checkpoint.h"

namespace ipu::cli {

// FailedPrecondition if the executable was not compiled from an ONNX model, so has nothing to
// export: checked before training, so the answer comes in milliseconds.
Status check_exportable(const format::Executable& exe);

// check_exportable; DataLoss if the stored model does not parse or lacks a weight. The file is
// written atomically, only over nothing or an earlier output (runtime/base/output_file.h).
Status export_onnx(const format::Executable& exe, const std::map<std::string, session::NamedTensor>& weights,
                   const std::string& path);

} // namespace ipu::cli
