// A directory of the cache, held open by its descriptor. Everything in it is reached relative to
// that descriptor and never through a symbolic link (openat with O_NOFOLLOW, renameat, unlinkat,
// utimensat with AT_SYMLINK_NOFOLLOW), so there is no gap between checking a path and using it.
// A link planted where the cache keeps a directory, an entry or a lock is refused with an error
// naming it, and removing a link removes the link, never its target: the cache reads, writes,
// locks and deletes only inside its own tree, whatever someone put there.
//
// Every directory opened is checked, on its descriptor, to be writable by no one but the current
// user: owned by that user or by root (who can write anything anyway, so a cache that root keeps
// for others to read is fine), and not writable by group or others. Anyone else who could write it
// could put in it the executables this user's runs load (docs/cache.md, "Who can write the
// cache").
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/file_lock.h"
#include "runtime/base/file_io.h"
#include "runtime/base/status.h"

namespace ipu::cache {

struct DirChild {
  enum class Kind { kDirectory, kFile, kLink, kOther };
  std::string name;
  Kind kind = Kind::kOther; // as the entry itself is, links not followed
};

// The first bytes of a file and the whole file's size.
struct FileHead {
  std::string bytes;
  uint64_t file_size = 0;
};

class DirHandle {
public:
  // The directory at `path`, which may itself be reached through links (the user chose it);
  // with `create`, made first (mode 0755, missing parents as mkdir -p does). NotFound if it does
  // not exist, IoError naming it if it is not a directory, cannot be created or opened, or others
  // can write it (above).
  static StatusOr<DirHandle> open(const std::string& path, bool create);

  DirHandle(DirHandle&& other) noexcept
      : m_fd(std::exchange(other.m_fd, -1)), m_path(std::move(other.m_path)) {}
  DirHandle& operator=(DirHandle&& other) noexcept;
  DirHandle(const DirHandle&) = delete;
  DirHandle& operator=(const DirHandle&) = delete;
  ~DirHandle();

  const std::string& path() const { return m_path; }
  // `name` inside this directory, for messages.
  std::string path_of(std::string_view name) const;

  // The subdirectory `name` (one path component); with `create`, made (mode 0755) if missing.
  // NotFound if missing; IoError naming it if it is a symbolic link, not a directory, or others
  // can write it (above).
  StatusOr<DirHandle> open_subdir(const std::string& name, bool create) const;

  // The content of the regular file `name`. NotFound if missing; IoError if it is a symbolic link
  // or not a regular file (a FIFO never blocks the read), or cannot be read.
  StatusOr<std::string> read(const std::string& name) const;
  // Its first `limit` bytes (all of it if shorter) and its size, with read's errors.
  StatusOr<FileHead> read_head(const std::string& name, uint64_t limit) const;
  // The file mapped (map_file), with read's errors.
  StatusOr<FileBytes> map(const std::string& name) const;

  // Whether write_atomic's content must reach the disk before the rename. kSurvivesProcessDeath
  // skips the fsync: readers still see the old content or the new, and a process killed at any
  // point tears nothing, but a power loss may leave the file empty. For files whose loss costs
  // nothing but a count (ccache writes its statistics the same way).
  enum class Durability { kSurvivesPowerLoss, kSurvivesProcessDeath };

  // Writes `content` to a temporary file here, fsyncs it (see Durability) and renames it over
  // `name` (a link there is replaced, not followed), so a reader sees the old content or the new,
  // never part of either. On failure the temporary file is removed. IoError (NotFound if this
  // directory was removed) naming the file.
  Status write_atomic(const std::string& name, std::string_view content,
                      Durability durability = Durability::kSurvivesPowerLoss) const;

  // Removes `name` (a file or a link; a link is removed, never its target). NotFound if missing.
  Status remove(const std::string& name) const;

  // Renames `name` to `to`/`new_name` (a link moves as a link).
  Status move(const std::string& name, const DirHandle& to, const std::string& new_name) const;

  // lstat of `name`: false if it does not exist or cannot be examined.
  bool lstat(const std::string& name, struct stat& st) const;

  // Sets `name`'s times to now, without following a link. The errno on failure, else 0.
  int touch(const std::string& name) const;

  // Every entry but "." and "..", unsorted.
  StatusOr<std::vector<DirChild>> list() const;

  // An exclusive lock on the regular file `name`, created if missing (mode 0644). IoError naming
  // it if it is a symbolic link or not a regular file.
  StatusOr<FileLock> lock(const std::string& name) const;

private:
  DirHandle(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {}
  // The regular file `name` opened for reading, and its size; the caller closes it.
  StatusOr<std::pair<int, uint64_t>> open_regular(const std::string& name) const;

  int m_fd = -1;
  std::string m_path;
};

} // namespace ipu::cache
