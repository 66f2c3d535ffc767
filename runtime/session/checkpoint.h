// Weight checkpoints: a directory holding <tensor>.npy per weight / optimizer state tensor
// ('/' in names becomes '.') and index.json mapping tensor names to files.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::session {

struct NamedTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// OK when DIR may receive a checkpoint: nothing is there, or a checkpoint this runtime wrote (a
// directory of index.json and only the files its index names). Anything else, a user's data
// directory or file, is refused (kIoError naming DIR): a checkpoint replaces only a checkpoint.
// DIR's parent must exist (runtime/base/output_file.h: outputs never create the directories above).
Status check_checkpoint_destination(const std::string& dir);

// Writes into DIR.tmp-<pid> and renames it over DIR, so a crash never leaves a half checkpoint.
// Refuses a DIR that check_checkpoint_destination refuses.
Status write_checkpoint(const std::string& dir, const std::map<std::string, NamedTensor>& tensors);
StatusOr<std::map<std::string, NamedTensor>> read_checkpoint(const std::string& dir);

}  // namespace ipu::session
