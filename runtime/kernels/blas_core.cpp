#include "runtime/kernels/blas_core.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace ipu::kernels {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

} // namespace

VectorLevel blas_core_level(std::string_view core) {
  // The x86-64 kernel sets of OpenBLAS 0.3.21's DYNAMIC_ARCH build (driver/others/dynamic.c)
  // that use AVX or wider; the others (Prescott, Core2, Nehalem, Opteron, ...) are SSE code.
  static constexpr std::array<std::pair<std::string_view, VectorLevel>, 10> kLevels{{
      {"SkylakeX", VectorLevel::kAvx512},
      {"Cooperlake", VectorLevel::kAvx512},
      {"SapphireRapids", VectorLevel::kAvx512},
      {"Haswell", VectorLevel::kAvx2},
      {"Zen", VectorLevel::kAvx2},
      {"Excavator", VectorLevel::kAvx2},
      {"Sandybridge", VectorLevel::kAvx},
      {"Bulldozer", VectorLevel::kAvx},
      {"Piledriver", VectorLevel::kAvx},
      {"Steamroller", VectorLevel::kAvx},
  }};
  for (const auto& [name, level] : kLevels) {
    if (same_name(name, core)) return level;
  }
  return VectorLevel::kSse;
}

std::string better_blas_coretype(std::string_view core, VectorLevel cpu) {
  if (blas_core_level(core) >= cpu) return "";
  switch (cpu) {
  case VectorLevel::kAvx512:
    return "SKYLAKEX";
  case VectorLevel::kAvx2:
    return "HASWELL";
  case VectorLevel::kAvx:
    return "SANDYBRIDGE";
  case VectorLevel::kSse:
    break;
  }
  return "";
}

VectorLevel cpu_vector_level() {
  __builtin_cpu_init();
  // SKYLAKEX's kernels use AVX-512 F, CD, BW, DQ and VL.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return VectorLevel::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorLevel::kAvx2;
  if (__builtin_cpu_supports("avx")) return VectorLevel::kAvx;
  return VectorLevel::kSse;
}

std::string loaded_blas_core() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "";
}

void rerun_with_best_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const std::string coretype = better_blas_coretype(loaded_blas_core(), cpu_vector_level());
  if (coretype.empty()) return;
  // The variable stays set in the new image, so it runs on; mpirun's instances inherit it.
  if (setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE"); // not executed: the variable must not claim other kernels
}

} // namespace ipu::kernels
