#include "runtime/session/checkpoint.h"

#include <fcntl.h> // AT_FDCWD
#include <unistd.h>

#include <cerrno>
#include <cstdio> // renameat2, RENAME_EXCHANGE
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <system_error>

#include "runtime/base/file_io.h"
#include "runtime/base/file_names.h"
#include "runtime/base/half.h"
#include "runtime/base/output_file.h"
#include "runtime/base/printable.h"
#include "runtime/base/sha256.h"
#include "runtime/data/npy.h"

namespace ipu::session {
namespace {

namespace fs = std::filesystem;

bool is_plain_file_name(const std::string& file) {
  return !file.empty() && file != "." && file != ".." && file != "index.json" &&
         file.find('/') == std::string::npos && file.find('\0') == std::string::npos;
}

Status not_a_checkpoint(const std::string& dir, const std::string& why) {
  return io_error(dir + ": exists and is not a checkpoint ipurun wrote (" + why +
                  "); refusing to replace it: choose another path or remove it yourself");
}

// Puts the complete checkpoint `tmp` at `dir`. rename() cannot replace a non-empty directory, so
// an old checkpoint is swapped with the new one in one step (renameat2's RENAME_EXCHANGE): a
// process killed at any moment leaves `dir` holding the old checkpoint or the new one, never
// neither. The old one, now at `tmp`, is removed after. A file system that cannot swap (EINVAL:
// some network and FUSE ones) gets two renames, the old checkpoint moved aside first; a kill
// between them leaves it at `dir.old-PID`.
Status move_into_place(const std::string& tmp, const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(tmp, ec);
      return Status();
    }
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
      const int err = errno;
      fs::remove_all(tmp, ec);
      return io_error(dir + ": cannot move the checkpoint into place: " + std::strerror(err));
    }
    const std::string old = dir + ".old-" + std::to_string(::getpid());
    fs::rename(dir, old, ec);
    if (!ec) fs::rename(tmp, dir, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      fs::rename(old, dir, ec);
      return io_error(dir + ": cannot move the checkpoint into place");
    }
    fs::remove_all(old, ec);
    return Status();
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return io_error(dir + ": cannot move the checkpoint into place: " + ec.message());
  }
  return Status();
}

} // namespace

std::map<std::string, std::string> checkpoint_file_names(const std::vector<std::string>& names) {
  return distinct_file_names(names, ".npy");
}

Status check_checkpoint_destination(const std::string& dir) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (!fs::exists(status)) return check_output_parent(dir);
  if (!fs::is_directory(status)) return not_a_checkpoint(dir, "not a directory");
  auto text = read_file(dir + "/index.json");
  if (!text.ok()) return not_a_checkpoint(dir, "no readable index.json");
  const nlohmann::json index = nlohmann::json::parse(*text, nullptr, false);
  if (index.is_discarded() || !index.is_object())
    return not_a_checkpoint(dir, "index.json is not a checkpoint index");
  std::set<std::string> ours = {"index.json"};
  for (const auto& [name, file] : index.items()) {
    if (!file.is_string()) return not_a_checkpoint(dir, "index.json is not a checkpoint index");
    ours.insert(file.get<std::string>());
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!ours.count(name) || !entry.is_regular_file(ec))
      return not_a_checkpoint(dir, "it holds '" + name + "', which its index does not name");
  }
  if (ec) return io_error(dir + ": cannot list: " + ec.message());
  return Status();
}

Status write_checkpoint(const std::string& dir, const std::map<std::string, NamedTensor>& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    if (!is_valid_utf8(name)) {
      return invalid_argument(dir + ": tensor name '" + printable(name) +
                              "' is not UTF-8, which a checkpoint's index (JSON) cannot hold");
    }
    names.push_back(name);
  }
  const std::map<std::string, std::string> files = checkpoint_file_names(names);
  if (!file_names_distinct(files)) return internal_error(dir + ": two tensors would share a checkpoint file");
  IPU_RETURN_IF_ERROR(check_checkpoint_destination(dir));
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    return io_error(dir + ": cannot create checkpoint directory: " + ec.message());
  nlohmann::json index = nlohmann::json::object();
  for (const auto& [name, tensor] : tensors) {
    const std::string& file = files.at(name);
    const data::NpyArray array = tensor.half ? data::make_npy_f16(tensor.shape, tensor.values.data())
                                             : data::make_npy_f32(tensor.shape, tensor.values.data());
    Status status = data::write_npy(tmp + "/" + file, array);
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
  return move_into_place(tmp, dir);
}

StatusOr<std::map<std::string, NamedTensor>> read_checkpoint(const std::string& dir) {
  IPU_ASSIGN_OR_RETURN(std::string text, read_file(dir + "/index.json"));
  nlohmann::json index = nlohmann::json::parse(text, nullptr, false);
  if (index.is_discarded() || !index.is_object())
    return data_loss(dir + "/index.json: not a checkpoint index");
  std::map<std::string, NamedTensor> out;
  std::map<std::string, std::string> name_of_file;
  for (const auto& [name, file] : index.items()) {
    if (!file.is_string() || !is_plain_file_name(file.get<std::string>())) {
      return data_loss(dir + "/index.json: the entry of '" + printable(name) +
                       "' is not the name of a file in " + dir);
    }
    const std::string& file_name = file.get_ref<const std::string&>();
    auto [shared, first] = name_of_file.emplace(file_name, name);
    if (!first) {
      // Checkpoints of ipurun before collision-free file names: "a/b" and "a.b" both wrote a.b.npy.
      return data_loss(dir + "/index.json: '" + printable(shared->second) + "' and '" + printable(name) +
                       "' share the file '" + printable(file_name) +
                       "': one of the two tensors was lost when the checkpoint was written");
    }
    const std::string path = dir + "/" + file_name;
    IPU_ASSIGN_OR_RETURN(data::NpyArray array, data::read_npy(path));
    if (array.dtype != "f4" && array.dtype != "f2")
      return invalid_argument(path + ": expected float32 or float16 values, got '" + array.dtype + "'");
    NamedTensor tensor;
    tensor.shape = array.shape;
    tensor.half = array.dtype == "f2";
    tensor.values.resize(array.element_count());
    if (tensor.half) {
      for (size_t i = 0; i < tensor.values.size(); ++i) {
        uint16_t bits;
        std::memcpy(&bits, array.data.data() + i * sizeof bits, sizeof bits);
        tensor.values[i] = half_bits_to_float(bits);
      }
    } else {
      std::memcpy(tensor.values.data(), array.data.data(), tensor.values.size() * sizeof(float));
    }
    out[name] = std::move(tensor);
  }
  return out;
}

} // namespace ipu::session
