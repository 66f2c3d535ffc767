// Whole-file reads and crash-safe writes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace ipu {

// Returns NotFound if the file does not exist, IoError on any other failure.
StatusOr<std::string> read_file(const std::string& path);

// A file's bytes, mapped read-only when it is a regular file (the page cache's pages, neither copied
// nor first touched by this process) and read otherwise (a FIFO). `owner` keeps `bytes` valid; a
// mapped file must not be truncated while it is held (the tool's own outputs are replaced by rename,
// which leaves a mapping of the old file intact).
struct FileBytes {
  // Bytes already in memory, held by the result.
  static FileBytes owning(std::string content);

  std::shared_ptr<const void> owner;
  std::string_view bytes;
};
StatusOr<FileBytes> map_file(const std::string& path);
// Maps `size` (> 0) bytes of the open regular file `fd`, which the caller still closes; `path` names
// it in errors.
StatusOr<FileBytes> map_open_file(int fd, size_t size, const std::string& path);

// Writes to a temporary file in the same directory, fsyncs it and renames it over `path`, so a
// reader sees either the old content or the new one, never a partial file. On failure nothing is
// left behind. Failures (a full disk too) are IoError, or NotFound for a missing directory.
Status write_file_atomic(const std::string& path, std::string_view content);

} // namespace ipu
