#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/data/npy.h"

#include "tests/unit/test_temp_dir.h"

namespace {

using ipu::StatusCode;
using ipu::data::load_npy_dataset;
using ipu::data::make_npy_f16;
using ipu::data::make_npy_f32;
using ipu::data::make_npy_from_float_bytes;
using ipu::data::NpyArray;
using ipu::data::parse_npy;
using ipu::data::read_npy;
using ipu::data::write_npy;

using ipu::testing::TempDir;
using ipu::testing::write_plain;

std::string read_plain(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An npy file with the given version and header text, padded like numpy does.
std::string npy_file(int major, const std::string& dict, const std::string& data) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  const size_t unpadded = preamble + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T> std::string raw(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

} // namespace

TEST_CASE("npy: float32 round trip writes numpy's exact header") {
  TempDir dir;
  const std::vector<float> values = {0.0f, -1.5f, 3.25f, 1e-30f, 7.0f, 8.5f};
  const NpyArray a = make_npy_f32({2, 3}, values.data());
  CHECK(a.element_count() == 6);
  REQUIRE(write_npy(dir.file("a.npy"), a).ok());

  // Byte-for-byte what np.save writes for np.float32 of shape (2, 3) (numpy 1.24).
  const std::string bytes = read_plain(dir.file("a.npy"));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(bytes == npy_file(1, dict, raw(values)));
  CHECK(bytes.size() == 128 + 24);
  CHECK(bytes[127] == '\n');

  auto back = read_npy(dir.file("a.npy"));
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(back->dtype == "f4");
  CHECK(back->shape == std::vector<int64_t>{2, 3});
  CHECK(back->data == raw(values));
}

TEST_CASE("npy: float16 arrays write numpy's <f2 header and read back bit for bit") {
  TempDir dir;
  // Binary16 values (a subnormal, the largest, an infinity, -0) convert exactly; others round to
  // nearest, ties to even.
  const std::vector<float> values = {0.0f, -0.0f, 0x1p-24f, 65504.0f, -INFINITY, 1.5f};
  const NpyArray a = make_npy_f16({2, 3}, values.data());
  CHECK(a.dtype == "f2");
  const std::vector<uint16_t> bits = {0x0000, 0x8000, 0x0001, 0x7bff, 0xfc00, 0x3e00};
  CHECK(a.data == raw(bits));
  REQUIRE(write_npy(dir.file("h.npy"), a).ok());
  // Byte-for-byte what np.save writes for np.float16 of shape (2, 3).
  const std::string dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(read_plain(dir.file("h.npy")) == npy_file(1, dict, raw(bits)));
  auto back = read_npy(dir.file("h.npy"));
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(back->dtype == "f2");
  CHECK(back->data == raw(bits));
  // As floats: exact, and a non-finite value is refused by to_floats but kept by floats_as_is.
  const std::vector<float> as_is = ipu::data::floats_as_is(*back);
  CHECK(std::memcmp(as_is.data(), values.data(), values.size() * sizeof(float)) == 0);
  auto finite = ipu::data::to_floats(*back, "h");
  REQUIRE_FALSE(finite.ok());
  CHECK(finite.status().message() == "h: element 4 is not finite");

  const std::vector<float> between = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.0f, 0x1p-26f};
  const NpyArray rounded = make_npy_f16({4}, between.data());
  CHECK(rounded.data == raw(std::vector<uint16_t>{0x3c00, 0x3c02, 0x7c00, 0x0000}));
}

TEST_CASE("npy: float32 bytes are adopted as they are, other dtypes converted from them") {
  const std::vector<float> values = {1.0f, -2.0f, 3.0f, 0.5f, 1.0f + 0x1p-11f, 0.0f};
  std::string bytes = raw(values);
  const char* storage = bytes.data();
  const NpyArray f32 = make_npy_from_float_bytes("f4", {2, 3}, std::move(bytes));
  CHECK(f32.dtype == "f4");
  CHECK(f32.shape == std::vector<int64_t>{2, 3});
  CHECK(f32.data == raw(values));
  CHECK(f32.data.data() == storage); // adopted: a run's outputs are not copied once more

  // An f8 output's host array is float32, as make_npy_from_floats makes it.
  CHECK(make_npy_from_float_bytes("f8", {6}, raw(values)).dtype == "f4");
  const NpyArray half = make_npy_from_float_bytes("f2", {6}, raw(values));
  CHECK(half.dtype == "f2");
  CHECK(half.data == raw(std::vector<uint16_t>{0x3c00, 0xc000, 0x4200, 0x3800, 0x3c00, 0x0000}));
  const NpyArray ints = make_npy_from_float_bytes("i8", {6}, raw(values));
  CHECK(ints.data == raw(std::vector<int64_t>{1, -2, 3, 1, 1, 0}));
  const NpyArray flags = make_npy_from_float_bytes("b1", {6}, raw(values));
  CHECK(flags.data == std::string("\x01\x01\x01\x01\x01\x00", 6));
}

TEST_CASE("npy: round trip of other dtypes, 1-d, 0-d and empty shapes") {
  TempDir dir;
  for (const char* dtype : {"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f8"}) {
    NpyArray a;
    a.dtype = dtype;
    a.shape = {5};
    a.data = std::string(5 * ipu::data::npy_itemsize(dtype), '\x01');
    const std::string path = dir.file(std::string(dtype) + ".npy");
    REQUIRE(write_npy(path, a).ok());
    auto back = read_npy(path);
    REQUIRE_MESSAGE(back.ok(), back.status().to_string());
    CHECK(back->dtype == dtype);
    CHECK(back->shape == std::vector<int64_t>{5});
    CHECK(back->data == a.data);
  }
  // Shape strings: "(5,)" for 1-d, "()" for 0-d.
  CHECK(read_plain(dir.file("u1.npy")).find("'descr': '|u1', 'fortran_order': False, 'shape': (5,), }") !=
        std::string::npos);
  const float one = 1.0f;
  REQUIRE(write_npy(dir.file("scalar.npy"), make_npy_f32({}, &one)).ok());
  CHECK(read_plain(dir.file("scalar.npy")).find("'shape': (), }") != std::string::npos);
  auto scalar = read_npy(dir.file("scalar.npy"));
  REQUIRE(scalar.ok());
  CHECK(scalar->shape.empty());
  CHECK(scalar->element_count() == 1);
  REQUIRE(write_npy(dir.file("empty.npy"), make_npy_f32({0, 3}, nullptr)).ok());
  auto empty = read_npy(dir.file("empty.npy"));
  REQUIRE(empty.ok());
  CHECK(empty->shape == std::vector<int64_t>{0, 3});
  CHECK(empty->data.empty());
}

TEST_CASE("npy: headers in v1, v2 and v3 formats with varied spelling") {
  const std::vector<int32_t> values = {1, -2, 3, -4, 5};
  // Key order, double quotes, no trailing comma, Python 2 long suffix: all seen in the wild.
  auto v1 = parse_npy("v1.npy",
                      npy_file(1, "{\"shape\": (5L,), 'fortran_order': False, 'descr': '<i4'}", raw(values)));
  REQUIRE_MESSAGE(v1.ok(), v1.status().to_string());
  CHECK(v1->dtype == "i4");
  CHECK(v1->shape == std::vector<int64_t>{5});
  CHECK(v1->data == raw(values));

  auto v2 = parse_npy("v2.npy",
                      npy_file(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (5, ), }", raw(values)));
  REQUIRE_MESSAGE(v2.ok(), v2.status().to_string());
  CHECK(v2->shape == std::vector<int64_t>{5});
  CHECK(v2->data == raw(values));

  auto v3 = parse_npy(
      "v3.npy", npy_file(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 5), }", raw(values)));
  REQUIRE_MESSAGE(v3.ok(), v3.status().to_string());
  CHECK(v3->shape == std::vector<int64_t>{1, 5});

  // Single-byte types may carry any byte order mark.
  auto big_u1 =
      parse_npy("b.npy", npy_file(1, "{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }", "ab"));
  REQUIRE(big_u1.ok());
  CHECK(big_u1->dtype == "u1");
}

TEST_CASE("npy: a header longer than 64 KiB is written as version 2.0") {
  TempDir dir;
  NpyArray a;
  a.dtype = "f4";
  a.shape.assign(30000, 0); // "0, " per dimension: about 90 KB of header, no data
  REQUIRE(write_npy(dir.file("wide.npy"), a).ok());
  const std::string bytes = read_plain(dir.file("wide.npy"));
  CHECK(bytes[6] == 2);
  CHECK(bytes[7] == 0);
  auto back = read_npy(dir.file("wide.npy"));
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(back->shape.size() == 30000);
}

TEST_CASE("npy: invalid files are rejected with the file name") {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = raw(std::vector<float>{1.0f, 2.0f});

  auto code_of = [](const std::string& content) { return parse_npy("t.npy", content).status().code(); };

  CHECK(code_of(npy_file(1, f4, data)) == StatusCode::kOk);
  CHECK(code_of("PK\x03\x04 not npy") == StatusCode::kInvalidArgument);
  CHECK(code_of(npy_file(1, f4, data).substr(0, 8)) == StatusCode::kDataLoss);
  CHECK(code_of(npy_file(1, f4, data).substr(0, 40)) == StatusCode::kDataLoss);
  CHECK(code_of(npy_file(4, f4, data)) == StatusCode::kUnsupported);
  CHECK(code_of(npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data)) ==
        StatusCode::kUnsupported);
  CHECK(code_of(npy_file(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data)) ==
        StatusCode::kUnsupported);
  CHECK(code_of(npy_file(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data)) ==
        StatusCode::kUnsupported);
  CHECK(code_of(npy_file(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data)) ==
        StatusCode::kUnsupported);
  CHECK(code_of(npy_file(1, "{'descr': '<f4', 'shape': (2,), }", data)) == StatusCode::kInvalidArgument);
  CHECK(code_of(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data)) ==
        StatusCode::kInvalidArgument);
  CHECK(code_of(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data)) ==
        StatusCode::kInvalidArgument);
  CHECK(code_of(npy_file(1, "{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", data)) ==
        StatusCode::kInvalidArgument);
  CHECK(code_of(npy_file(1, f4, data + "x")) == StatusCode::kDataLoss);
  // A shape whose byte count overflows size_t must not wrap around.
  CHECK(code_of(npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                         "")) == StatusCode::kDataLoss);

  auto truncated = parse_npy("data/x.npy", npy_file(1, f4, data.substr(0, 7)));
  CHECK(truncated.status().code() == StatusCode::kDataLoss);
  CHECK(truncated.status().message() ==
        "data/x.npy: truncated data: shape (2,) of float32 ('<f4') needs 8 bytes, file has 7");

  auto fortran =
      parse_npy("data/x.npy", npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data));
  CHECK(fortran.status().message().rfind("data/x.npy: fortran_order", 0) == 0);

  CHECK(read_npy("/nonexistent/dir/x.npy").status().code() == StatusCode::kNotFound);

  NpyArray bad;
  bad.dtype = "f4";
  bad.shape = {3};
  bad.data = "12345678";
  const ipu::Status status = write_npy("/tmp/never_written.npy", bad);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK(status.message().rfind("/tmp/never_written.npy: shape (3,)", 0) == 0);
  CHECK(!std::filesystem::exists("/tmp/never_written.npy"));
}

TEST_CASE("npy: load_npy_dataset converts features and labels") {
  TempDir dir;
  const auto save = [&](const std::string& name, const std::string& descr, const std::string& shape,
                        const std::string& data) {
    write_plain(
        dir.file(name),
        npy_file(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }", data));
    return dir.file(name);
  };

  SUBCASE("float64 features become float32, int64 labels become int32") {
    const std::string x =
        save("x.npy", "<f8", "(3, 2)", raw(std::vector<double>{0.1, 0.2, -3.0, 4.5, 1e10, 0.0}));
    const std::string y = save("y.npy", "<i8", "(3,)", raw(std::vector<int64_t>{2, 0, 4}));
    auto ds = load_npy_dataset(x, y);
    REQUIRE_MESSAGE(ds.ok(), ds.status().to_string());
    CHECK(ds->source == "npy:" + x + "," + y);
    CHECK(ds->num_samples == 3);
    CHECK(ds->sample_shape == std::vector<int64_t>{2});
    CHECK(ds->features == std::vector<float>{0.1f, 0.2f, -3.0f, 4.5f, 1e10f, 0.0f});
    CHECK(ds->labels == std::vector<int32_t>{2, 0, 4});
    CHECK(ds->num_classes == 5);
  }
  SUBCASE("uint8 features are kept as is, with a note; uint8 labels of shape (N, 1)") {
    const std::string x =
        save("x.npy", "|u1", "(2, 2, 2, 1)", std::string("\x00\x01\x7f\xff\x02\x03\x04\x05", 8));
    const std::string y = save("y.npy", "|u1", "(2, 1)", std::string("\x01\x00", 2));
    auto ds = load_npy_dataset(x, y);
    REQUIRE_MESSAGE(ds.ok(), ds.status().to_string());
    CHECK(ds->sample_shape == std::vector<int64_t>{2, 2, 1});
    CHECK(ds->features == std::vector<float>{0, 1, 127, 255, 2, 3, 4, 5});
    CHECK(ds->labels == std::vector<int32_t>{1, 0});
    CHECK(ds->num_classes == 2);
    // Pixels, most likely: the note says they are not scaled as the mnist: loader's are.
    CHECK(ds->note ==
          x + ": uint8 features are used as they are, 0 to 255, as Keras's fit uses them; the "
              "mnist: loader divides pixels by 255, so a model trained on it expects values in [0, 1]");
    // Zeros and ones (a mask) need no note.
    const std::string mask = save("mask.npy", "|u1", "(2, 1)", std::string("\x00\x01", 2));
    auto masked = load_npy_dataset(mask, "");
    REQUIRE_MESSAGE(masked.ok(), masked.status().to_string());
    CHECK(masked->note.empty());
  }
  SUBCASE("int32 features, float16 features, 1-d features, no labels") {
    const std::string xi = save("xi.npy", "<i4", "(2, 1)", raw(std::vector<int32_t>{-7, 1 << 20}));
    auto di = load_npy_dataset(xi, "");
    REQUIRE_MESSAGE(di.ok(), di.status().to_string());
    CHECK(di->features == std::vector<float>{-7.0f, 1048576.0f});
    CHECK(di->labels.empty());
    CHECK(di->num_classes == 0);
    CHECK(di->source == "npy:" + xi);

    // 1.0, -2.0, 0.5, 65504 (max half), smallest subnormal 2^-24.
    const std::string xh =
        save("xh.npy", "<f2", "(5,)", raw(std::vector<uint16_t>{0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001}));
    auto dh = load_npy_dataset(xh, "");
    REQUIRE_MESSAGE(dh.ok(), dh.status().to_string());
    CHECK(dh->sample_shape == std::vector<int64_t>{1});
    CHECK(dh->features == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f});
  }
  SUBCASE("float labels load as float labels of their per-sample shape") {
    const std::string x = save("x.npy", "<f4", "(2, 2)", raw(std::vector<float>{1, 2, 3, 4}));
    const std::string onehot =
        save("onehot.npy", "<f8", "(2, 3)", raw(std::vector<double>{0, 1, 0, 0.25, 0, 0.75}));
    auto r = load_npy_dataset(x, onehot);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(r->labels.empty());
    CHECK(r->has_labels());
    CHECK(r->label_shape == std::vector<int64_t>{3});
    CHECK(r->label_size() == 3);
    CHECK(r->float_labels == std::vector<float>{0, 1, 0, 0.25f, 0, 0.75f});
    const std::string flat = save("flat.npy", "<f4", "(2,)", raw(std::vector<float>{1, 0}));
    r = load_npy_dataset(x, flat);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(r->label_shape == std::vector<int64_t>{1});
    CHECK(r->float_labels == std::vector<float>{1, 0});
  }
  SUBCASE("bad labels and features are rejected") {
    const std::string x = save("x.npy", "<f4", "(2, 2)", raw(std::vector<float>{1, 2, 3, 4}));
    const std::string neg = save("neg.npy", "<i4", "(2,)", raw(std::vector<int32_t>{1, -1}));
    const std::string flt = save("flt.npy", "<f4", "(2,)", raw(std::vector<float>{1, 0}));
    const std::string three = save("three.npy", "<i8", "(3,)", raw(std::vector<int64_t>{1, 0, 1}));
    const std::string mat = save("mat.npy", "<i8", "(1, 2)", raw(std::vector<int64_t>{1, 0}));
    const std::string nan = save("nan.npy", "<f4", "(2,)", raw(std::vector<float>{1, NAN}));
    const std::string huge = save("huge.npy", "<f8", "(1,)", raw(std::vector<double>{1e300}));
    const std::string scalar = save("scalar.npy", "<f4", "()", raw(std::vector<float>{1}));
    const std::string none = save("none.npy", "<f4", "(0, 2)", "");

    auto r = load_npy_dataset(x, neg);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().rfind(neg + ": label -1 at index 1", 0) == 0);
    const std::string flags = save("flags.npy", "|b1", "(2,)", std::string("\x01\x00", 2));
    r = load_npy_dataset(x, flags);
    CHECK(r.status().message() ==
          flags + ": labels must be integers (class indices) or floats, got bool ('|b1')");
    const std::string nan_labels = save("nanl.npy", "<f4", "(2,)", raw(std::vector<float>{1, NAN}));
    CHECK(load_npy_dataset(x, nan_labels).status().code() == StatusCode::kInvalidArgument);
    const std::string short_float = save("short.npy", "<f4", "(1, 2)", raw(std::vector<float>{1, 0}));
    r = load_npy_dataset(x, short_float);
    CHECK(r.status().message() == short_float + ": has 1 labels but " + x + " has 2 samples");
    r = load_npy_dataset(x, three);
    CHECK(r.status().message() == three + ": has 3 labels but " + x + " has 2 samples");
    CHECK(load_npy_dataset(x, mat).status().code() == StatusCode::kInvalidArgument);
    CHECK(load_npy_dataset(nan, "").status().code() == StatusCode::kInvalidArgument);
    CHECK(load_npy_dataset(huge, "").status().code() == StatusCode::kInvalidArgument);
    CHECK(load_npy_dataset(scalar, "").status().code() == StatusCode::kInvalidArgument);
    CHECK(load_npy_dataset(none, "").status().code() == StatusCode::kInvalidArgument);
    CHECK(load_npy_dataset(x, dir.file("missing.npy")).status().code() == StatusCode::kNotFound);
  }
}
