// Huge-page advice (runtime/base/huge_pages.h): only whole 2 MiB pages inside a buffer are
// advised, and small buffers are left alone, so the advice never reaches memory the buffer does
// not own.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "runtime/base/huge_pages.h"

namespace {

using ipu::huge_pages_inside;
using ipu::kHugePageBytes;

constexpr uintptr_t kAligned = 64 * kHugePageBytes; // an address on a huge-page boundary

TEST_CASE("huge pages: an aligned buffer's whole pages, and no page it only partly covers") {
  const ipu::HugePageSpan whole = huge_pages_inside(kAligned, 3 * kHugePageBytes);
  CHECK(whole.first == kAligned);
  CHECK(whole.last == kAligned + 3 * kHugePageBytes);
  const ipu::HugePageSpan partial_end = huge_pages_inside(kAligned, 3 * kHugePageBytes - 1);
  CHECK(partial_end.last == kAligned + 2 * kHugePageBytes);
}

TEST_CASE("huge pages: an unaligned buffer starts at its first boundary and ends at its last") {
  const uintptr_t begin = kAligned + 16; // as malloc returns a large chunk: past its header
  const ipu::HugePageSpan span = huge_pages_inside(begin, 4 * kHugePageBytes);
  CHECK(span.first == kAligned + kHugePageBytes);
  CHECK(span.last == kAligned + 4 * kHugePageBytes);
  CHECK(span.first >= begin);
  CHECK(span.last <= begin + 4 * kHugePageBytes);
}

TEST_CASE("huge pages: buffers under two huge pages are left alone") {
  for (size_t bytes : {size_t{0}, size_t{4096}, kHugePageBytes, 2 * kHugePageBytes - 1}) {
    const ipu::HugePageSpan span = huge_pages_inside(kAligned, bytes);
    CHECK(span.first == span.last);
  }
}

TEST_CASE("huge pages: advised memory is memory as before") {
  const size_t bytes = 3 * kHugePageBytes;
  auto* data = static_cast<unsigned char*>(std::aligned_alloc(kHugePageBytes, bytes));
  REQUIRE(data != nullptr);
  ipu::advise_huge_pages(data + 1, bytes - 1);
  std::memset(data, 0x5a, bytes);
  CHECK(data[0] == 0x5a);
  CHECK(data[bytes - 1] == 0x5a);
  std::free(data);
}

} // namespace
