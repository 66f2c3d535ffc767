#include "runtime/kernels/strided.h"

#include <algorithm>
#include <string>

namespace ipu::kernels {

Status check_dims(int64_t rank, const int64_t* dims, uint64_t elements, const char* what) {
  if (rank < 1 || rank > format::kMaxTensorRank) {
    return invalid_argument(std::string(what) + ": rank " + std::to_string(rank) + " is outside [1, " +
                            std::to_string(format::kMaxTensorRank) + "]");
  }
  uint64_t product = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (dims[k] <= 0 || product > (uint64_t{1} << 40) / static_cast<uint64_t>(dims[k])) {
      return invalid_argument(std::string(what) + ": dimension " + std::to_string(dims[k]) + " is invalid");
    }
    product *= static_cast<uint64_t>(dims[k]);
  }
  if (product != elements) {
    return invalid_argument(std::string(what) + " has " + std::to_string(elements) +
                            " elements, parameters say " + std::to_string(product));
  }
  return Status();
}

Status check_strides(int64_t rank, const int64_t* dims, const int64_t* strides, int64_t base,
                     uint64_t elements, const char* what, const int64_t* lo, const int64_t* hi) {
  int64_t min = base, max = base;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t first = lo ? std::max<int64_t>(lo[k], 0) : 0;
    const int64_t last = (hi ? std::min(hi[k], dims[k]) : dims[k]) - 1;
    if (first > last) return Status(); // nothing is read
    const int64_t s = strides[k];
    int64_t a = 0, b = 0;
    if (__builtin_mul_overflow(first, s, &a) || __builtin_mul_overflow(last, s, &b) ||
        __builtin_add_overflow(min, std::min(a, b), &min) ||
        __builtin_add_overflow(max, std::max(a, b), &max)) {
      return invalid_argument(std::string(what) + ": stride " + std::to_string(s) + " overflows");
    }
  }
  if (min < 0 || static_cast<uint64_t>(max) >= elements) {
    return invalid_argument(std::string(what) + ": strided reads [" + std::to_string(min) + ", " +
                            std::to_string(max) + "] fall outside its " + std::to_string(elements) +
                            " elements");
  }
  return Status();
}

} // namespace ipu::kernels
