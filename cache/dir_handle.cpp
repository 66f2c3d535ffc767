#include "cache/dir_handle.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace ipu::cache {
namespace {

constexpr mode_t kDirectoryMode = 0755;
constexpr mode_t kFileMode = 0644;
constexpr int kTemporaryNameAttempts = 100;

Status errno_status(const std::string& path, const std::string& what, int err) {
  std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT) return not_found(message);
  return io_error(message);
}

Status link_refused(const std::string& path) {
  return io_error(path + ": is a symbolic link; the cache does not follow links inside its directory");
}

// Why openat(..., O_NOFOLLOW) of `name` failed with `err`, in words: a link is named as one
// (O_NOFOLLOW reports it as ELOOP, or as ENOTDIR with O_DIRECTORY).
Status open_failed(int dir_fd, const std::string& name, const std::string& path, const std::string& what,
                   int err) {
  struct stat st {};
  if (err == ELOOP ||
      (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))) {
    return link_refused(path);
  }
  if (err == ENOTDIR) return io_error(path + ": exists and is not a directory");
  return errno_status(path, what, err);
}

// A name is one path component: no '/', not "." or "..". Callers build names from checked keys
// and constants, so anything else is a bug.
bool is_component(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::string user_name(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[1024];
  if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) return "";
  return found->pw_name;
}

// "uid 65534 (nobody)", or "uid 65534" for a uid without a name.
std::string describe_user(uid_t uid) {
  const std::string name = user_name(uid);
  return "uid " + std::to_string(uid) + (name.empty() ? "" : " (" + name + ")");
}

// The open directory `fd` may hold a cache only if no one but the current user can write it.
// Takes `fd` over on failure.
Status check_private(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status(path, "cannot stat", err);
  }
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    ::close(fd);
    return io_error(path + ": owned by " + describe_user(st.st_uid) + ", not by the current user, " +
                    describe_user(me) + (me == 0 ? "" : ", or root") +
                    "; refusing a cache directory another user can write");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    ::close(fd);
    const char* who = (st.st_mode & S_IWGRP) == 0   ? "others"
                      : (st.st_mode & S_IWOTH) == 0 ? "its group"
                                                    : "its group and others";
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return io_error(path + ": writable by " + who + " (mode " + mode +
                    "); refusing a cache directory others can write (chmod go-w it, or choose another)");
  }
  return Status();
}

DirChild::Kind kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return DirChild::Kind::kDirectory;
  if (S_ISREG(mode)) return DirChild::Kind::kFile;
  if (S_ISLNK(mode)) return DirChild::Kind::kLink;
  return DirChild::Kind::kOther;
}

} // namespace

StatusOr<DirHandle> DirHandle::open(const std::string& path, bool create) {
  if (create) {
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    // A parent that cannot be made shows in the mkdir below.
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (::mkdir(path.c_str(), kDirectoryMode) != 0 && errno != EEXIST) {
      return errno_status(path, "cannot create directory", errno);
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOTDIR) return io_error(path + ": exists and is not a directory");
    return errno_status(path, "cannot open directory", errno);
  }
  IPU_RETURN_IF_ERROR(check_private(fd, path));
  return DirHandle(fd, path);
}

DirHandle& DirHandle::operator=(DirHandle&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = std::exchange(other.m_fd, -1);
    m_path = std::move(other.m_path);
  }
  return *this;
}

DirHandle::~DirHandle() {
  if (m_fd >= 0) ::close(m_fd);
}

std::string DirHandle::path_of(std::string_view name) const {
  std::string out = m_path;
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

StatusOr<DirHandle> DirHandle::open_subdir(const std::string& name, bool create) const {
  if (!is_component(name)) return invalid_argument(path_of(name) + ": not a name inside the cache");
  const std::string path = path_of(name);
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(m_fd, name.c_str(), kFlags);
  if (fd < 0 && errno == ENOENT && create) {
    if (::mkdirat(m_fd, name.c_str(), kDirectoryMode) != 0 && errno != EEXIST) {
      return errno_status(path, "cannot create directory", errno);
    }
    fd = ::openat(m_fd, name.c_str(), kFlags);
  }
  if (fd < 0) return open_failed(m_fd, name, path, "cannot open directory", errno);
  IPU_RETURN_IF_ERROR(check_private(fd, path));
  return DirHandle(fd, path);
}

StatusOr<std::string> DirHandle::read(const std::string& name) const {
  IPU_ASSIGN_OR_RETURN(FileHead whole, read_head(name, UINT64_MAX));
  return std::move(whole.bytes);
}

StatusOr<std::pair<int, uint64_t>> DirHandle::open_regular(const std::string& name) const {
  if (!is_component(name)) return invalid_argument(path_of(name) + ": not a name inside the cache");
  const std::string path = path_of(name);
  // O_NONBLOCK: a FIFO planted here must not hang the open; regular files ignore it.
  const int fd = ::openat(m_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return open_failed(m_fd, name, path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) return invalid_argument(path + ": is a directory");
    return io_error(path + ": not a regular file");
  }
  return std::pair{fd, static_cast<uint64_t>(st.st_size)};
}

StatusOr<FileBytes> DirHandle::map(const std::string& name) const {
  IPU_ASSIGN_OR_RETURN(const auto opened, open_regular(name));
  const auto [fd, size] = opened;
  if (size == 0) {
    ::close(fd);
    return FileBytes{};
  }
  StatusOr<FileBytes> mapped = map_open_file(fd, static_cast<size_t>(size), path_of(name));
  ::close(fd);
  return mapped;
}

StatusOr<FileHead> DirHandle::read_head(const std::string& name, uint64_t limit) const {
  IPU_ASSIGN_OR_RETURN(const auto opened, open_regular(name));
  const auto [fd, size] = opened;
  const std::string path = path_of(name);
  FileHead head;
  head.file_size = size;
  head.bytes.reserve(static_cast<size_t>(std::min(head.file_size, limit)));
  char buffer[1 << 16];
  while (head.bytes.size() < limit) {
    const ssize_t n =
        ::read(fd, buffer, static_cast<size_t>(std::min<uint64_t>(sizeof buffer, limit - head.bytes.size())));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return errno_status(path, "cannot read", err);
    }
    if (n == 0) break;
    head.bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return head;
}

Status DirHandle::write_atomic(const std::string& name, std::string_view content,
                               Durability durability) const {
  if (!is_component(name)) return invalid_argument(path_of(name) + ": not a name inside the cache");
  const std::string path = path_of(name);
  // Every writer (process or thread) gets its own temporary name; O_EXCL makes sure of it.
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < kTemporaryNameAttempts; ++attempt) {
    tmp = name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::openat(m_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode);
    if (fd < 0 && errno != EEXIST) return errno_status(path, "cannot write", errno);
  }
  if (fd < 0) return errno_status(path, "cannot write", EEXIST);
  ::fchmod(fd, kFileMode); // whatever the umask
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlinkat(m_fd, tmp.c_str(), 0);
      return errno_status(path, "cannot write", err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const int flush_error = durability == Durability::kSurvivesProcessDeath || ::fsync(fd) == 0 ? 0 : errno;
  const int close_error = ::close(fd) == 0 ? 0 : errno;
  if (flush_error != 0 || close_error != 0) {
    ::unlinkat(m_fd, tmp.c_str(), 0);
    return errno_status(path, "cannot flush", flush_error != 0 ? flush_error : close_error);
  }
  if (::renameat(m_fd, tmp.c_str(), m_fd, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(m_fd, tmp.c_str(), 0);
    return errno_status(path, "cannot rename into place", err);
  }
  return Status();
}

Status DirHandle::remove(const std::string& name) const {
  if (!is_component(name)) return invalid_argument(path_of(name) + ": not a name inside the cache");
  if (::unlinkat(m_fd, name.c_str(), 0) != 0) return errno_status(path_of(name), "cannot remove", errno);
  return Status();
}

Status DirHandle::move(const std::string& name, const DirHandle& to, const std::string& new_name) const {
  if (!is_component(name) || !is_component(new_name)) {
    return invalid_argument(path_of(name) + ": not a name inside the cache");
  }
  if (::renameat(m_fd, name.c_str(), to.m_fd, new_name.c_str()) != 0) {
    return errno_status(path_of(name), "cannot move to " + to.path(), errno);
  }
  return Status();
}

bool DirHandle::lstat(const std::string& name, struct stat& st) const {
  return is_component(name) && ::fstatat(m_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int DirHandle::touch(const std::string& name) const {
  if (!is_component(name)) return EINVAL;
  return ::utimensat(m_fd, name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
}

StatusOr<std::vector<DirChild>> DirHandle::list() const {
  // A descriptor of its own: the stream takes it over, and its reading position is not ours.
  const int fd = ::openat(m_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status(m_path, "cannot list", errno);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    ::close(fd);
    return errno_status(m_path, "cannot list", err);
  }
  std::vector<DirChild> out;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) break;
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    DirChild child{name, DirChild::Kind::kOther};
    switch (entry->d_type) {
    case DT_DIR:
      child.kind = DirChild::Kind::kDirectory;
      break;
    case DT_REG:
      child.kind = DirChild::Kind::kFile;
      break;
    case DT_LNK:
      child.kind = DirChild::Kind::kLink;
      break;
    case DT_UNKNOWN: {
      struct stat st {};
      if (::fstatat(m_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) child.kind = kind_of(st.st_mode);
      break;
    }
    default:
      break;
    }
    out.push_back(std::move(child));
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return errno_status(m_path, "cannot list", err);
  return out;
}

StatusOr<FileLock> DirHandle::lock(const std::string& name) const {
  if (!is_component(name)) return invalid_argument(path_of(name) + ": not a name inside the cache");
  const std::string path = path_of(name);
  const int fd =
      ::openat(m_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, kFileMode);
  if (fd < 0) return open_failed(m_fd, name, path, "cannot open lock file", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path + ": lock file is not a regular file");
  }
  return FileLock::acquire(fd, path);
}

} // namespace ipu::cache
