#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/base/sha256.h"
#include "runtime/data/synthetic_mnist.h"

namespace {

using ipu::data::Dataset;
using ipu::data::make_synthetic_mnist;

std::string_view bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)};
}

std::string labels_sha256_u8(const std::vector<int32_t>& labels) {
  std::string bytes;
  for (int32_t l : labels)
    bytes += static_cast<char>(static_cast<uint8_t>(l));
  return ipu::sha256_hex(bytes);
}

} // namespace

// Expected values come from `python3 /work/shared/peers/synthetic_mnist.py` (numpy 1.24), plus the
// sha256 of X.tobytes() and of make(1000)'s labels computed with the same module.
TEST_CASE("synthetic mnist: full set matches the python reference bit for bit") {
  const Dataset ds = make_synthetic_mnist();
  CHECK(ds.source == "synthetic");
  CHECK(ds.num_samples == 60000);
  CHECK(ds.sample_shape == std::vector<int64_t>{28, 28, 1});
  CHECK(ds.sample_size() == 784);
  CHECK(ds.num_classes == 10);
  REQUIRE(ds.features.size() == 60000u * 784u);
  REQUIRE(ds.labels.size() == 60000u);

  // X[0, 0, :4, 0]: every value is k * 2^-24 exactly.
  CHECK(ds.features[0] == 209275 * 0x1p-24f);
  CHECK(ds.features[1] == 14426080 * 0x1p-24f);
  CHECK(ds.features[2] == 7682835 * 0x1p-24f);
  CHECK(ds.features[3] == 3040244 * 0x1p-24f);

  // Every partial sum is a multiple of 2^-24 below 2^29, so a float64 sum is exact in any order
  // and must equal numpy's 23520450.530176222 to the last bit.
  double sum = 0.0;
  for (float v : ds.features)
    sum += static_cast<double>(v);
  CHECK(sum == 0x1.66e4c287b9a10p+24);

  CHECK(ipu::sha256_hex(bytes_of(ds.features)) ==
        "f188145d11a624a3dcc8758c42b0ea0e5512252a51aba06b5f3f194536270fc2");

  std::array<int, 10> histogram{};
  bool in_range = true;
  for (int32_t l : ds.labels) {
    if (l < 0 || l >= 10) {
      in_range = false;
      continue;
    }
    ++histogram[static_cast<size_t>(l)];
  }
  CHECK(in_range);
  CHECK(histogram == std::array<int, 10>{6215, 6357, 5985, 5259, 6042, 6043, 6365, 5616, 6105, 6013});
  CHECK(std::vector<int32_t>(ds.labels.begin(), ds.labels.begin() + 16) ==
        std::vector<int32_t>{7, 7, 7, 2, 6, 3, 6, 3, 8, 8, 0, 1, 7, 7, 7, 8});
  CHECK(labels_sha256_u8(ds.labels) == "a4359c2e42c0f2421193b3bb44a2f37795d9b43c29fa8d8be7f6e5347b6d2617");
}

TEST_CASE("synthetic mnist: a smaller set is a prefix of the full set") {
  const Dataset ds = make_synthetic_mnist(1000);
  CHECK(ds.source == "synthetic:1000");
  CHECK(ds.num_samples == 1000);
  CHECK(ds.features.size() == 1000u * 784u);
  CHECK(ds.num_classes == 10);
  CHECK(labels_sha256_u8(ds.labels) == "c5821376df491b42e36b8b36638b3dda60baeb477d97d1c7ba444e3b3b16d54b");
  CHECK(ipu::sha256_hex(bytes_of(ds.features)) ==
        "7f09925caf21cff6e3b929d8acf7f038d4e1ce0079949c17ec561e0d1a4c64a9");

  // Block boundaries of the label loop must not matter: odd sizes agree with the prefix.
  const Dataset small = make_synthetic_mnist(7);
  REQUIRE(small.labels.size() == 7);
  CHECK(std::vector<int32_t>(small.labels) == std::vector<int32_t>(ds.labels.begin(), ds.labels.begin() + 7));
  CHECK(std::vector<int32_t>(small.labels) == std::vector<int32_t>{7, 7, 7, 2, 6, 3, 6});
}

TEST_CASE("synthetic mnist: tiny sizes and the u01 helper") {
  CHECK(make_synthetic_mnist(0).num_samples == 0);
  CHECK(make_synthetic_mnist(0).features.empty());
  CHECK(make_synthetic_mnist(1).labels == std::vector<int32_t>{7});
  CHECK(ipu::data::synthetic_u01(ipu::data::kSyntheticSeedX, 0) == 209275 * 0x1p-24f);
}
