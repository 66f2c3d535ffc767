#include "cli/onnx_export.h"

#include <onnx/onnx_pb.h>

#include "runtime/base/output_file.h"
#include "runtime/data/npy.h"

namespace ipu::cli {

Status check_exportable(const format::Executable& exe) {
  if (exe.source_onnx().empty()) {
    return failed_precondition(
        "--export-onnx: the executable was not compiled from an ONNX model (a JSON spec has no ONNX form)");
  }
  return Status();
}

Status export_onnx(const format::Executable& exe, const std::map<std::string, session::NamedTensor>& weights,
                   const std::string& path) {
  IPU_RETURN_IF_ERROR(check_exportable(exe));
  onnx::ModelProto model;
  if (!model.ParseFromString(exe.source_onnx()))
    return data_loss("the executable's stored ONNX model does not parse");
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.has_raw_data() || init.float_data_size() > 0 || init.int64_data_size() > 0 ||
        init.int32_data_size() > 0) {
      continue; // a constant the executable did not train
    }
    auto found = weights.find(init.name());
    if (found == weights.end())
      return data_loss("the executable has no weight for initializer '" + init.name() + "'");
    const std::vector<float>& values = found->second.values;
    int64_t elements = 1;
    for (int64_t d : init.dims())
      elements *= d;
    const bool half = init.data_type() == onnx::TensorProto::FLOAT16;
    if ((init.data_type() != onnx::TensorProto::FLOAT && !half) ||
        static_cast<size_t>(elements) != values.size()) {
      return data_loss("initializer '" + init.name() + "' does not match the executable's weight of " +
                       std::to_string(values.size()) + " values");
    }
    if (half) {
      init.set_raw_data(data::make_npy_f16({elements}, values.data()).data);
    } else {
      init.set_raw_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    }
  }
  return write_output_file(path, model.SerializeAsString());
}

} // namespace ipu::cli
