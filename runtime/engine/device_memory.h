// The device's memory in host memory: one block holding every replica's tensors, each on its own
// cache line at an offset, so the block is advised transparent huge pages once and small tensors
// share them (runtime/base/huge_pages.h). Under AddressSanitizer a poisoned line follows each
// tensor, so a kernel that overruns its tensor is caught as when each tensor was an allocation
// of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::engine {

class DeviceMemory {
public:
  // Room for `replicas` copies of tensors of `tensor_bytes` bytes each. A tensor's bytes are left
  // for the caller to set (they may hold anything); every other byte of the block is zero.
  // ResourceExhausted if the block cannot be allocated.
  static StatusOr<DeviceMemory> allocate(const std::vector<size_t>& tensor_bytes, uint32_t replicas);

  std::byte* tensor(uint32_t tensor, uint32_t replica) const {
    return m_block.get() + m_offsets[replica * m_tensors + tensor];
  }

private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Free> m_block;
  std::vector<size_t> m_offsets; // [replica * tensors + tensor]
  size_t m_tensors = 0;
};

} // namespace ipu::engine
