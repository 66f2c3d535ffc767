#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/data/npy.h"

#include "tests/unit/test_temp_dir.h"

namespace {

using ipu::StatusCode;
using ipu::data::Dataset;
using ipu::data::epoch_order;
using ipu::data::open_dataset;

using ipu::testing::TempDir;
using ipu::testing::write_plain;

std::string idx_bytes_from_string(const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out("\0\0\x08", 3);
  out += static_cast<char>(dims.size());
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out += static_cast<char>((d >> shift) & 0xff);
  }
  return out + data;
}

bool is_permutation_of_iota(const std::vector<uint32_t>& order) {
  std::vector<uint32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != i) return false;
  }
  return true;
}

TEST_CASE("data::split_off_validation moves the last samples out, as Keras's validation_split") {
  Dataset data;
  data.source = "five";
  data.sample_shape = {2};
  data.num_samples = 5;
  data.features = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  data.labels = {0, 1, 2, 3, 4};
  data.num_classes = 5;
  // floor(5 · 0.7) = 3 samples stay.
  auto validation = ipu::data::split_off_validation(data, 0.3);
  REQUIRE(validation.ok());
  CHECK(data.num_samples == 3);
  CHECK(data.features == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(data.labels == std::vector<int32_t>{0, 1, 2});
  CHECK(validation->num_samples == 2);
  CHECK(validation->features == std::vector<float>{6, 7, 8, 9});
  CHECK(validation->labels == std::vector<int32_t>{3, 4});
  CHECK(validation->sample_shape == data.sample_shape);
  CHECK(validation->num_classes == 5);

  for (double fraction : {0.0, 1.0, -0.5, 0.99}) {
    CAPTURE(fraction);
    Dataset copy = data;
    auto refused = ipu::data::split_off_validation(copy, fraction);
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(copy.num_samples == 3);
  }
}

} // namespace

TEST_CASE("dataset: sample_size is the product of sample_shape") {
  Dataset ds;
  CHECK(ds.sample_size() == 1);
  ds.sample_shape = {28, 28, 1};
  CHECK(ds.sample_size() == 784);
  ds.sample_shape = {4, 0};
  CHECK(ds.sample_size() == 0);
}

TEST_CASE("dataset: synthetic specs") {
  auto ds = open_dataset("synthetic:100");
  REQUIRE_MESSAGE(ds.ok(), ds.status().to_string());
  CHECK(ds->source == "synthetic:100");
  CHECK(ds->num_samples == 100);
  CHECK(ds->features.size() == 100u * 784u);
  CHECK(ds->labels.size() == 100u);
  CHECK(ds->num_classes == 10);
  CHECK(ds->sample_shape == std::vector<int64_t>{28, 28, 1});

  for (const char* bad : {"synthetic:", "synthetic:0", "synthetic:60001", "synthetic:1000000", "synthetic:+5",
                          "synthetic:5x", "synthetic: 5", "synthetic:-1"}) {
    auto r = open_dataset(bad);
    CHECK_MESSAGE(r.status().code() == StatusCode::kInvalidArgument, bad);
    CHECK(r.status().message().rfind(std::string("data set '") + bad + "': ", 0) == 0);
  }
}

TEST_CASE("dataset: the full synthetic set opens quickly") {
  auto ds = open_dataset("synthetic");
  REQUIRE(ds.ok());
  CHECK(ds->source == "synthetic");
  CHECK(ds->num_samples == 60000);
}

TEST_CASE("dataset: unknown specs list the accepted forms") {
  for (const char* bad : {"", "mnist", "foo:bar", "Synthetic", "npy", "csv:x.csv"}) {
    auto r = open_dataset(bad);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("expected synthetic, synthetic:N, mnist:DIR") != std::string::npos);
  }
}

TEST_CASE("dataset: mnist specs pick the split") {
  TempDir dir;
  write_plain(dir.file("train-images-idx3-ubyte"),
              idx_bytes_from_string({2, 1, 2}, std::string("\x00\xff\x33\x66", 4)));
  write_plain(dir.file("train-labels-idx1-ubyte"), idx_bytes_from_string({2}, std::string("\x05\x07", 2)));
  write_plain(dir.file("t10k-images-idx3-ubyte"),
              idx_bytes_from_string({1, 1, 2}, std::string("\x01\x02", 2)));
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_bytes_from_string({1}, std::string("\x09", 1)));

  auto train = open_dataset("mnist:" + dir.path());
  REQUIRE_MESSAGE(train.ok(), train.status().to_string());
  CHECK(train->source == "mnist:" + dir.path());
  CHECK(train->num_samples == 2);
  CHECK(train->sample_shape == std::vector<int64_t>{1, 2, 1});
  CHECK(train->labels == std::vector<int32_t>{5, 7});
  CHECK(train->features == std::vector<float>{0.0f, 1.0f, 51.0f / 255.0f, 102.0f / 255.0f});

  auto train2 = open_dataset("mnist:" + dir.path() + ":train");
  REQUIRE(train2.ok());
  CHECK(train2->num_samples == 2);

  auto test = open_dataset("mnist:" + dir.path() + ":test");
  REQUIRE_MESSAGE(test.ok(), test.status().to_string());
  CHECK(test->source == "mnist:" + dir.path() + ":test");
  CHECK(test->num_samples == 1);
  CHECK(test->labels == std::vector<int32_t>{9});

  CHECK(open_dataset("mnist:").status().code() == StatusCode::kInvalidArgument);
  CHECK(open_dataset("mnist::test").status().code() == StatusCode::kInvalidArgument);
  CHECK(open_dataset("mnist:" + dir.file("nothing")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("dataset: npy specs with and without labels") {
  TempDir dir;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  REQUIRE(ipu::data::write_npy(dir.file("x.npy"), ipu::data::make_npy_f32({3, 2}, x.data())).ok());
  ipu::data::NpyArray y;
  y.dtype = "i8";
  y.shape = {3};
  const std::vector<int64_t> labels = {1, 1, 0};
  y.data.assign(reinterpret_cast<const char*>(labels.data()), labels.size() * sizeof(int64_t));
  REQUIRE(ipu::data::write_npy(dir.file("y.npy"), y).ok());

  const std::string both = "npy:" + dir.file("x.npy") + "," + dir.file("y.npy");
  auto ds = open_dataset(both);
  REQUIRE_MESSAGE(ds.ok(), ds.status().to_string());
  CHECK(ds->source == both);
  CHECK(ds->num_samples == 3);
  CHECK(ds->features == x);
  CHECK(ds->labels == std::vector<int32_t>{1, 1, 0});
  CHECK(ds->num_classes == 2);
  CHECK(ds->has_labels());

  auto only = open_dataset("npy:" + dir.file("x.npy"));
  REQUIRE_MESSAGE(only.ok(), only.status().to_string());
  CHECK(only->labels.empty());
  CHECK(!only->has_labels());
  CHECK(only->num_classes == 0);

  CHECK(open_dataset("npy:").status().code() == StatusCode::kInvalidArgument);
  CHECK(open_dataset("npy:," + dir.file("y.npy")).status().code() == StatusCode::kInvalidArgument);
  CHECK(open_dataset("npy:" + dir.file("x.npy") + ",").status().code() == StatusCode::kInvalidArgument);
  CHECK(open_dataset(both + "," + dir.file("y.npy")).status().code() == StatusCode::kInvalidArgument);
  auto missing = open_dataset("npy:" + dir.file("nope.npy"));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().rfind(dir.file("nope.npy") + ": ", 0) == 0);
}

TEST_CASE("epoch_order: identity without shuffle, a seeded permutation with it") {
  CHECK(epoch_order(5, false, 123, 7) == std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(epoch_order(0, true, 1, 0).empty());
  CHECK(epoch_order(1, true, 1, 0) == std::vector<uint32_t>{0});

  const auto a = epoch_order(1000, true, 12345, 3);
  CHECK(is_permutation_of_iota(a));
  CHECK(a == epoch_order(1000, true, 12345, 3));
  CHECK(a != epoch_order(1000, true, 12345, 4));
  CHECK(a != epoch_order(1000, true, 12346, 3));
  CHECK(is_permutation_of_iota(epoch_order(60000, true, 0, 0)));
}

TEST_CASE("epoch_order: pinned values, independent of the standard library") {
  // The engine itself: the C++ standard fixes the 10000th output of a default mt19937_64.
  std::mt19937_64 engine;
  engine.discard(9999);
  CHECK(engine() == 9981545732273789042ULL);

  // From an independent Python implementation (mt19937_64 seeded with splitmix64(seed, epoch),
  // Fisher-Yates from the back with rejection sampling on the raw 64-bit outputs).
  CHECK(epoch_order(10, true, 42, 0) == std::vector<uint32_t>{2, 9, 0, 7, 3, 6, 5, 4, 8, 1});
  CHECK(epoch_order(10, true, 42, 1) == std::vector<uint32_t>{7, 3, 4, 1, 8, 5, 0, 9, 2, 6});
  CHECK(epoch_order(10, true, 7, 0) == std::vector<uint32_t>{1, 8, 6, 0, 9, 2, 4, 5, 3, 7});
  CHECK(epoch_order(16, true, 0, -1) ==
        std::vector<uint32_t>{7, 8, 9, 15, 10, 12, 1, 6, 0, 13, 11, 4, 5, 3, 2, 14});
  const auto big = epoch_order(1000, true, 12345, 3);
  CHECK(std::vector<uint32_t>(big.begin(), big.begin() + 12) ==
        std::vector<uint32_t>{560, 302, 373, 413, 591, 799, 929, 550, 441, 239, 187, 641});
}
