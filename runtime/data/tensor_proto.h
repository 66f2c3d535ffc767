// ONNX TensorProto, the tensor encoding of ONNX initializers and of the `.pb` input and output
// files of ONNX's test data, decoded into the host array type the rest of the runtime uses.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "runtime/data/npy.h"

namespace onnx {
class TensorProto;
}

namespace ipu::data {

// Largest tensor decoded: 1 GiB of data, like the executable payload bound.
inline constexpr uint64_t kMaxTensorProtoBytes = uint64_t{1} << 30;

// Decodes float32/64/16, int8/16/32/64, uint8/16/32/64 and bool tensors stored as raw_data or in
// the typed fields. `where` names the tensor in messages ("model.onnx: initializer 'fc1.weight'").
// Errors: Unsupported (strings, complex, bfloat16, external data), DataLoss (a data size that
// does not match the dims), InvalidArgument (negative or too large dims).
StatusOr<NpyArray> decode_tensor_proto(const onnx::TensorProto& tensor, const std::string& where);

// decode_tensor_proto's value without its copy: a view of the tensor's raw_data (valid while the
// tensor is), or of `scratch`, which then holds the typed field's values. The same errors.
StatusOr<std::string_view> view_tensor_proto_data(const onnx::TensorProto& tensor, const std::string& where,
                                                  std::string& scratch);

// Parses and decodes a serialized TensorProto (a `.pb` file).
StatusOr<NpyArray> parse_tensor_proto(std::string_view bytes, const std::string& where);
StatusOr<NpyArray> read_tensor_proto_file(const std::string& path);

// Encodes a float32 / float16 / int64 / int32 / bool array as a TensorProto with raw_data.
StatusOr<std::string> serialize_tensor_proto(const NpyArray& array, const std::string& name);

} // namespace ipu::data
