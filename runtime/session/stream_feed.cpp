#include "runtime/session/stream_feed.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ipu::session {

void StreamFeed::add(uint32_t stream, Source source) {
  m_streams[stream] = Fed{std::move(source), 0};
}

Status StreamFeed::pull(uint32_t stream, std::span<std::byte> destination) {
  const auto found = m_streams.find(stream);
  if (found == m_streams.end())
    return failed_precondition("the host feeds no stream " + std::to_string(stream));
  Fed& fed = found->second;
  const Source& source = fed.source;
  const uint64_t transfer = fed.transfers++;
  if (source.whole) {
    if (destination.size() != source.bytes.size()) return data_loss(source.overrun);
    std::memcpy(destination.data(), source.bytes.data(), destination.size());
    return Status();
  }
  const uint64_t begin = (source.first + transfer / source.share) * destination.size();
  const uint64_t available = begin < source.bytes.size() ? source.bytes.size() - begin : 0;
  if (available < destination.size() && !source.zeros_past_end) return data_loss(source.overrun);
  const size_t copied = static_cast<size_t>(std::min<uint64_t>(available, destination.size()));
  if (copied > 0) std::memcpy(destination.data(), source.bytes.data() + begin, copied);
  std::memset(destination.data() + copied, 0, destination.size() - copied);
  return Status();
}

uint64_t StreamFeed::transfers(uint32_t stream) const {
  const auto found = m_streams.find(stream);
  return found == m_streams.end() ? 0 : found->second.transfers;
}

} // namespace ipu::session
