#include "runtime/session/session_impl.h"

#include <string>

namespace ipu::session {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

bool sample_shape_fits(const std::vector<int64_t>& got, const std::vector<int64_t>& expected) {
  if (got == expected) return true;
  uint64_t expected_size = 1, got_size = 1;
  for (int64_t d : expected)
    expected_size *= static_cast<uint64_t>(d);
  for (int64_t d : got)
    got_size *= static_cast<uint64_t>(d);
  if (got_size != expected_size) return false;
  // A flat sample is accepted either way round (Flatten is the usual first layer), and so is one
  // that differs only in size-1 axes (HWC data with one channel feeding a CHW model).
  if (expected.size() == 1 || got.size() == 1) return true;
  auto squeezed = [](const std::vector<int64_t>& shape) {
    std::vector<int64_t> out;
    for (int64_t d : shape) {
      if (d != 1) out.push_back(d);
    }
    return out;
  };
  return squeezed(got) == squeezed(expected);
}

Status Session::Impl::check_data(const data::Dataset& data, bool need_labels) const {
  // A model without inputs (an ONNX model of constants) has no features stream: it only predicts.
  if (!stream_features)
    return invalid_argument(data.source +
                            ": this model has no inputs to feed a data set to; predict without one");
  const format::Stream& features = engine->executable().streams(static_cast<int>(*stream_features));
  if (features.shape_size() < 1 || engine->executable().inputs_size() > 1 ||
      (engine->executable().inputs_size() == 1 && !engine->executable().inputs(0).batched())) {
    return invalid_argument(
        data.source +
        ": a data set feeds models with one batched input; give this one's inputs with --input");
  }
  std::vector<int64_t> expected(features.shape().begin() + 1, features.shape().end());
  if (!sample_shape_fits(data.sample_shape, expected)) {
    return invalid_argument(data.source + ": samples have shape " + shape_text(data.sample_shape) +
                            ", the executable expects " + shape_text(expected));
  }
  if (need_labels) {
    if (!data.has_labels()) return invalid_argument(data.source + ": has no labels");
    if (float_labels) return check_float_labels(data);
    if (data.labels.empty()) {
      return invalid_argument(data.source + ": has float labels; the executable's loss "
                                            "(sparse_categorical_crossentropy) takes integer class indices");
    }
    const int64_t classes = engine->executable().num_classes();
    for (size_t i = 0; i < data.labels.size(); ++i) {
      if (data.labels[i] < 0 || data.labels[i] >= classes) {
        return invalid_argument(data.source + ": label " + std::to_string(data.labels[i]) + " of sample " +
                                std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
      }
    }
  }
  return Status();
}

// A loss on float labels takes C of them per sample, C the model's outputs; class indices feed
// one output as numbers (binary labels 0/1, integer targets).
Status Session::Impl::check_float_labels(const data::Dataset& data) const {
  const int64_t outputs = engine->executable().num_classes();
  if (data.float_labels.empty()) {
    if (outputs == 1) return Status();
    return invalid_argument(data.source +
                            ": has class indices; the executable's loss takes float labels of " +
                            std::to_string(outputs) +
                            " values per sample (one-hot rows for "
                            "categorical_crossentropy)");
  }
  if (static_cast<int64_t>(data.label_size()) != outputs) {
    return invalid_argument(data.source + ": labels have shape " + shape_text(data.label_shape) +
                            " per sample, the executable's loss takes " + std::to_string(outputs) +
                            " per sample (the model's output [batch, " + std::to_string(outputs) + "])");
  }
  return Status();
}

Status Session::Impl::check_one_instance(std::string_view what) const {
  if (!collectives || collectives->size() == 1) return Status();
  return unsupported(std::string(what) + " runs as one instance; run it without mpirun or --instances");
}

Status Session::Impl::check_evaluable(const data::Dataset& data) const {
  IPU_RETURN_IF_ERROR(program(format::kEvaluateProgram).status());
  IPU_RETURN_IF_ERROR(check_data(data, /*need_labels=*/true));
  if (data.num_samples == 0) return invalid_argument(data.source + ": has no samples");
  if (engine->executable().loss_counts_padding() &&
      data.num_samples % static_cast<size_t>(global_batch) != 0) {
    return invalid_argument(
        data.source + ": " + std::to_string(data.num_samples) + " samples do not fill whole batches of " +
        std::to_string(global_batch) +
        " (batch size x replicas): the executable's loss, which its model's graph computes, "
        "counts every row of a batch, padding too; evaluate a multiple of " +
        std::to_string(global_batch) + " samples");
  }
  return Status();
}

} // namespace ipu::session
