#include "runtime/data/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>

#include "runtime/base/file_io.h"

namespace ipu::data {
namespace {

using onnx::TensorProto;

// The npy dtype code of an ONNX element type, "" if not decodable.
std::string dtype_of(int elem_type) {
  switch (elem_type) {
  case TensorProto::FLOAT:
    return "f4";
  case TensorProto::DOUBLE:
    return "f8";
  case TensorProto::FLOAT16:
    return "f2";
  case TensorProto::INT8:
    return "i1";
  case TensorProto::INT16:
    return "i2";
  case TensorProto::INT32:
    return "i4";
  case TensorProto::INT64:
    return "i8";
  case TensorProto::UINT8:
    return "u1";
  case TensorProto::UINT16:
    return "u2";
  case TensorProto::UINT32:
    return "u4";
  case TensorProto::UINT64:
    return "u8";
  case TensorProto::BOOL:
    return "b1";
  default:
    return "";
  }
}

int elem_type_of(const std::string& dtype) {
  if (dtype == "f4") return TensorProto::FLOAT;
  if (dtype == "f2") return TensorProto::FLOAT16;
  if (dtype == "i8") return TensorProto::INT64;
  if (dtype == "i4") return TensorProto::INT32;
  if (dtype == "b1") return TensorProto::BOOL;
  return TensorProto::UNDEFINED;
}

// Copies typed-field values into `out` as `T`, the element type of the array.
template <typename T, typename Field> void copy_field(const Field& field, std::string& out) {
  out.resize(static_cast<size_t>(field.size()) * sizeof(T));
  for (int i = 0; i < field.size(); ++i) {
    const T value = static_cast<T>(field.Get(i));
    std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(T), &value, sizeof(T));
  }
}

// The typed field ONNX stores `dtype` in when raw_data is absent, copied into `out`. Types narrower
// than 32 bits live in int32_data; float16 as its bit pattern there.
void copy_typed_data(const TensorProto& t, const std::string& dtype, std::string& out) {
  if (dtype == "f4") return copy_field<float>(t.float_data(), out);
  if (dtype == "f8") return copy_field<double>(t.double_data(), out);
  if (dtype == "i8") return copy_field<int64_t>(t.int64_data(), out);
  if (dtype == "u4") return copy_field<uint32_t>(t.uint64_data(), out);
  if (dtype == "u8") return copy_field<uint64_t>(t.uint64_data(), out);
  if (dtype == "i4") return copy_field<int32_t>(t.int32_data(), out);
  if (dtype == "i2") return copy_field<int16_t>(t.int32_data(), out);
  if (dtype == "i1") return copy_field<int8_t>(t.int32_data(), out);
  if (dtype == "u2" || dtype == "f2") return copy_field<uint16_t>(t.int32_data(), out);
  if (dtype == "u1") return copy_field<uint8_t>(t.int32_data(), out);
  if (dtype == "b1") {
    copy_field<uint8_t>(t.int32_data(), out);
    for (char& c : out)
      c = c != 0 ? 1 : 0; // bool values must be 0 or 1
  }
}

// The dtype and shape of `t`, and its element count, if its values can be decoded.
StatusOr<uint64_t> decode_header(const TensorProto& t, const std::string& where, NpyArray& array) {
  if (t.data_location() == TensorProto::EXTERNAL) {
    return unsupported(where + ": tensors with external data are not supported");
  }
  array.dtype = dtype_of(t.data_type());
  if (array.dtype.empty()) {
    return unsupported(where + ": element type " + TensorProto::DataType_Name(t.data_type()) + " (" +
                       std::to_string(t.data_type()) + ") is not supported");
  }
  const uint64_t itemsize = npy_itemsize(array.dtype);
  uint64_t elements = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return invalid_argument(where + ": negative dimension " + std::to_string(d));
    if (d > 0 && elements > kMaxTensorProtoBytes / itemsize / static_cast<uint64_t>(d)) {
      return invalid_argument(where + ": larger than the supported " + std::to_string(kMaxTensorProtoBytes) +
                              " bytes");
    }
    elements *= static_cast<uint64_t>(d);
    array.shape.push_back(d);
  }
  if (t.dims().empty()) elements = 1; // a scalar
  return elements;
}

// The values of `t` (described by `array`'s dtype), in `scratch` unless they are its raw_data.
StatusOr<std::string_view> decode_data(const TensorProto& t, const std::string& where, const NpyArray& array,
                                       uint64_t elements, std::string& scratch) {
  std::string_view data = t.raw_data();
  if (!t.has_raw_data()) {
    copy_typed_data(t, array.dtype, scratch);
    data = scratch;
  }
  const uint64_t itemsize = npy_itemsize(array.dtype);
  if (data.size() != elements * itemsize) {
    return data_loss(where + ": holds " + std::to_string(data.size() / itemsize) + " values, its dims need " +
                     std::to_string(elements));
  }
  return data;
}

} // namespace

StatusOr<NpyArray> decode_tensor_proto(const TensorProto& t, const std::string& where) {
  NpyArray array;
  IPU_ASSIGN_OR_RETURN(const uint64_t elements, decode_header(t, where, array));
  std::string typed;
  IPU_ASSIGN_OR_RETURN(const std::string_view data, decode_data(t, where, array, elements, typed));
  array.data = t.has_raw_data() ? std::string(data) : std::move(typed);
  return array;
}

StatusOr<std::string_view> view_tensor_proto_data(const TensorProto& t, const std::string& where,
                                                  std::string& scratch) {
  NpyArray header;
  IPU_ASSIGN_OR_RETURN(const uint64_t elements, decode_header(t, where, header));
  scratch.clear();
  return decode_data(t, where, header, elements, scratch);
}

StatusOr<NpyArray> parse_tensor_proto(std::string_view bytes, const std::string& where) {
  if (bytes.size() > std::numeric_limits<int>::max()) return invalid_argument(where + ": larger than 2 GiB");
  TensorProto tensor;
  if (!tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return invalid_argument(where + ": not a serialized ONNX TensorProto");
  }
  return decode_tensor_proto(tensor, where);
}

StatusOr<NpyArray> read_tensor_proto_file(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_tensor_proto(bytes, path);
}

StatusOr<std::string> serialize_tensor_proto(const NpyArray& array, const std::string& name) {
  const int elem_type = elem_type_of(array.dtype);
  if (elem_type == TensorProto::UNDEFINED) {
    return unsupported(name + ": cannot write dtype '" + array.dtype + "' as a TensorProto");
  }
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(elem_type);
  for (int64_t d : array.shape)
    tensor.add_dims(d);
  tensor.set_raw_data(array.data);
  return tensor.SerializeAsString();
}

} // namespace ipu::data
