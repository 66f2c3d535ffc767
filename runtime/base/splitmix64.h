// The splitmix64 counter generator: value number `index` of the stream `seed`. Shared by the
// synthetic data set (bit-exact with ../shared/peers/synthetic_mnist.py), epoch shuffling and
// the compiler's weight initializers, so every machine produces the same numbers.
#pragma once

#include <cstdint>

namespace ipu {

inline uint64_t splitmix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

} // namespace ipu
