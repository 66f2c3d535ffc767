// Transparent huge pages for large host buffers: the device's tensors, an executable's inflated
// payload and the outputs a run collects. Memory is first touched one page at a time, and with
// 4 KiB pages that is a page fault per 4 KiB; on the virtual machines CI and the benchmarks run on
// each fault costs 10 to 20 us (collecting one 16 MB output of the 2048³ MatMul took 72 ms, nearly
// all of it faults). Advised memory faults once per 2 MiB where the kernel's transparent_hugepage
// mode is "madvise" or "always"; with "never" the advice changes nothing.
//
// Not the files read whole nor the inputs converted from them: with those advised, ipurun predict
// of the MLP at batch 32 ran at 65,000 to 160,000 samples/s from run to run instead of a steady
// 140,000 (cause not found; measured, then left out).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ipu {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// The whole huge pages inside [begin, begin + bytes), as [first, last) addresses (first == last
// when there is none, or when the buffer is smaller than two huge pages: it would gain a page at
// most).
struct HugePageSpan {
  uintptr_t first = 0;
  uintptr_t last = 0;
};
HugePageSpan huge_pages_inside(uintptr_t begin, size_t bytes);

// Advises the kernel to back the huge pages inside [data, data + bytes) with huge pages.
void advise_huge_pages(void* data, size_t bytes);

} // namespace ipu
