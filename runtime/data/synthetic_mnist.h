// Synthetic MNIST-shaped data set, bit-identical to /work/shared/peers/synthetic_mnist.py so that
// ipucc and the reference frameworks train on the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/data/dataset.h"

namespace ipu::data {

inline constexpr uint64_t kSyntheticSeedX = 0x5EED0001;
inline constexpr uint64_t kSyntheticSeedW = 0x5EED0002;
inline constexpr size_t kSyntheticMaxSamples = 60000;
inline constexpr int kSyntheticClasses = 10;

// u01(seed, i) = float32((splitmix64(seed, i) >> 40) * 2^-24), exact, in [0, 1).
float synthetic_u01(uint64_t seed, uint64_t index);

// The first num_samples (clamped to 60000) samples of the set: shape {28, 28, 1},
// X[n, r, c, 0] = u01(kSyntheticSeedX, n*784 + r*28 + c), labels 0..9 from a fixed random linear
// map (argmax_k sum_p (X[n,p] - 0.5) * W[p,k] in float64, first max wins). num_classes is always 10.
Dataset make_synthetic_mnist(size_t num_samples = kSyntheticMaxSamples);

} // namespace ipu::data
