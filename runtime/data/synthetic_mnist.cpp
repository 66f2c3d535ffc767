#include "runtime/data/synthetic_mnist.h"

#include <algorithm>
#include <array>
#include <vector>

namespace ipu::data {
namespace {

constexpr size_t kRows = 28;
constexpr size_t kCols = 28;
constexpr size_t kPixels = kRows * kCols;
constexpr size_t kClasses = static_cast<size_t>(kSyntheticClasses);
// Samples scored together so each row of W, once loaded, serves several samples.
constexpr size_t kBlock = 4;

} // namespace

float synthetic_u01(uint64_t seed, uint64_t index) {
  // The top 24 bits fit a float32 mantissa exactly, and scaling by 2^-24 is exact too, so this
  // matches numpy's float32 arithmetic bit for bit.
  // Via int32: converting a signed 32-bit integer is one instruction, an unsigned 64-bit one is not.
  return static_cast<float>(static_cast<int32_t>(splitmix64(seed, index) >> 40)) * 0x1p-24f;
}

Dataset make_synthetic_mnist(size_t num_samples) {
  num_samples = std::min(num_samples, kSyntheticMaxSamples);
  Dataset ds;
  ds.source = num_samples == kSyntheticMaxSamples ? "synthetic" : "synthetic:" + std::to_string(num_samples);
  ds.sample_shape = {static_cast<int64_t>(kRows), static_cast<int64_t>(kCols), 1};
  ds.num_samples = num_samples;
  ds.num_classes = kSyntheticClasses;

  ds.features.resize(num_samples * kPixels);
  for (size_t i = 0; i < ds.features.size(); ++i) {
    ds.features[i] = synthetic_u01(kSyntheticSeedX, i);
  }

  // W[p, k] = 2 * u01 - 1 in float64 (exact: u01 has 24 significant bits).
  std::vector<double> w(kPixels * kClasses);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = 2.0 * static_cast<double>(synthetic_u01(kSyntheticSeedW, i)) - 1.0;
  }

  // Scores accumulate over p in increasing order. numpy's matmul may sum in another order, so
  // the float64 scores can differ in the last bits; the argmax only changes if two classes tie to
  // within ~1e-15 relative, which the checksum test shows does not happen in this set.
  ds.labels.resize(num_samples);
  for (size_t n0 = 0; n0 < num_samples; n0 += kBlock) {
    const size_t count = std::min(kBlock, num_samples - n0);
    std::array<std::array<double, kClasses>, kBlock> acc{};
    const float* x = ds.features.data() + n0 * kPixels;
    for (size_t p = 0; p < kPixels; ++p) {
      const double* wp = w.data() + p * kClasses;
      for (size_t b = 0; b < kBlock; ++b) {
        // Rows past the end reuse the last real sample; their scores are never read.
        const size_t row = b < count ? b : count - 1;
        const double xv = static_cast<double>(x[row * kPixels + p]) - 0.5;
        for (size_t k = 0; k < kClasses; ++k) {
          acc[b][k] += xv * wp[k];
        }
      }
    }
    for (size_t b = 0; b < count; ++b) {
      size_t best = 0;
      for (size_t k = 1; k < kClasses; ++k) {
        if (acc[b][k] > acc[b][best]) best = k; // strict: the first maximum wins, like np.argmax
      }
      ds.labels[n0 + b] = static_cast<int32_t>(best);
    }
  }
  return ds;
}

} // namespace ipu::data
