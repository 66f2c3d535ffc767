// ONNX TensorProto decoding (runtime/data/tensor_proto.cpp): raw and typed storage of every
// decodable element type, sizes checked against the dims, unsupported storage named.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <cstring>

#include "runtime/data/tensor_proto.h"

namespace {

using ipu::StatusCode;
using ipu::data::decode_tensor_proto;
using ipu::data::parse_tensor_proto;
using ipu::data::view_tensor_proto_data;
using onnx::TensorProto;

template <typename T> std::vector<T> values_of(const ipu::data::NpyArray& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

TEST_CASE("float tensors decode from float_data and from raw_data alike") {
  TensorProto typed;
  typed.set_data_type(TensorProto::FLOAT);
  typed.add_dims(2);
  typed.add_dims(2);
  for (float v : {1.5f, -2.0f, 0.25f, 8.0f})
    typed.add_float_data(v);
  auto a = decode_tensor_proto(typed, "t");
  REQUIRE(a.ok());
  CHECK(a->dtype == "f4");
  CHECK(a->shape == std::vector<int64_t>{2, 2});
  CHECK(values_of<float>(*a) == std::vector<float>{1.5f, -2.0f, 0.25f, 8.0f});

  TensorProto raw;
  raw.set_data_type(TensorProto::FLOAT);
  raw.add_dims(4);
  raw.set_raw_data(a->data);
  auto b = decode_tensor_proto(raw, "t");
  REQUIRE(b.ok());
  CHECK(b->data == a->data);
}

TEST_CASE("integer and bool tensors use their ONNX typed fields") {
  TensorProto i64;
  i64.set_data_type(TensorProto::INT64);
  i64.add_dims(3);
  for (int64_t v : {int64_t{-1}, int64_t{0}, int64_t{1} << 40})
    i64.add_int64_data(v);
  auto a = decode_tensor_proto(i64, "t");
  REQUIRE(a.ok());
  CHECK(values_of<int64_t>(*a) == std::vector<int64_t>{-1, 0, int64_t{1} << 40});

  TensorProto flags;
  flags.set_data_type(TensorProto::BOOL);
  flags.add_dims(3);
  for (int v : {0, 1, 5})
    flags.add_int32_data(v);
  auto b = decode_tensor_proto(flags, "t");
  REQUIRE(b.ok());
  CHECK(b->dtype == "b1");
  CHECK(b->data == std::string("\0\1\1", 3));

  TensorProto scalar; // no dims: one element
  scalar.set_data_type(TensorProto::INT32);
  scalar.add_int32_data(7);
  auto c = decode_tensor_proto(scalar, "t");
  REQUIRE(c.ok());
  CHECK(c->shape.empty());
  CHECK(values_of<int32_t>(*c) == std::vector<int32_t>{7});
}

TEST_CASE("bad tensors are errors naming the tensor") {
  TensorProto short_data;
  short_data.set_data_type(TensorProto::FLOAT);
  short_data.add_dims(3);
  short_data.add_float_data(1.0f);
  auto a = decode_tensor_proto(short_data, "model.onnx: initializer 'w'");
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == StatusCode::kDataLoss);
  CHECK(a.status().message() == "model.onnx: initializer 'w': holds 1 values, its dims need 3");

  TensorProto text;
  text.set_data_type(TensorProto::STRING);
  CHECK(decode_tensor_proto(text, "t").status().code() == StatusCode::kUnsupported);

  TensorProto external;
  external.set_data_type(TensorProto::FLOAT);
  external.set_data_location(TensorProto::EXTERNAL);
  CHECK(decode_tensor_proto(external, "t").status().code() == StatusCode::kUnsupported);

  TensorProto huge;
  huge.set_data_type(TensorProto::FLOAT);
  huge.add_dims(int64_t{1} << 40);
  huge.add_dims(int64_t{1} << 40);
  CHECK(decode_tensor_proto(huge, "t").status().code() == StatusCode::kInvalidArgument);

  CHECK(parse_tensor_proto("\xff\xff\xff", "x.pb").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("view_tensor_proto_data views raw_data in place and decodes typed fields into scratch") {
  TensorProto raw;
  raw.set_data_type(TensorProto::FLOAT);
  raw.add_dims(2);
  raw.set_raw_data(std::string("\0\0\xc0\x3f\0\0\0\xc0", 8));
  std::string scratch = "left over";
  auto in_place = view_tensor_proto_data(raw, "t", scratch);
  REQUIRE(in_place.ok());
  CHECK(in_place->data() == raw.raw_data().data());
  CHECK(*in_place == decode_tensor_proto(raw, "t")->data);

  TensorProto typed;
  typed.set_data_type(TensorProto::FLOAT);
  typed.add_dims(2);
  typed.add_float_data(1.5f);
  typed.add_float_data(-2.0f);
  auto decoded = view_tensor_proto_data(typed, "t", scratch);
  REQUIRE(decoded.ok());
  CHECK(decoded->data() == scratch.data());
  CHECK(*decoded == in_place.value());

  typed.add_dims(3);
  auto short_data = view_tensor_proto_data(typed, "model.onnx: initializer 'w'", scratch);
  REQUIRE_FALSE(short_data.ok());
  CHECK(short_data.status().message() == "model.onnx: initializer 'w': holds 2 values, its dims need 6");
}

TEST_CASE("serialize_tensor_proto round-trips through parse_tensor_proto") {
  ipu::data::NpyArray array;
  array.dtype = "f4";
  array.shape = {1, 2};
  const float values[] = {3.0f, -4.5f};
  array.data.assign(reinterpret_cast<const char*>(values), sizeof values);
  auto bytes = ipu::data::serialize_tensor_proto(array, "logits");
  REQUIRE(bytes.ok());
  auto back = parse_tensor_proto(*bytes, "logits.pb");
  REQUIRE(back.ok());
  CHECK(back->shape == array.shape);
  CHECK(back->data == array.data);
  array.dtype = "u2";
  CHECK(ipu::data::serialize_tensor_proto(array, "x").status().code() == StatusCode::kUnsupported);
}

} // namespace
