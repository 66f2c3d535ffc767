// Tensors the user hands the tools as files: NumPy .npy or ONNX TensorProto .pb (the format of
// ONNX's test data), chosen by extension. Used by `ipurun --input` and `--constant-input`.
#pragma once

#include <string>

#include "runtime/base/status.h"
#include "runtime/data/npy.h"

namespace ipu::cli {

// A .pb file is read as a TensorProto, anything else as .npy. Errors name the file: NotFound /
// IoError from the file system, InvalidArgument / DataLoss / Unsupported for the content.
StatusOr<data::NpyArray> read_tensor_file(const std::string& path);

} // namespace ipu::cli
