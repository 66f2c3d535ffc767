#include "cache/file_lock.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ipu::cache {

StatusOr<FileLock> FileLock::acquire(int fd, const std::string& path) {
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    return io_error(path + ": cannot lock: " + std::strerror(err));
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (m_fd >= 0) ::close(m_fd); // closing releases the flock
}

} // namespace ipu::cache
