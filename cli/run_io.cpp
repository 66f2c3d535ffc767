#include "cli/run_io.h"

#include <map>
#include <optional>

#include "cli/tensor_file.h"
#include "runtime/base/file_io.h"
#include "runtime/base/file_names.h"
#include "runtime/base/output_file.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::cli {
namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string input_names(const format::Executable& exe) {
  std::string names;
  for (const auto& io : exe.inputs())
    names += (names.empty() ? "'" : ", '") + io.name() + "'";
  return names;
}

StatusOr<std::vector<data::NpyArray>> read_inputs(const std::vector<std::string>& specs,
                                                  const format::Executable& exe) {
  const size_t n = static_cast<size_t>(exe.inputs_size());
  std::vector<std::optional<std::string>> path_of(n);
  std::vector<std::string> positional;
  for (const std::string& spec : specs) {
    // NAME=FILE, unless the '=' belongs to a path (a name never holds '/').
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || spec.find('/') < eq) {
      positional.push_back(spec);
      continue;
    }
    const std::string name = spec.substr(0, eq);
    size_t index = 0;
    while (index < n && exe.inputs(static_cast<int>(index)).name() != name)
      ++index;
    if (index == n) {
      return invalid_argument("--input " + spec + ": the model has no input '" + name +
                              "' (its inputs: " + input_names(exe) + ")");
    }
    if (path_of[index]) return invalid_argument("--input " + spec + ": input '" + name + "' is given twice");
    path_of[index] = spec.substr(eq + 1);
  }
  size_t next = 0;
  for (const std::string& path : positional) {
    while (next < n && path_of[next])
      ++next;
    if (next == n)
      return invalid_argument("--input " + path + ": more inputs given than the model has (" +
                              input_names(exe) + ")");
    path_of[next++] = path;
  }
  std::vector<data::NpyArray> arrays;
  for (size_t i = 0; i < n; ++i) {
    if (!path_of[i])
      return invalid_argument("no --input for the model's input '" + exe.inputs(static_cast<int>(i)).name() +
                              "'");
    IPU_ASSIGN_OR_RETURN(data::NpyArray array, read_tensor_file(*path_of[i]));
    arrays.push_back(std::move(array));
  }
  return arrays;
}

Status check_output_extension(const std::string& path) {
  if (has_suffix(path, ".npy") || has_suffix(path, ".pb")) return Status();
  return invalid_argument("--output " + path +
                          ": the file name must end in .npy or .pb (the format it selects)");
}

Status write_output(const std::string& path, const data::NpyArray& array, const std::string& name) {
  IPU_ASSIGN_OR_RETURN(std::string bytes, has_suffix(path, ".pb") ? data::serialize_tensor_proto(array, name)
                                                                  : data::serialize_npy(array));
  return write_output_file(path, bytes);
}

std::map<std::string, std::string> output_dir_paths(const std::string& dir,
                                                    const std::vector<std::string>& names) {
  std::map<std::string, std::string> paths = distinct_file_names(names, ".npy");
  for (auto& [name, file] : paths)
    file = dir + "/" + file;
  return paths;
}

} // namespace ipu::cli
