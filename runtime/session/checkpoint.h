// Weight checkpoints: a directory holding one .npy file per weight and optimizer state tensor
// (float16 for a FLOAT16 tensor, else float32), and index.json, a JSON object mapping each tensor's name to
// the name of its file there.
//
// Tensor names come from models (ONNX initializers, JSON spec layers), so they may hold anything:
// '/', "..", NUL, names equal but for case, thousands of bytes. A reader takes each tensor's file
// from the index and never derives it from the name; the writer picks file names with
// checkpoint_file_names, so no two tensors share a file and every file name is safe on its own.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::session {

// The schedule position a session saves beside the weights (Session::iterations and
// epochs_trained), each a float32 [1] tensor, exact up to 2^24.
inline constexpr std::string_view kIterationsCheckpointName = "optimizer/iterations";
inline constexpr std::string_view kEpochsCheckpointName = "optimizer/epochs";

struct NamedTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
  // A FLOAT16 tensor's: its values are binary16 values, kept in a float16 file.
  bool half = false;
};

// The file of each tensor of a checkpoint, keyed by tensor name: distinct_file_names(names,
// ".npy") (runtime/base/file_names.h), so no two tensors share a file, even on a
// case-insensitive file system, and every file name is safe on its own.
std::map<std::string, std::string> checkpoint_file_names(const std::vector<std::string>& names);

// OK when DIR may receive a checkpoint: nothing is there, or a checkpoint this runtime wrote (a
// directory of index.json and only the files its index names). Anything else, a user's data
// directory or file, is refused (kIoError naming DIR): a checkpoint replaces only a checkpoint.
// DIR's parent must exist (runtime/base/output_file.h: outputs never create the directories above).
Status check_checkpoint_destination(const std::string& dir);

// Writes into DIR.tmp-<pid> and renames it over DIR, so a crash never leaves a half checkpoint.
// Refuses a DIR that check_checkpoint_destination refuses, and names that are not UTF-8 (JSON
// cannot hold them; InvalidArgument, before anything is written).
Status write_checkpoint(const std::string& dir, const std::map<std::string, NamedTensor>& tensors);

// Reads every tensor the index names from the file the index gives it. An index entry whose file
// is not a plain file name of DIR ("", "..", a path, index.json itself), or two names sharing one
// file (one of the two tensors was lost when the checkpoint was written), is DataLoss.
StatusOr<std::map<std::string, NamedTensor>> read_checkpoint(const std::string& dir);

} // namespace ipu::session
