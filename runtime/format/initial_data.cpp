#include "runtime/format/initial_data.h"

namespace ipu::format {

Status InitialData::check(const Executable& executable, const std::string& origin) const {
  for (const Tensor& tensor : executable.tensors()) {
    if (!tensor.has_initial_data()) continue;
    const DataRange& range = tensor.initial_data();
    if (range.offset() > m_bytes.size() || range.size() > m_bytes.size() - range.offset()) {
      return data_loss(origin + ": tensor '" + tensor.name() + "': its initial value at bytes [" +
                       std::to_string(range.offset()) + ", +" + std::to_string(range.size()) +
                       ") of the data section runs past its " + std::to_string(m_bytes.size()) + " bytes");
    }
  }
  return Status();
}

std::string_view InitialData::of(const Tensor& tensor) const {
  if (!tensor.has_initial_data()) return tensor.initial_value();
  return m_bytes.substr(tensor.initial_data().offset(), tensor.initial_data().size());
}

} // namespace ipu::format
