#include "runtime/session/infeed.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/format/codelet.h"

namespace ipu::session {

ExecutionFeed gather_execution(const data::Dataset& data, std::span<const uint32_t> order, size_t first,
                               int64_t steps, int64_t batch, bool float_labels) {
  const size_t sample = data.sample_size();
  const size_t count = static_cast<size_t>(steps * batch);
  ExecutionFeed feed;
  feed.features.assign(count * sample, 0.0f);
  const bool indices_as_floats = float_labels && !data.labels.empty();
  if (!data.labels.empty() && !indices_as_floats) feed.labels.assign(count, format::kPaddedRowLabel);
  const size_t label_size = indices_as_floats ? 1 : data.label_size();
  if (!data.float_labels.empty() || indices_as_floats)
    feed.float_labels.assign(count * label_size, std::numeric_limits<float>::quiet_NaN());
  const size_t valid = first < order.size() ? std::min(count, order.size() - first) : 0;
  for (size_t i = 0; i < valid; ++i) {
    const uint32_t index = order[first + i];
    std::memcpy(feed.features.data() + i * sample, data.features.data() + index * sample,
                sample * sizeof(float));
    if (indices_as_floats) {
      feed.float_labels[i] = static_cast<float>(data.labels[index]);
    } else if (!data.labels.empty()) {
      feed.labels[i] = data.labels[index];
    }
    if (!data.float_labels.empty()) {
      std::memcpy(feed.float_labels.data() + i * label_size, data.float_labels.data() + index * label_size,
                  label_size * sizeof(float));
    }
  }
  feed.valid_samples = static_cast<int64_t>(valid);
  return feed;
}

} // namespace ipu::session
