#include "runtime/session/checkpoint.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "runtime/base/file_io.h"
#include "runtime/data/npy.h"

namespace ipu::session {
namespace {

namespace fs = std::filesystem;

std::string file_name(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == ':') c = '.';
  }
  return name + ".npy";
}

}  // namespace

Status write_checkpoint(const std::string& dir, const std::map<std::string, NamedTensor>& tensors) {
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) || ec) return io_error(dir + ": cannot create checkpoint directory: " + ec.message());
  nlohmann::json index = nlohmann::json::object();
  for (const auto& [name, tensor] : tensors) {
    const std::string file = file_name(name);
    Status status = data::write_npy(tmp + "/" + file, data::make_npy_f32(tensor.shape, tensor.values.data()));
    if (!status.ok()) {
      fs::remove_all(tmp, ec);
      return status;
    }
    index[name] = file;
  }
  Status status = write_file_atomic(tmp + "/index.json", index.dump(1) + "\n");
  if (!status.ok()) {
    fs::remove_all(tmp, ec);
    return status;
  }
  // rename() cannot replace a non-empty directory: move the old one aside first.
  const std::string old = dir + ".old-" + std::to_string(::getpid());
  const bool had_old = fs::exists(dir, ec);
  if (had_old) fs::rename(dir, old, ec);
  if (!ec) fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    if (had_old) fs::rename(old, dir, ec);
    return io_error(dir + ": cannot move the checkpoint into place");
  }
  if (had_old) fs::remove_all(old, ec);
  return Status();
}

StatusOr<std::map<std::string, NamedTensor>> read_checkpoint(const std::string& dir) {
  IPU_ASSIGN_OR_RETURN(std::string text, read_file(dir + "/index.json"));
  nlohmann::json index = nlohmann::json::parse(text, nullptr, false);
  if (index.is_discarded() || !index.is_object()) return data_loss(dir + "/index.json: not a checkpoint index");
  std::map<std::string, NamedTensor> out;
  for (const auto& [name, file] : index.items()) {
    if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos) {
      return data_loss(dir + "/index.json: bad entry for '" + name + "'");
    }
    const std::string path = dir + "/" + file.get<std::string>();
    IPU_ASSIGN_OR_RETURN(data::NpyArray array, data::read_npy(path));
    if (array.dtype != "f4") return invalid_argument(path + ": expected float32 values, got '" + array.dtype + "'");
    NamedTensor tensor;
    tensor.shape = array.shape;
    tensor.values.resize(array.element_count());
    std::memcpy(tensor.values.data(), array.data.data(), tensor.values.size() * sizeof(float));
    out[name] = std::move(tensor);
  }
  return out;
}

}  // namespace ipu::session
