// ipurun's user-data files: `--input [NAME=]FILE` and `--output FILE` / `--output-dir DIR`, as
// NumPy .npy or ONNX TensorProto .pb (the format of ONNX's test data), chosen by extension.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/data/npy.h"
#include "runtime/format/executable.pb.h"

namespace ipu::cli {

// The model's input names, quoted, for messages: "'x', 'axes'".
std::string input_names(const format::Executable& exe);

// Reads one array per model input (format::ModelIo, in the executable's order) from `--input`
// values: NAME=FILE binds by name, a bare FILE takes the next input not named elsewhere. Every
// input must be given exactly once.
StatusOr<std::vector<data::NpyArray>> read_inputs(const std::vector<std::string>& specs,
                                                  const format::Executable& exe);

// `--output` names its format by its extension: .npy or .pb (kInvalidArgument otherwise).
Status check_output_extension(const std::string& path);

// Writes `array` as .pb (TensorProto named `name`) if `path` ends in .pb, else as .npy; atomic,
// and only over nothing or an earlier output (runtime/base/output_file.h).
Status write_output(const std::string& path, const data::NpyArray& array, const std::string& name);

// DIR/<file>.npy for each output name, the files distinct_file_names gives (readable where the
// name is a safe file name, never one file for two outputs: 'a/b' and 'a_b', 'Y' and 'y').
std::map<std::string, std::string> output_dir_paths(const std::string& dir,
                                                    const std::vector<std::string>& names);

} // namespace ipu::cli
