#include "runtime/base/huge_pages.h"

#include <sys/mman.h>

#include <cstddef>

namespace ipu {

HugePageSpan huge_pages_inside(uintptr_t begin, size_t bytes) {
  if (bytes < 2 * kHugePageBytes) return {};
  const uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t last = (begin + bytes) / kHugePageBytes * kHugePageBytes;
  return {first, last};
}

void advise_huge_pages(void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const HugePageSpan span = huge_pages_inside(begin, bytes);
  // Advice only: where the kernel refuses it (no transparent huge pages), memory is as before.
  if (span.last > span.first)
    (void)::madvise(static_cast<std::byte*>(data) + (span.first - begin), span.last - span.first,
                    MADV_HUGEPAGE);
}

} // namespace ipu
