#include "cache/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ipu::cache {

StatusOr<FileLock> FileLock::acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path + ": cannot open lock file: " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    return io_error(path + ": cannot lock: " + std::strerror(err));
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (m_fd >= 0) ::close(m_fd);  // closing releases the flock
}

}  // namespace ipu::cache
