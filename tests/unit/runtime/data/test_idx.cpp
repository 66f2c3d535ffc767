#include <doctest/doctest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/data/idx.h"

#include "tests/unit/test_temp_dir.h"

namespace {

using ipu::StatusCode;
using ipu::data::Dataset;
using ipu::data::load_mnist_idx;
using ipu::data::read_idx_ubyte;

using ipu::testing::TempDir;
using ipu::testing::write_plain;

void put_be32(std::string& out, uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

std::string idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string out;
  out += '\0';
  out += '\0';
  out += '\x08';
  out += static_cast<char>(dims.size());
  for (uint32_t d : dims)
    put_be32(out, d);
  out.append(data.begin(), data.end());
  return out;
}

void write_gz(const std::string& path, const std::string& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) ==
          static_cast<int>(content.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// 3 images of 2x3 pixels with distinct values, and their labels.
const std::vector<uint8_t> kPixels = {0,  1,  2,  3,   4,   255, 10,  20,  30,
                                      40, 50, 60, 128, 127, 126, 125, 124, 123};
const std::vector<uint8_t> kLabels = {3, 0, 9};

void write_split(const TempDir& dir, const std::string& prefix, bool gz) {
  const std::string images = idx_bytes({3, 2, 3}, kPixels);
  const std::string labels = idx_bytes({3}, kLabels);
  if (gz) {
    write_gz(dir.file(prefix + "-images-idx3-ubyte.gz"), images);
    write_gz(dir.file(prefix + "-labels-idx1-ubyte.gz"), labels);
  } else {
    write_plain(dir.file(prefix + "-images-idx3-ubyte"), images);
    write_plain(dir.file(prefix + "-labels-idx1-ubyte"), labels);
  }
}

void check_small_set(const Dataset& ds) {
  CHECK(ds.num_samples == 3);
  CHECK(ds.sample_shape == std::vector<int64_t>{2, 3, 1});
  CHECK(ds.sample_size() == 6);
  CHECK(ds.num_classes == 10);
  CHECK(ds.labels == std::vector<int32_t>{3, 0, 9});
  REQUIRE(ds.features.size() == kPixels.size());
  for (size_t i = 0; i < kPixels.size(); ++i) {
    CHECK(ds.features[i] == static_cast<float>(kPixels[i]) / 255.0f);
  }
  CHECK(ds.features[5] == 1.0f);
  CHECK(ds.features[0] == 0.0f);
}

} // namespace

TEST_CASE("idx: plain train split loads with pixels scaled to [0, 1]") {
  TempDir dir;
  write_split(dir, "train", false);
  auto ds = load_mnist_idx(dir.path(), "train");
  REQUIRE_MESSAGE(ds.ok(), ds.status().to_string());
  check_small_set(*ds);
  CHECK(ds->source == "mnist:" + dir.path());
  // The test split is absent.
  auto test = load_mnist_idx(dir.path(), "test");
  CHECK(test.status().code() == StatusCode::kNotFound);
  CHECK(test.status().message().find("t10k-images-idx3-ubyte") != std::string::npos);
}

TEST_CASE("idx: gzipped test split loads") {
  TempDir dir;
  write_split(dir, "t10k", true);
  auto ds = load_mnist_idx(dir.path() + "/", "test");
  REQUIRE_MESSAGE(ds.ok(), ds.status().to_string());
  check_small_set(*ds);
}

TEST_CASE("idx: read_idx_ubyte returns dims and bytes") {
  TempDir dir;
  write_plain(dir.file("a"), idx_bytes({2, 2}, {1, 2, 3, 4}));
  auto a = read_idx_ubyte(dir.file("a"));
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  CHECK(a->dims == std::vector<int64_t>{2, 2});
  CHECK(a->data == std::vector<uint8_t>{1, 2, 3, 4});
}

TEST_CASE("idx: malformed files are rejected with the file name") {
  TempDir dir;
  const std::string path = dir.file("x");

  SUBCASE("bad magic") {
    std::string bytes = idx_bytes({3}, kLabels);
    bytes[0] = 'P';
    write_plain(path, bytes);
    auto r = read_idx_ubyte(path);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().rfind(path + ": ", 0) == 0);
  }
  SUBCASE("unsupported element type") {
    std::string bytes = idx_bytes({3}, kLabels);
    bytes[2] = '\x0d'; // float32
    write_plain(path, bytes);
    auto r = read_idx_ubyte(path);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("0x0d") != std::string::npos);
  }
  SUBCASE("zero dimensions") {
    write_plain(path, idx_bytes({}, {}));
    CHECK(read_idx_ubyte(path).status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("truncated header") {
    write_plain(path, idx_bytes({3, 2, 3}, {}).substr(0, 9));
    CHECK(read_idx_ubyte(path).status().code() == StatusCode::kDataLoss);
  }
  SUBCASE("truncated data") {
    std::string bytes = idx_bytes({3, 2, 3}, kPixels);
    bytes.pop_back();
    write_plain(path, bytes);
    auto r = read_idx_ubyte(path);
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(r.status().message().find("truncated") != std::string::npos);
  }
  SUBCASE("a few bytes whose header promises 16 GiB") {
    // Refused as truncated once the bytes run out; the reader grows its buffer with them, so this
    // takes 64 KiB, not 16 GiB cleared before the first read.
    write_plain(path, idx_bytes({65536, 65536, 4}, {1, 2, 3, 4}));
    auto r = read_idx_ubyte(path);
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(r.status().message().find("promises 17179869184 data bytes, file has 4") != std::string::npos);
  }
  SUBCASE("trailing bytes") {
    write_plain(path, idx_bytes({3}, kLabels) + "zz");
    CHECK(read_idx_ubyte(path).status().code() == StatusCode::kDataLoss);
  }
  SUBCASE("truncated gzip stream") {
    write_gz(path + ".gz", idx_bytes({3, 2, 3}, kPixels));
    std::ifstream in(path + ".gz", std::ios::binary);
    std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_plain(path, gz.substr(0, gz.size() - 12)); // cut into the deflate data and the trailer
    auto r = read_idx_ubyte(path);
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(r.status().message().rfind(path + ": ", 0) == 0);
  }
  SUBCASE("missing file") {
    CHECK(read_idx_ubyte(dir.file("nope")).status().code() == StatusCode::kNotFound);
  }
  SUBCASE("directory") {
    CHECK(read_idx_ubyte(dir.path()).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("idx: inconsistent mnist splits are rejected") {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte");
  const std::string labels = dir.file("train-labels-idx1-ubyte");

  SUBCASE("count mismatch between images and labels") {
    write_plain(images, idx_bytes({3, 2, 3}, kPixels));
    write_plain(labels, idx_bytes({2}, {1, 2}));
    auto r = load_mnist_idx(dir.path(), "train");
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message() == labels + ": has 2 labels but " + images + " has 3 images");
  }
  SUBCASE("label out of range") {
    write_plain(images, idx_bytes({3, 2, 3}, kPixels));
    write_plain(labels, idx_bytes({3}, {1, 10, 2}));
    auto r = load_mnist_idx(dir.path(), "train");
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("label 10 at index 1") != std::string::npos);
  }
  SUBCASE("images with the wrong rank") {
    write_plain(images, idx_bytes({3, 6}, kPixels));
    write_plain(labels, idx_bytes({3}, kLabels));
    CHECK(load_mnist_idx(dir.path(), "train").status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("labels missing") {
    write_plain(images, idx_bytes({3, 2, 3}, kPixels));
    auto r = load_mnist_idx(dir.path(), "train");
    CHECK(r.status().code() == StatusCode::kNotFound);
    CHECK(r.status().message().find("train-labels-idx1-ubyte") != std::string::npos);
  }
  SUBCASE("truncated images") {
    write_plain(images, idx_bytes({3, 2, 3}, kPixels).substr(0, 20));
    write_plain(labels, idx_bytes({3}, kLabels));
    CHECK(load_mnist_idx(dir.path(), "train").status().code() == StatusCode::kDataLoss);
  }
  SUBCASE("unknown split") {
    auto r = load_mnist_idx(dir.path(), "valid");
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("'valid'") != std::string::npos);
  }
}
