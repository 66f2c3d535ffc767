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

// Writes into DIR.tmp-<pid> and renames it over DIR, so a crash never leaves a half checkpoint.
Status write_checkpoint(const std::string& dir, const std::map<std::string, NamedTensor>& tensors);
StatusOr<std::map<std::string, NamedTensor>> read_checkpoint(const std::string& dir);

}  // namespace ipu::session
