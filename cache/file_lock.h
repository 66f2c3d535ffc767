// An exclusive flock on a file, held until destroyed. The kernel drops it when its process
// dies, so a lock left by a killed process is never stale.
#pragma once

#include <string>

#include "runtime/base/status.h"

namespace ipu::cache {

class FileLock {
public:
  // Takes ownership of the open file `fd` (closed on failure too) and blocks until its lock is
  // ours. `path` names it in errors. Callers open it (DirHandle::lock).
  static StatusOr<FileLock> acquire(int fd, const std::string& path);
  FileLock(FileLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

private:
  explicit FileLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

} // namespace ipu::cache
