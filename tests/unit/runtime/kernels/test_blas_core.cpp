// The OpenBLAS kernel set the tools ask for: only where the loaded one is narrower than the CPU.
#include <doctest/doctest.h>

#include "runtime/kernels/blas_core.h"

namespace {

using ipu::kernels::better_blas_coretype;
using ipu::kernels::blas_core_level;
using ipu::kernels::VectorLevel;

TEST_CASE("OpenBLAS's kernel sets are ranked by their vectors, whatever the name's case") {
  CHECK(blas_core_level("SkylakeX") == VectorLevel::kAvx512);
  CHECK(blas_core_level("COOPERLAKE") == VectorLevel::kAvx512);
  CHECK(blas_core_level("Haswell") == VectorLevel::kAvx2);
  CHECK(blas_core_level("zen") == VectorLevel::kAvx2);
  CHECK(blas_core_level("Sandybridge") == VectorLevel::kAvx);
  CHECK(blas_core_level("Prescott") == VectorLevel::kSse);
  CHECK(blas_core_level("Nehalem") == VectorLevel::kSse);
  CHECK(blas_core_level("") == VectorLevel::kSse);
  CHECK(blas_core_level("SkylakeX2") == VectorLevel::kSse);
}

TEST_CASE("a kernel set narrower than the CPU is replaced by the widest the CPU runs") {
  // Debian 12's OpenBLAS on an Emerald Rapids Xeon.
  CHECK(better_blas_coretype("Prescott", VectorLevel::kAvx512) == "SKYLAKEX");
  CHECK(better_blas_coretype("Haswell", VectorLevel::kAvx512) == "SKYLAKEX");
  CHECK(better_blas_coretype("Core2", VectorLevel::kAvx2) == "HASWELL");
  CHECK(better_blas_coretype("Nehalem", VectorLevel::kAvx) == "SANDYBRIDGE");
}

TEST_CASE("a kernel set as wide as the CPU, or an SSE CPU, keeps OpenBLAS's choice") {
  CHECK(better_blas_coretype("SkylakeX", VectorLevel::kAvx512).empty());
  CHECK(better_blas_coretype("Cooperlake", VectorLevel::kAvx512).empty());
  CHECK(better_blas_coretype("Zen", VectorLevel::kAvx2).empty());
  // An AVX-512 kernel on a CPU without it cannot be OpenBLAS's choice; nothing narrows it.
  CHECK(better_blas_coretype("SkylakeX", VectorLevel::kAvx2).empty());
  CHECK(better_blas_coretype("Prescott", VectorLevel::kSse).empty());
}

} // namespace
