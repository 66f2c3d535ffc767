// libFuzzer target: untrusted bytes as the data files ipurun reads. As a .npy array, what
// `ipurun --input` and `--data FILE.npy` do with one (parse_npy, then to_floats and
// dataset_from_array); as an MNIST IDX file, plain or gzip (read_idx_ubyte, which reads from a
// path, so the bytes go through an in-memory file). Every input must end in a value or an error status, with
// no crash, undefined behaviour or allocation beyond what the bytes justify (fuzz.sh runs it with
// an RSS limit: a header must not make the reader allocate what it promises before it has it).
//
// Seeds: tests/fuzz/corpus/data_files/.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/data/idx.h"
#include "runtime/data/npy.h"

namespace {

// One anonymous in-memory file per process (memfd: no disk I/O between inputs), rewritten for
// every input and reached by its /proc/self/fd path, so nothing is left behind however the fuzzer
// ends.
int idx_file() {
  static const int fd = ::memfd_create("fuzz_data_files", 0);
  if (fd < 0) std::abort();
  return fd;
}
const std::string& idx_path() {
  static const std::string path = "/proc/self/fd/" + std::to_string(idx_file());
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  auto array = ipu::data::parse_npy("fuzz.npy", bytes);
  if (array.ok()) {
    auto floats = ipu::data::to_floats(*array, "fuzz.npy");
    (void)floats;
    auto dataset = ipu::data::dataset_from_array(*array, "fuzz.npy");
    (void)dataset;
  }

  const int fd = idx_file();
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    std::abort();
  auto idx = ipu::data::read_idx_ubyte(idx_path());
  (void)idx;
  return 0;
}
