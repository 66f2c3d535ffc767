// Initial values that stay in an executable file's data section: a run reads them from the file's
// bytes (mapped where it is a regular file) rather than from copies in the parsed message
// (docs/executable_format.md, "The data section").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::format {

class InitialData {
public:
  // No data section: every initial value is inline (an executable built in memory).
  InitialData() = default;
  // The data section `bytes`, kept valid by `owner`.
  InitialData(std::shared_ptr<const void> owner, std::string_view bytes)
      : m_owner(std::move(owner)), m_bytes(bytes) {}

  // DataLoss naming `origin` and the tensor unless every initial_data range of `executable` lies
  // inside the data section. `of` may only be asked for tensors of an executable that passed.
  Status check(const Executable& executable, const std::string& origin) const;

  // `tensor`'s initial value: inline, or its range of the data section; empty means all zeros.
  std::string_view of(const Tensor& tensor) const;

private:
  std::shared_ptr<const void> m_owner;
  std::string_view m_bytes;
};

// An executable read to run, and the data section its initial values are in.
struct LoadedExecutable {
  Executable executable;
  InitialData initial_data;
};

} // namespace ipu::format
