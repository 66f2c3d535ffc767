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
  // steps × batch × label_size, for float labels (padding: NaN rows, format::is_padded_float_label_row)
  std::vector<float> float_labels;
  int64_t valid_samples = 0; // samples that are real data, first; the rest is padding
};

// Gathers samples order[first .. first + steps*batch); positions past the end of `order` are
// padding (the last execution of predict and evaluate): zero features, labels that the loss and
// the count of correct rows skip. With `float_labels`, a data set's class indices go into
// float_labels as numbers, one per sample (the loss on float labels of a one-output model).
ExecutionFeed gather_execution(const data::Dataset& data, std::span<const uint32_t> order, size_t first,
                               int64_t steps, int64_t batch, bool float_labels = false);

} // namespace ipu::session
