// In-memory training / prediction data sets and the `--data` spec that names them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/splitmix64.h"
#include "runtime/base/status.h"

namespace ipu::data {

struct Dataset {
  std::string source;                // "synthetic", "mnist:DIR", "npy:F,L": used in messages
  std::vector<int64_t> sample_shape; // shape of one sample, e.g. {28, 28, 1}
  size_t num_samples = 0;
  std::vector<float> features; // num_samples * sample_size(), row-major
  std::vector<int32_t> labels; // num_samples class indices, or empty without them
  int num_classes = 0;         // 1 + max label (10 for MNIST); 0 without class indices
  // Labels of float type (one-hot rows, probabilities, regression targets): num_samples ×
  // product of label_shape, row-major, all finite; empty without them. A data set has class
  // indices or float labels, never both.
  std::vector<float> float_labels;
  std::vector<int64_t> label_shape; // the float labels of one sample, e.g. {10}
  // What a user should know about how the data was read, for the tool to print as a note; ""
  // when nothing.
  std::string note;

  // Product of sample_shape (1 for an empty shape).
  size_t sample_size() const;
  // Product of label_shape: the float labels per sample.
  size_t label_size() const;
  bool has_labels() const { return !labels.empty() || !float_labels.empty(); }
};

// Parses a data set spec and loads it:
//   "synthetic"                      the 60000-sample synthetic MNIST set
//   "synthetic:N"                    its first N samples, 1 <= N <= 60000
//   "mnist:DIR" / "mnist:DIR:train"  MNIST IDX files in DIR, training split
//   "mnist:DIR:test"                 the t10k split
//   "npy:FEATURES.npy,LABELS.npy"    features [N, ...] and labels: integer class indices [N] (or
//                                    [N, 1]), or float labels [N, ...] (load_npy_dataset)
//   "npy:FEATURES.npy"               features only (prediction)
StatusOr<Dataset> open_dataset(const std::string& spec);

// Keras's validation_split: moves the last samples of `data` (in its stored order, before any
// shuffling) into a data set of their own and returns it; `data` keeps the first
// floor(num_samples * (1 - fraction)). InvalidArgument unless 0 < fraction < 1 and both parts
// keep at least one sample.
StatusOr<Dataset> split_off_validation(Dataset& data, double fraction);

// Sample order of one epoch. Identity when !shuffle; otherwise a permutation that depends only on
// (seed, epoch): std::mt19937_64 seeded with splitmix64(seed, epoch) drives a Fisher-Yates shuffle
// written here (std::shuffle and the std distributions are implementation-defined, and the order
// must be the same with every standard library). Requires num_samples <= 2^32 - 1.
std::vector<uint32_t> epoch_order(size_t num_samples, bool shuffle, uint64_t seed, int epoch);

using ipu::splitmix64;

} // namespace ipu::data
