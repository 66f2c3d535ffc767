// ipurun's user-data files: `--input [NAME=]FILE` and `--output FILE` / `--output-dir DIR`, as
// NumPy .npy or ONNX TensorProto .pb (the format of ONNX's test data), chosen by extension.
#pragma once

#include <string>

#include "runtime/base/status.h"
#include "runtime/data/dataset.h"
#include "runtime/data/npy.h"

namespace ipu::cli {

// Reads the samples of `--input [NAME=]FILE`. A NAME must be the executable's input name
// (`input_name`; InvalidArgument naming both otherwise).
StatusOr<data::Dataset> read_input(const std::string& spec, const std::string& input_name);

// Writes `array` as .pb (TensorProto named `name`) if `path` ends in .pb, else as .npy; atomic.
Status write_output(const std::string& path, const data::NpyArray& array, const std::string& name);

// DIR/<name>.npy, with characters that cannot be in a file name ('/', NUL) replaced by '_'.
std::string output_dir_path(const std::string& dir, const std::string& name);

}  // namespace ipu::cli
