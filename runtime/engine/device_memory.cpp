#include "runtime/engine/device_memory.h"

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/base/huge_pages.h"

namespace ipu::engine {
namespace {

// Every tensor starts on its own cache line and owns the rest of its last one (vectorised kernels
// load whole lines).
constexpr size_t kCacheLine = 64;
size_t whole_lines(size_t bytes) {
  return (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPU_ENGINE_RED_ZONES 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(IPU_ENGINE_RED_ZONES) // GCC's spelling
#define IPU_ENGINE_RED_ZONES 1
#endif
#ifdef IPU_ENGINE_RED_ZONES
constexpr size_t kRedZone = kCacheLine;
#else
constexpr size_t kRedZone = 0;
#endif

} // namespace

void DeviceMemory::Free::operator()(std::byte* p) const {
  std::free(p);
}

StatusOr<DeviceMemory> DeviceMemory::allocate(const std::vector<size_t>& tensor_bytes, uint32_t replicas) {
  DeviceMemory memory;
  memory.m_tensors = tensor_bytes.size();
  size_t block_bytes = 0;
  for (uint32_t r = 0; r < replicas; ++r) {
    for (size_t bytes : tensor_bytes) {
      memory.m_offsets.push_back(block_bytes);
      block_bytes += whole_lines(bytes) + kRedZone;
    }
  }
  const size_t alignment = block_bytes >= 2 * kHugePageBytes ? kHugePageBytes : kCacheLine;
  const size_t rounded = std::max(alignment, (block_bytes + alignment - 1) / alignment * alignment);
  memory.m_block.reset(static_cast<std::byte*>(std::aligned_alloc(alignment, rounded)));
  if (!memory.m_block) {
    return resource_exhausted("cannot allocate the " + std::to_string(block_bytes) +
                              " bytes of the executable's tensors");
  }
  advise_huge_pages(memory.m_block.get(), rounded);
  // The padding between tensors is zeroed here, once: the tensors' own bytes are the caller's.
  std::byte* block = memory.m_block.get();
  const std::vector<size_t>& offsets = memory.m_offsets;
  for (size_t i = 0; i < offsets.size(); ++i) {
    const size_t bytes = tensor_bytes[i % tensor_bytes.size()];
    const size_t next = i + 1 < offsets.size() ? offsets[i + 1] : rounded;
    std::memset(block + offsets[i] + bytes, 0, next - offsets[i] - bytes);
    ASAN_POISON_MEMORY_REGION(block + offsets[i] + whole_lines(bytes), kRedZone);
  }
  return memory;
}

} // namespace ipu::engine
