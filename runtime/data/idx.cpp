#include "runtime/data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>

namespace ipu::data {
namespace {

constexpr uint8_t kTypeUbyte = 0x08;
constexpr int kMaxDims = 4;
constexpr int kMnistClasses = 10;
// Bigger than any real IDX file: a header that promises more is refused before any read.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 34;
// The payload is read in chunks that start at this size and then double (each is as large as what
// has arrived so far), so what a truncated file makes us allocate is bounded by twice its own size
// plus this, whatever its header promises; a small start keeps hostile headers cheap.
constexpr uint64_t kFirstReadChunkBytes = uint64_t{1} << 16;

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Reads plain and gzip files through one zlib stream: gzread passes non-gzip content through
// unchanged ("transparent" mode), so a .gz suffix is not needed to decompress, nor harmful to omit.
class GzReader {
public:
  GzReader() = default;
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;
  ~GzReader() {
    if (m_file != nullptr) gzclose_r(m_file);
  }

  Status open(const std::string& path) {
    m_path = path;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      std::string message = path + ": cannot open: " + std::strerror(err);
      return err == ENOENT ? not_found(message) : io_error(message);
    }
    // open() accepts a directory; the failure would only surface as a confusing read error.
    if (S_ISDIR(st.st_mode)) return invalid_argument(path + ": is a directory");
    errno = 0;
    m_file = gzopen(path.c_str(), "rb");
    if (m_file == nullptr) {
      const int err = errno;
      std::string message = path + ": cannot open";
      if (err != 0) message += std::string(": ") + std::strerror(err);
      return err == ENOENT ? not_found(message) : io_error(message);
    }
    gzbuffer(m_file, 1 << 17); // the default 8 KiB costs many small reads on a 47 MB file
    return Status();
  }

  // Reads up to size bytes; returns how many were read (less only at the end of the data).
  StatusOr<size_t> read(void* out, size_t size) {
    size_t done = 0;
    auto* bytes = static_cast<unsigned char*>(out);
    while (done < size) {
      // gzread takes an unsigned count; read in chunks well below its limit.
      const size_t chunk = std::min<size_t>(size - done, size_t{1} << 30);
      const int n = gzread(m_file, bytes + done, static_cast<unsigned>(chunk));
      if (n < 0) return stream_error();
      if (n == 0) {
        // A stream cut short reports Z_BUF_ERROR only once the end is reached.
        int errnum = Z_OK;
        gzerror(m_file, &errnum);
        if (errnum != Z_OK) return stream_error();
        break;
      }
      done += static_cast<size_t>(n);
    }
    return done;
  }

private:
  Status stream_error() {
    int errnum = Z_OK;
    const char* raw = gzerror(m_file, &errnum);
    if (errnum == Z_ERRNO) return io_error(m_path + ": cannot read: " + std::strerror(errno));
    // zlib's message already starts with "<path>: "; keep only what follows.
    std::string what = raw != nullptr && *raw != '\0' ? raw : "read failed";
    if (what.rfind(m_path + ": ", 0) == 0) what.erase(0, m_path.size() + 2);
    // Z_BUF_ERROR: compressed stream truncated; Z_DATA_ERROR: corrupt deflate data or checksum.
    return data_loss(m_path + ": corrupt gzip data: " + what);
  }

  std::string m_path;
  gzFile m_file = nullptr;
};

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Picks NAME or NAME.gz in dir.
StatusOr<std::string> find_idx_file(const std::string& dir, const std::string& name) {
  std::string base = dir;
  if (!base.empty() && base.back() != '/') base += '/';
  base += name;
  if (file_exists(base)) return base;
  if (file_exists(base + ".gz")) return base + ".gz";
  return not_found(base + ": no such file (nor " + name + ".gz)");
}

} // namespace

StatusOr<IdxArray> read_idx_ubyte(const std::string& path) {
  GzReader reader;
  IPU_RETURN_IF_ERROR(reader.open(path));

  std::array<unsigned char, 4> magic{};
  IPU_ASSIGN_OR_RETURN(size_t got, reader.read(magic.data(), magic.size()));
  if (got < magic.size())
    return data_loss(path + ": truncated idx header (" + std::to_string(got) + " bytes)");
  if (magic[0] != 0 || magic[1] != 0) {
    return invalid_argument(path + ": not an idx file (bad magic number)");
  }
  if (magic[2] != kTypeUbyte) {
    return invalid_argument(
        path + ": unsupported idx element type 0x" + std::string(1, "0123456789abcdef"[magic[2] >> 4]) +
        std::string(1, "0123456789abcdef"[magic[2] & 15]) + ", expected unsigned byte (0x08)");
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > kMaxDims) {
    return invalid_argument(path + ": idx file has " + std::to_string(ndims) + " dimensions, expected 1 to " +
                            std::to_string(kMaxDims));
  }

  std::array<unsigned char, size_t{4} * kMaxDims> dim_bytes{};
  const size_t dim_size = 4 * static_cast<size_t>(ndims);
  IPU_ASSIGN_OR_RETURN(got, reader.read(dim_bytes.data(), dim_size));
  if (got < dim_size) return data_loss(path + ": truncated idx header");

  IdxArray array;
  uint64_t count = 1;
  for (int d = 0; d < ndims; ++d) {
    const uint32_t dim = big_endian_u32(dim_bytes.data() + 4 * static_cast<size_t>(d));
    if (dim == 0) return invalid_argument(path + ": idx dimension " + std::to_string(d) + " is 0");
    count *= dim;
    if (count > kMaxPayloadBytes) return invalid_argument(path + ": idx dimensions are implausibly large");
    array.dims.push_back(static_cast<int64_t>(dim));
  }

  // Grown as the bytes arrive, not sized from the header: a file of a few bytes whose header
  // promises 16 GiB must fail as truncated, not first allocate and clear 16 GiB.
  uint64_t read_so_far = 0;
  while (read_so_far < count) {
    const uint64_t chunk = std::min(count - read_so_far, std::max(read_so_far, kFirstReadChunkBytes));
    array.data.resize(static_cast<size_t>(read_so_far + chunk));
    IPU_ASSIGN_OR_RETURN(got, reader.read(array.data.data() + read_so_far, static_cast<size_t>(chunk)));
    read_so_far += got;
    if (got < chunk) {
      return data_loss(path + ": truncated: header promises " + std::to_string(count) +
                       " data bytes, file has " + std::to_string(read_so_far));
    }
  }
  unsigned char extra = 0;
  IPU_ASSIGN_OR_RETURN(got, reader.read(&extra, 1));
  if (got != 0)
    return data_loss(path + ": unexpected bytes after the " + std::to_string(count) + " data bytes");
  return array;
}

StatusOr<Dataset> load_mnist_idx(const std::string& dir, const std::string& split) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return invalid_argument(dir + ": unknown mnist split '" + split + "', expected 'train' or 'test'");
  }
  IPU_ASSIGN_OR_RETURN(std::string images_path, find_idx_file(dir, prefix + "-images-idx3-ubyte"));
  IPU_ASSIGN_OR_RETURN(std::string labels_path, find_idx_file(dir, prefix + "-labels-idx1-ubyte"));
  IPU_ASSIGN_OR_RETURN(IdxArray images, read_idx_ubyte(images_path));
  IPU_ASSIGN_OR_RETURN(IdxArray labels, read_idx_ubyte(labels_path));

  if (images.dims.size() != 3) {
    return invalid_argument(images_path + ": expected 3 dimensions [count, rows, cols], got " +
                            std::to_string(images.dims.size()));
  }
  if (labels.dims.size() != 1) {
    return invalid_argument(labels_path + ": expected 1 dimension [count], got " +
                            std::to_string(labels.dims.size()));
  }
  if (images.dims[0] != labels.dims[0]) {
    return invalid_argument(labels_path + ": has " + std::to_string(labels.dims[0]) + " labels but " +
                            images_path + " has " + std::to_string(images.dims[0]) + " images");
  }
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= kMnistClasses) {
      return invalid_argument(labels_path + ": label " + std::to_string(labels.data[i]) + " at index " +
                              std::to_string(i) + " is outside 0.." + std::to_string(kMnistClasses - 1));
    }
  }

  Dataset ds;
  ds.source = "mnist:" + dir + (split == "test" ? ":test" : "");
  ds.sample_shape = {images.dims[1], images.dims[2], 1};
  ds.num_samples = static_cast<size_t>(images.dims[0]);
  ds.num_classes = kMnistClasses;
  // Division, not multiplication by 1/255, so values equal torchvision's and Keras's x / 255.
  std::array<float, 256> scale{};
  for (int v = 0; v < 256; ++v)
    scale[static_cast<size_t>(v)] = static_cast<float>(v) / 255.0f;
  ds.features.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i)
    ds.features[i] = scale[images.data[i]];
  ds.labels.assign(labels.data.begin(), labels.data.end());
  return ds;
}

} // namespace ipu::data
