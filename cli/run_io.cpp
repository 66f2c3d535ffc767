#include "cli/run_io.h"

#include "runtime/base/file_io.h"
#include "runtime/data/tensor_proto.h"

namespace ipu::cli {
namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StatusOr<data::Dataset> read_input(const std::string& spec, const std::string& input_name) {
  std::string path = spec;
  // NAME=FILE, unless the '=' belongs to a path (a name never holds '/').
  const size_t eq = spec.find('=');
  if (eq != std::string::npos && spec.find('/') > eq) {
    const std::string name = spec.substr(0, eq);
    path = spec.substr(eq + 1);
    if (name != input_name) {
      return invalid_argument("--input " + spec + ": the executable's input is named '" + input_name + "', not '" +
                              name + "'");
    }
  }
  IPU_ASSIGN_OR_RETURN(data::NpyArray array,
                       has_suffix(path, ".pb") ? data::read_tensor_proto_file(path) : data::read_npy(path));
  return data::dataset_from_array(array, path);
}

Status write_output(const std::string& path, const data::NpyArray& array, const std::string& name) {
  if (!has_suffix(path, ".pb")) return data::write_npy(path, array);
  IPU_ASSIGN_OR_RETURN(std::string bytes, data::serialize_tensor_proto(array, name));
  return write_file_atomic(path, bytes);
}

std::string output_dir_path(const std::string& dir, const std::string& name) {
  std::string file = name.empty() ? "output" : name;
  for (char& c : file) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (file == "." || file == "..") file = "output";
  return dir + "/" + file + ".npy";
}

}  // namespace ipu::cli
