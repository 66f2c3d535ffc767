// Host side of one execution's infeed: gathers the samples of steps_per_execution batches
// (in epoch order) into contiguous buffers, ready to stream step by step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/data/dataset.h"

namespace ipu::session {

struct ExecutionFeed {
  std::vector<float> features; // steps × batch × sample_size
  std::vector<int32_t> labels; // steps × batch (empty without labels; format::kPaddedRowLabel for padding)
  int64_t valid_samples = 0;   // samples that are real data, first; the rest is padding
};

// Gathers samples order[first .. first + steps*batch); positions past the end of `order` are
// padding (the last execution of predict and evaluate): zero features, labels that the loss and
// the count of correct rows skip.
ExecutionFeed gather_execution(const data::Dataset& data, std::span<const uint32_t> order, size_t first,
                               int64_t steps, int64_t batch);

} // namespace ipu::session
