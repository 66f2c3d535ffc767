#include "runtime/base/output_file.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "runtime/base/file_io.h"
#include "runtime/base/sha256.h"

namespace ipu {
namespace {

namespace fs = std::filesystem;

// XDG's place for state that should outlive a cache clean: a wiped cache must not make earlier
// outputs look like a user's.
std::string records_directory() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') return std::string(state) + "/ipucc/outputs";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.local/state/ipucc/outputs";
  return "";
}

// The same file reached through different spellings (./x, a/../x, a symlinked directory) has one
// record.
std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal().string() : resolved.string();
}

// One record per output path: RECORDS/<first two hex digits>/<the rest> of the SHA-256 of the
// absolute path, holding "<sha256 of the content> <absolute path>\n".
std::string record_path(const std::string& absolute) {
  const std::string dir = records_directory();
  if (dir.empty()) return "";
  const std::string digest = sha256_hex(absolute);
  return dir + "/" + digest.substr(0, 2) + "/" + digest.substr(2);
}

// Outputs in temporary directories come and go by the thousand (scripts/conformance.sh): each
// write drops the records of its shard whose file is gone, so the records stay about as many as
// the outputs that exist, at the cost of one stat per record in 1/256 of them.
void prune_shard(const fs::path& shard) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(shard, ec)) {
    // Another writer's record on its way in (write_file_atomic's temporary name) is not stale.
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) continue;
    auto text = read_file(entry.path().string());
    if (!text.ok()) continue;
    const size_t space = text->find(' ');
    if (space == std::string::npos || text->size() < space + 2) continue;
    const std::string path = text->substr(space + 1, text->size() - space - 2);
    std::error_code exists_ec;
    if (!fs::exists(path, exists_ec) && !exists_ec) fs::remove(entry.path(), exists_ec);
  }
}

std::string record_of(const std::string& content_digest, const std::string& absolute) {
  return content_digest + " " + absolute + "\n";
}

Status not_ours(const std::string& path, const std::string& why) {
  return io_error(path + ": " + why + "; refusing to replace it: choose another path or remove it yourself");
}

} // namespace

Status check_output_parent(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  const fs::file_status status = fs::status(parent, ec);
  if (!fs::exists(status)) {
    return not_found(path + ": directory " + parent.string() +
                     " does not exist (outputs do not create the directories above them)");
  }
  if (!fs::is_directory(status)) return io_error(path + ": " + parent.string() + " is not a directory");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return io_error(path + ": cannot write into directory " + parent.string());
  return Status();
}

Status check_output_file(const std::string& path) {
  if (path.empty()) return invalid_argument("an output path is empty");
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (!fs::exists(status)) return check_output_parent(path);
  if (fs::is_directory(status)) return not_ours(path, "is a directory");
  if (!fs::is_regular_file(status)) return not_ours(path, "exists and is not a regular file");
  const std::string absolute = absolute_path(path);
  const std::string record = record_path(absolute);
  auto recorded = record.empty() ? StatusOr<std::string>(not_found("")) : read_file(record);
  if (!recorded.ok()) return not_ours(path, "exists and was not written by ipucc or ipurun");
  auto content = read_file(path);
  if (!content.ok()) return content.status();
  if (*recorded != record_of(sha256_hex(*content), absolute)) {
    return not_ours(path, "was written by ipucc or ipurun but has changed since");
  }
  return check_output_parent(path);
}

Status write_output_file(const std::string& path, std::string_view content) {
  IPU_RETURN_IF_ERROR(check_output_file(path));
  IPU_RETURN_IF_ERROR(write_file_atomic(path, content));
  const std::string absolute = absolute_path(path);
  const std::string record = record_path(absolute);
  if (record.empty()) return Status();
  const fs::path shard = fs::path(record).parent_path();
  std::error_code ec;
  fs::create_directories(shard, ec);
  if (ec) return Status();
  prune_shard(shard);
  // Not recording only makes this file the user's: a later run refuses to replace it. That is the
  // safe direction, and no reason to fail a run whose output is written.
  (void)write_file_atomic(record, record_of(sha256_hex(content), absolute));
  return Status();
}

} // namespace ipu
