// Whole-file reads (runtime/base/file_io.h): map_file maps a regular file and reads what cannot be
// mapped (an empty file, a FIFO, which must be opened once: its writer sees one reader), with
// read_file's errors.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <thread>

#include "runtime/base/file_io.h"
#include "tests/unit/test_temp_dir.h"

namespace {

using ipu::testing::TempDir;

TEST_CASE("map_file: a regular file is mapped, an empty file and a FIFO are read") {
  TempDir dir;
  const std::string content = "bytes of an executable";
  REQUIRE(ipu::write_file_atomic(dir.file("file"), content).ok());
  auto mapped = ipu::map_file(dir.file("file"));
  REQUIRE(mapped.ok());
  CHECK(mapped->bytes == content);

  REQUIRE(ipu::write_file_atomic(dir.file("empty"), "").ok());
  auto empty = ipu::map_file(dir.file("empty"));
  REQUIRE(empty.ok());
  CHECK(empty->bytes.empty());

  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    std::FILE* out = std::fopen(fifo.c_str(), "w"); // blocks until map_file opens the FIFO
    if (out == nullptr) return;                     // then map_file reads nothing: the CHECK fails
    std::fwrite(content.data(), 1, content.size(), out);
    std::fclose(out);
  });
  auto piped = ipu::map_file(fifo);
  writer.join();
  REQUIRE(piped.ok());
  CHECK(piped->bytes == content);

  CHECK(ipu::map_file(dir.file("missing")).status().code() == ipu::StatusCode::kNotFound);
  auto directory = ipu::map_file(dir.path());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.status().message().find("is a directory") != std::string::npos);
}

} // namespace
