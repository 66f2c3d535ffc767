#include "runtime/data/dataset.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "runtime/data/idx.h"
#include "runtime/data/npy.h"
#include "runtime/data/synthetic_mnist.h"

namespace ipu::data {
namespace {

constexpr const char* kSpecForms = "expected synthetic, synthetic:N, mnist:DIR, mnist:DIR:test, "
                                   "npy:FEATURES.npy,LABELS.npy or npy:FEATURES.npy";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status spec_error(const std::string& spec, const std::string& what) {
  return invalid_argument("data set '" + spec + "': " + what);
}

// Unbiased integer in [0, bound) from the engine's raw 64-bit output: rejection sampling below the
// largest multiple of bound, so the result is fully specified by the engine's (standardised) sequence.
uint64_t uniform_below(std::mt19937_64& engine, uint64_t bound) {
  // 2^64 mod bound, computed without 128-bit arithmetic.
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t r = engine();
    if (r >= threshold) return r % bound;
  }
}

} // namespace

size_t Dataset::sample_size() const {
  size_t size = 1;
  for (int64_t d : sample_shape)
    size *= static_cast<size_t>(d);
  return size;
}

StatusOr<Dataset> split_off_validation(Dataset& data, double fraction) {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    return invalid_argument("--validation-split " + std::to_string(fraction) + " is not between 0 and 1");
  }
  const auto kept = static_cast<size_t>(std::floor(static_cast<double>(data.num_samples) * (1.0 - fraction)));
  if (kept == 0 || kept == data.num_samples) {
    return invalid_argument(data.source + ": --validation-split " + std::to_string(fraction) + " of " +
                            std::to_string(data.num_samples) + " samples leaves " +
                            (kept == 0 ? "nothing to train on" : "nothing to validate on"));
  }
  Dataset validation;
  validation.source = data.source + " (validation split)";
  validation.sample_shape = data.sample_shape;
  validation.num_samples = data.num_samples - kept;
  validation.num_classes = data.num_classes;
  const auto first_feature = static_cast<std::ptrdiff_t>(kept * data.sample_size());
  validation.features.assign(data.features.begin() + first_feature, data.features.end());
  data.features.resize(static_cast<size_t>(first_feature));
  validation.label_shape = data.label_shape;
  if (!data.labels.empty()) {
    validation.labels.assign(data.labels.begin() + static_cast<std::ptrdiff_t>(kept), data.labels.end());
    data.labels.resize(kept);
  }
  if (!data.float_labels.empty()) {
    const auto first_label = static_cast<std::ptrdiff_t>(kept * data.label_size());
    validation.float_labels.assign(data.float_labels.begin() + first_label, data.float_labels.end());
    data.float_labels.resize(static_cast<size_t>(first_label));
  }
  data.num_samples = kept;
  return validation;
}

size_t Dataset::label_size() const {
  size_t n = 1;
  for (int64_t d : label_shape)
    n *= static_cast<size_t>(d);
  return n;
}

StatusOr<Dataset> open_dataset(const std::string& spec) {
  if (spec == "synthetic") return make_synthetic_mnist(kSyntheticMaxSamples);

  if (starts_with(spec, "synthetic:")) {
    const std::string digits = spec.substr(10);
    // Parsed by hand: stoul accepts signs, spaces and trailing junk.
    size_t n = 0;
    bool valid = !digits.empty() && digits.size() <= 6;
    for (char c : digits) {
      if (c < '0' || c > '9') {
        valid = false;
        break;
      }
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (!valid || n == 0 || n > kSyntheticMaxSamples) {
      return spec_error(spec, "the sample count must be an integer from 1 to " +
                                  std::to_string(kSyntheticMaxSamples));
    }
    return make_synthetic_mnist(n);
  }

  if (starts_with(spec, "mnist:")) {
    std::string dir = spec.substr(6);
    std::string split = "train";
    if (ends_with(dir, ":test")) {
      split = "test";
      dir.resize(dir.size() - 5);
    } else if (ends_with(dir, ":train")) {
      dir.resize(dir.size() - 6);
    }
    if (dir.empty()) return spec_error(spec, "missing the directory after 'mnist:'");
    IPU_ASSIGN_OR_RETURN(Dataset ds, load_mnist_idx(dir, split));
    ds.source = spec;
    return ds;
  }

  if (starts_with(spec, "npy:")) {
    const std::string files = spec.substr(4);
    const size_t comma = files.find(',');
    std::string features = files.substr(0, comma);
    std::string labels = comma == std::string::npos ? "" : files.substr(comma + 1);
    if (comma != std::string::npos && labels.find(',') != std::string::npos) {
      return spec_error(spec, "expected at most two files separated by one ','");
    }
    if (features.empty()) return spec_error(spec, "missing the features file after 'npy:'");
    if (comma != std::string::npos && labels.empty())
      return spec_error(spec, "missing the labels file after ','");
    IPU_ASSIGN_OR_RETURN(Dataset ds, load_npy_dataset(features, labels));
    ds.source = spec;
    return ds;
  }

  return spec_error(spec, kSpecForms);
}

std::vector<uint32_t> epoch_order(size_t num_samples, bool shuffle, uint64_t seed, int epoch) {
  assert(num_samples <= std::numeric_limits<uint32_t>::max());
  std::vector<uint32_t> order(num_samples);
  std::iota(order.begin(), order.end(), 0u);
  if (!shuffle || num_samples < 2) return order;
  // splitmix64 decorrelates nearby (seed, epoch) pairs, which mt19937_64 seeding alone does not.
  std::mt19937_64 engine(splitmix64(seed, static_cast<uint64_t>(static_cast<int64_t>(epoch))));
  for (size_t i = num_samples - 1; i > 0; --i) {
    const auto j = static_cast<size_t>(uniform_below(engine, i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

} // namespace ipu::data
