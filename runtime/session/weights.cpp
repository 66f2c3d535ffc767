#include "runtime/session/session_impl.h"

#include <cmath>
#include <cstring>
#include <string>

#include "runtime/base/half.h"
#include "runtime/base/printable.h"
#include "runtime/session/checkpoint.h"

namespace ipu::session {

Status Session::save_weights(const std::string& dir) const {
  return write_checkpoint(dir, named_weights());
}

std::map<std::string, NamedTensor> Session::named_weights() const {
  const format::Executable& exe = m_impl->engine->executable();
  std::map<std::string, NamedTensor> tensors;
  for (const auto& [index, bytes] : m_impl->host_weights()) {
    const format::Tensor& t = exe.tensors(static_cast<int>(index));
    NamedTensor named;
    named.shape.assign(t.shape().begin(), t.shape().end());
    named.values.resize(bytes.size() / sizeof(float));
    std::memcpy(named.values.data(), bytes.data(), bytes.size());
    named.half = t.dtype() == format::FLOAT16;
    tensors[t.name()] = std::move(named);
  }
  // The position of a schedule; a run at a constant rate writes what it always wrote.
  if (m_impl->schedule) {
    tensors[std::string(kIterationsCheckpointName)] = {{1}, {static_cast<float>(m_impl->iterations)}};
    tensors[std::string(kEpochsCheckpointName)] = {{1}, {static_cast<float>(m_impl->epochs_trained)}};
  }
  return tensors;
}

Status Session::load_weights(const std::string& dir, std::vector<std::string>* not_loaded) {
  IPU_ASSIGN_OR_RETURN(auto tensors, read_checkpoint(dir));
  IPU_RETURN_IF_ERROR(set_weights(tensors, dir));
  if (not_loaded) {
    const format::Executable& exe = m_impl->engine->executable();
    for (const auto& [index, bytes] : m_impl->host_weights())
      tensors.erase(exe.tensors(static_cast<int>(index)).name());
    tensors.erase(std::string(kIterationsCheckpointName));
    tensors.erase(std::string(kEpochsCheckpointName));
    for (const auto& entry : tensors)
      not_loaded->push_back(entry.first);
  }
  return Status();
}

Status Session::set_weights(const std::map<std::string, NamedTensor>& tensors, const std::string& source) {
  const format::Executable& exe = m_impl->engine->executable();
  // Check everything first so a bad checkpoint changes nothing.
  for (const auto& [index, bytes] : m_impl->host_weights()) {
    const format::Tensor& t = exe.tensors(static_cast<int>(index));
    auto it = tensors.find(t.name());
    if (it == tensors.end()) {
      if (t.role() == format::OPTIMIZER_STATE) continue; // a fresh optimizer is fine
      return invalid_argument(source + ": checkpoint has no weight '" + printable(t.name()) + "'");
    }
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    if (it->second.shape != shape) {
      return invalid_argument(source + ": weight '" + printable(t.name()) + "' has shape " +
                              shape_text(it->second.shape) + ", the executable expects " + shape_text(shape));
    }
  }
  // A checkpoint from before schedules, or of an executable without an optimizer, starts at 0.
  std::optional<int64_t> iterations, epochs;
  for (const auto& [name, out] :
       {std::pair{kIterationsCheckpointName, &iterations}, std::pair{kEpochsCheckpointName, &epochs}}) {
    auto it = tensors.find(std::string(name));
    if (it == tensors.end()) continue;
    const std::vector<float>& v = it->second.values;
    if (v.size() != 1 || !(v[0] >= 0) || v[0] != std::floor(v[0]))
      return invalid_argument(source + ": '" + std::string(name) +
                              "' is not one whole number of updates or epochs");
    *out = static_cast<int64_t>(v[0]);
  }
  for (auto& [index, bytes] : m_impl->host_weights()) {
    const format::Tensor& t = exe.tensors(static_cast<int>(index));
    auto it = tensors.find(t.name());
    if (it == tensors.end()) continue;
    std::memcpy(bytes.data(), it->second.values.data(), bytes.size());
    // A float32 file may feed a FLOAT16 tensor: its values round to nearest, as the device would
    // round them on their way in, so the host's copy holds what the device holds.
    if (t.dtype() == format::FLOAT16) {
      auto* values = reinterpret_cast<float*>(bytes.data());
      for (size_t i = 0; i < bytes.size() / sizeof(float); ++i)
        values[i] = round_to_half(values[i]);
    }
  }
  m_impl->iterations = iterations.value_or(0);
  m_impl->epochs_trained = epochs.value_or(0);
  return Status();
}

} // namespace ipu::session
