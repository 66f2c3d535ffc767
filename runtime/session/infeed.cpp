#include "runtime/session/infeed.h"

#include <algorithm>
#include <cstring>

#include "runtime/format/codelet.h"

namespace ipu::session {

ExecutionFeed gather_execution(const data::Dataset& data, std::span<const uint32_t> order, size_t first,
                               int64_t steps, int64_t batch) {
  const size_t sample = data.sample_size();
  const size_t count = static_cast<size_t>(steps * batch);
  ExecutionFeed feed;
  feed.features.assign(count * sample, 0.0f);
  if (data.has_labels()) feed.labels.assign(count, format::kPaddedRowLabel);
  const size_t valid = first < order.size() ? std::min(count, order.size() - first) : 0;
  for (size_t i = 0; i < valid; ++i) {
    const uint32_t index = order[first + i];
    std::memcpy(feed.features.data() + i * sample, data.features.data() + index * sample,
                sample * sizeof(float));
    if (data.has_labels()) feed.labels[i] = data.labels[index];
  }
  feed.valid_samples = static_cast<int64_t>(valid);
  return feed;
}

} // namespace ipu::session
