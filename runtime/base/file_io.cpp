#include "runtime/base/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ipu {
namespace {

Status errno_status(const std::string& what, const std::string& path, int err) {
  std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT) return not_found(message);
  // A full disk is an I/O failure to the user, not the tile-memory exhaustion that
  // ResourceExhausted reports.
  return io_error(message);
}

// A file opened for reading (read_file's errors), closed with its holder.
class OpenFile {
public:
  static StatusOr<OpenFile> open(const std::string& path) {
    OpenFile file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.m_fd < 0) return errno_status("cannot open", path, errno);
    if (::fstat(file.m_fd, &file.m_stat) != 0) return errno_status("cannot stat", path, errno);
    if (S_ISDIR(file.m_stat.st_mode)) return invalid_argument(path + ": is a directory");
    return file;
  }
  OpenFile(OpenFile&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)), m_stat(other.m_stat) {}
  OpenFile& operator=(OpenFile&&) = delete;
  ~OpenFile() {
    if (m_fd >= 0) ::close(m_fd);
  }

  int fd() const { return m_fd; }
  const struct stat& stat() const { return m_stat; }

  // Everything from the current position to the end (a FIFO's until its writer closes it).
  StatusOr<std::string> read_all(const std::string& path) const {
    std::string content;
    content.reserve(static_cast<size_t>(m_stat.st_size));
    char buffer[1 << 16];
    while (true) {
      ssize_t n = ::read(m_fd, buffer, sizeof buffer);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("cannot read", path, errno);
      }
      if (n == 0) break;
      content.append(buffer, static_cast<size_t>(n));
    }
    return content;
  }

private:
  explicit OpenFile(int fd) : m_fd(fd) {}

  int m_fd = -1;
  struct stat m_stat {};
};

} // namespace

StatusOr<std::string> read_file(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(const OpenFile file, OpenFile::open(path));
  return file.read_all(path);
}

FileBytes FileBytes::owning(std::string content) {
  auto owned = std::make_shared<const std::string>(std::move(content));
  return FileBytes{owned, *owned};
}

StatusOr<FileBytes> map_file(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(const OpenFile file, OpenFile::open(path));
  // An empty file cannot be mapped, nor can a FIFO: read those.
  if (!S_ISREG(file.stat().st_mode) || file.stat().st_size == 0) {
    IPU_ASSIGN_OR_RETURN(std::string content, file.read_all(path));
    return FileBytes::owning(std::move(content));
  }
  return map_open_file(file.fd(), static_cast<size_t>(file.stat().st_size), path);
}

StatusOr<FileBytes> map_open_file(int fd, size_t size, const std::string& path) {
  // MAP_POPULATE: one call maps every page the page cache holds, rather than a fault per page.
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (mapped == MAP_FAILED) return errno_status("cannot map", path, errno);
  std::shared_ptr<const void> owner(mapped, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  return FileBytes{owner, std::string_view(static_cast<const char*>(mapped), size)};
}

Status write_file_atomic(const std::string& path, std::string_view content) {
  // mkstemp gives every writer (process or thread) its own temporary name.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) return errno_status("cannot write", path, errno);
  ::fchmod(fd, 0644);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return errno_status("cannot write", path, err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return errno_status("cannot flush", path, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return errno_status("cannot rename into place", path, err);
  }
  return Status();
}

} // namespace ipu
