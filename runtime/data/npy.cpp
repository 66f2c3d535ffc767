#include "runtime/data/npy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "runtime/base/file_io.h"
#include "runtime/base/half.h"
#include "runtime/base/huge_pages.h"

namespace ipu::data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy data is kept as raw little-endian bytes and reinterpreted in place");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreambleV1 = 10; // magic, 2 version bytes, uint16 header length
constexpr size_t kPreambleV2 = 12; // magic, 2 version bytes, uint32 header length
constexpr size_t kHeaderAlign = 64;

// Byte-order character numpy writes for a canonical dtype.
char byte_order_char(const std::string& dtype) {
  return npy_itemsize(dtype) == 1 ? '|' : '<';
}

std::string descr_of(const std::string& dtype) {
  return byte_order_char(dtype) + dtype;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ","; // a Python 1-tuple
  out += ")";
  return out;
}

std::string describe_dtype(const std::string& dtype) {
  static const struct {
    const char* code;
    const char* name;
  } kNames[] = {
      {"b1", "bool"},   {"i1", "int8"},    {"i2", "int16"},   {"i4", "int32"},
      {"i8", "int64"},  {"u1", "uint8"},   {"u2", "uint16"},  {"u4", "uint32"},
      {"u8", "uint64"}, {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"},
  };
  for (const auto& entry : kNames) {
    if (dtype == entry.code) return std::string(entry.name) + " ('" + descr_of(dtype) + "')";
  }
  return "'" + dtype + "'";
}

// Parser for the Python dict literal in an npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Only what numpy's writers produce is accepted: string keys, string / bool / int-tuple values.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string& name) : m_text(text), m_name(name) {}

  Status parse(std::string& descr, bool& fortran_order, std::vector<int64_t>& shape) {
    bool have_descr = false;
    bool have_fortran = false;
    bool have_shape = false;
    skip_space();
    if (!consume('{')) return error("expected '{'");
    while (true) {
      skip_space();
      if (consume('}')) break;
      std::string key;
      IPU_RETURN_IF_ERROR(parse_string(key));
      skip_space();
      if (!consume(':')) return error("expected ':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (peek() == '[') return unsupported(m_name + ": structured dtypes are not supported");
        IPU_RETURN_IF_ERROR(parse_string(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        IPU_RETURN_IF_ERROR(parse_bool(fortran_order));
        have_fortran = true;
      } else if (key == "shape") {
        IPU_RETURN_IF_ERROR(parse_shape(shape));
        have_shape = true;
      } else {
        return error("unexpected key '" + key + "'");
      }
      skip_space();
      if (consume(',')) continue;
      skip_space();
      if (consume('}')) break;
      return error("expected ',' or '}'");
    }
    skip_space();
    if (m_pos != m_text.size()) return error("unexpected text after the header dict");
    if (!have_descr) return error("missing 'descr'");
    if (!have_fortran) return error("missing 'fortran_order'");
    if (!have_shape) return error("missing 'shape'");
    return Status();
  }

private:
  Status error(const std::string& what) const {
    return invalid_argument(m_name + ": malformed npy header: " + what + " at offset " +
                            std::to_string(m_pos));
  }
  char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
  bool consume(char c) {
    if (peek() != c) return false;
    ++m_pos;
    return true;
  }
  void skip_space() {
    while (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\n' || m_text[m_pos] == '\t' ||
                                     m_text[m_pos] == '\r')) {
      ++m_pos;
    }
  }
  Status parse_string(std::string& out) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return error("expected a quoted string");
    ++m_pos;
    const size_t end = m_text.find(quote, m_pos);
    if (end == std::string_view::npos) return error("unterminated string");
    out.assign(m_text.substr(m_pos, end - m_pos));
    m_pos = end + 1;
    return Status();
  }
  Status parse_bool(bool& out) {
    if (m_text.substr(m_pos, 4) == "True") {
      out = true;
      m_pos += 4;
    } else if (m_text.substr(m_pos, 5) == "False") {
      out = false;
      m_pos += 5;
    } else {
      return error("expected True or False");
    }
    return Status();
  }
  Status parse_shape(std::vector<int64_t>& out) {
    out.clear();
    if (!consume('(')) return error("expected '(' for the shape");
    while (true) {
      skip_space();
      if (consume(')')) return Status();
      const size_t start = m_pos;
      int64_t value = 0;
      while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') {
        if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) return error("shape dimension too large");
        value = value * 10 + (m_text[m_pos] - '0');
        ++m_pos;
      }
      if (m_pos == start) return error("expected a non-negative integer in the shape");
      consume('L'); // Python 2 long literals, written by old numpy versions
      out.push_back(value);
      skip_space();
      if (consume(',')) continue;
      skip_space();
      if (consume(')')) return Status();
      return error("expected ',' or ')' in the shape");
    }
  }

  std::string_view m_text;
  const std::string& m_name;
  size_t m_pos = 0;
};

// Maps a numpy descr such as '<f4' or '|u1' to a canonical dtype.
StatusOr<std::string> canonical_dtype(const std::string& name, const std::string& descr) {
  std::string code = descr;
  char order = '=';
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    order = code[0];
    code.erase(0, 1);
  }
  const size_t itemsize = npy_itemsize(code);
  if (itemsize == 0) return unsupported(name + ": dtype '" + descr + "' is not supported");
  // Byte order is meaningless for single bytes, which numpy marks with '|' but may also mark '>'.
  if (order == '>' && itemsize > 1) {
    return unsupported(name + ": big-endian dtype '" + descr +
                       "' is not supported; convert with "
                       "arr.astype(arr.dtype.newbyteorder('<'))");
  }
  return code;
}

uint64_t read_le(const char* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

template <typename T> T load(const std::string& data, size_t i) {
  T value;
  std::memcpy(&value, data.data() + i * sizeof(T), sizeof(T));
  return value;
}

bool is_integer_dtype(const std::string& dtype) {
  return dtype[0] == 'i' || dtype[0] == 'u';
}

// Integer element i as int64, saturating uint64 values above INT64_MAX (they are out of range
// for every use here anyway).
int64_t integer_at(const NpyArray& a, size_t i) {
  const size_t size = npy_itemsize(a.dtype);
  const uint64_t raw = read_le(a.data.data() + i * size, size);
  if (a.dtype[0] == 'u') {
    return raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(raw);
  }
  // Sign-extend from the element width.
  const unsigned shift = static_cast<unsigned>(64 - 8 * size);
  return static_cast<int64_t>(raw << shift) >> shift;
}

} // namespace

size_t NpyArray::element_count() const {
  size_t count = 1;
  for (int64_t d : shape)
    count *= static_cast<size_t>(d);
  return count;
}

size_t npy_itemsize(const std::string& dtype) {
  if (dtype.size() != 2) return 0;
  const char kind = dtype[0];
  const char size = dtype[1];
  switch (kind) {
  case 'b':
    return size == '1' ? 1 : 0;
  case 'i':
  case 'u':
    return size == '1' || size == '2' || size == '4' || size == '8' ? static_cast<size_t>(size - '0') : 0;
  case 'f':
    return size == '2' || size == '4' || size == '8' ? static_cast<size_t>(size - '0') : 0;
  default:
    return 0;
  }
}

StatusOr<NpyArray> parse_npy(const std::string& name, std::string content) {
  if (content.size() < kMagic.size() || std::string_view(content).substr(0, kMagic.size()) != kMagic) {
    return invalid_argument(name + ": not an npy file (bad magic)");
  }
  if (content.size() < kPreambleV1) return data_loss(name + ": truncated npy header");
  const int major = static_cast<unsigned char>(content[6]);
  const int minor = static_cast<unsigned char>(content[7]);
  size_t preamble = 0;
  size_t header_len = 0;
  if (major == 1 && minor == 0) {
    preamble = kPreambleV1;
    header_len = static_cast<size_t>(read_le(content.data() + 8, 2));
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (content.size() < kPreambleV2) return data_loss(name + ": truncated npy header");
    preamble = kPreambleV2;
    header_len = static_cast<size_t>(read_le(content.data() + 8, 4));
  } else {
    return unsupported(name + ": npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (content.size() - preamble < header_len) {
    return data_loss(name + ": truncated npy header (" + std::to_string(header_len) + " bytes announced, " +
                     std::to_string(content.size() - preamble) + " present)");
  }

  std::string descr;
  bool fortran_order = false;
  NpyArray array;
  HeaderParser parser(std::string_view(content).substr(preamble, header_len), name);
  IPU_RETURN_IF_ERROR(parser.parse(descr, fortran_order, array.shape));
  IPU_ASSIGN_OR_RETURN(array.dtype, canonical_dtype(name, descr));
  if (fortran_order) {
    return unsupported(name +
                       ": fortran_order arrays are not supported; save with np.ascontiguousarray(arr)");
  }

  const size_t itemsize = npy_itemsize(array.dtype);
  const size_t data_offset = preamble + header_len;
  const size_t available = content.size() - data_offset;
  // Count elements with an overflow guard: a corrupt shape must not wrap around to a small size.
  size_t needed = itemsize;
  for (int64_t d : array.shape) {
    const auto dim = static_cast<size_t>(d);
    if (dim != 0 && needed > std::numeric_limits<size_t>::max() / dim) {
      return data_loss(name + ": shape " + shape_string(array.shape) + " is larger than the file");
    }
    needed *= dim;
  }
  if (available < needed) {
    return data_loss(name + ": truncated data: shape " + shape_string(array.shape) + " of " +
                     describe_dtype(array.dtype) + " needs " + std::to_string(needed) + " bytes, file has " +
                     std::to_string(available));
  }
  if (available > needed) {
    return data_loss(name + ": " + std::to_string(available - needed) +
                     " unexpected bytes after the array data");
  }
  content.erase(0, data_offset);
  array.data = std::move(content);
  return array;
}

StatusOr<NpyArray> read_npy(const std::string& path) {
  IPU_ASSIGN_OR_RETURN(std::string content, read_file(path));
  return parse_npy(path, std::move(content));
}

StatusOr<std::string> serialize_npy(const NpyArray& array) {
  const size_t itemsize = npy_itemsize(array.dtype);
  if (itemsize == 0) return invalid_argument("npy: unsupported dtype '" + array.dtype + "'");
  for (int64_t d : array.shape) {
    if (d < 0) return invalid_argument("npy: negative dimension in shape " + shape_string(array.shape));
  }
  if (array.data.size() != array.element_count() * itemsize) {
    return invalid_argument("npy: shape " + shape_string(array.shape) + " of " + describe_dtype(array.dtype) +
                            " needs " + std::to_string(array.element_count() * itemsize) +
                            " bytes, data has " + std::to_string(array.data.size()));
  }
  std::string header = "{'descr': '" + descr_of(array.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_string(array.shape) + ", }";
  // numpy pads with spaces and ends with '\n' so the data starts 64-byte aligned.
  size_t preamble = kPreambleV1;
  if (header.size() + 1 + kPreambleV1 + kHeaderAlign > 0xffff) preamble = kPreambleV2;
  const size_t unpadded = preamble + header.size() + 1;
  header.append((kHeaderAlign - unpadded % kHeaderAlign) % kHeaderAlign, ' ');
  header += '\n';

  std::string out(kMagic);
  out += static_cast<char>(preamble == kPreambleV1 ? 1 : 2);
  out += '\0';
  const size_t len_bytes = preamble - out.size();
  for (size_t i = 0; i < len_bytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out += array.data;
  return out;
}

Status write_npy(const std::string& path, const NpyArray& array) {
  StatusOr<std::string> bytes = serialize_npy(array);
  if (!bytes.ok()) {
    // serialize_npy's messages start with "npy:"; name the file instead.
    const Status status = bytes.status();
    return Status(status.code(), path + status.message().substr(3));
  }
  return write_file_atomic(path, *bytes);
}

NpyArray make_npy_f32(std::vector<int64_t> shape, const float* data) {
  NpyArray array;
  array.dtype = "f4";
  array.shape = std::move(shape);
  const size_t bytes = array.element_count() * sizeof(float);
  array.data.reserve(bytes);
  advise_huge_pages(array.data.data(), bytes); // a run's outputs can be large
  array.data.assign(reinterpret_cast<const char*>(data), bytes);
  return array;
}

namespace {

// Whether make_npy_from_floats keeps a float32 value as it is: every dtype but binary16, bools
// and integers.
bool stays_float32(const std::string& dtype) {
  return dtype != "f2" && (dtype.empty() || (dtype[0] != 'b' && dtype[0] != 'i' && dtype[0] != 'u'));
}

// An array of `dtype` ("f2", "b1" or an integer type) and `shape` holding value(i), each float32
// value converted as make_npy_from_floats says.
template <typename Value>
NpyArray converted(const std::string& dtype, std::vector<int64_t> shape, Value value) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  const size_t item = npy_itemsize(dtype), count = array.element_count();
  const bool half = dtype == "f2", flag = dtype == "b1";
  array.data.resize(count * item);
  for (size_t i = 0; i < count; ++i) {
    const float f = value(i);
    if (half) {
      const uint16_t bits = float_to_half_bits(f);
      std::memcpy(array.data.data() + i * item, &bits, item);
    } else {
      const int64_t v = flag ? (f != 0.0f) : std::llround(f);
      std::memcpy(array.data.data() + i * item, &v, item); // little-endian: the low bytes
    }
  }
  return array;
}

} // namespace

NpyArray make_npy_f16(std::vector<int64_t> shape, const float* data) {
  return converted("f2", std::move(shape), [data](size_t i) { return data[i]; });
}

NpyArray make_npy_from_floats(const std::string& dtype, std::vector<int64_t> shape,
                              const std::vector<float>& values) {
  if (stays_float32(dtype)) return make_npy_f32(std::move(shape), values.data());
  return converted(dtype, std::move(shape), [&values](size_t i) { return values[i]; });
}

NpyArray make_npy_from_float_bytes(const std::string& dtype, std::vector<int64_t> shape,
                                   std::string float32_bytes) {
  if (!stays_float32(dtype)) {
    return converted(dtype, std::move(shape), [&float32_bytes](size_t i) {
      float f;
      std::memcpy(&f, float32_bytes.data() + i * sizeof f, sizeof f);
      return f;
    });
  }
  NpyArray array;
  array.dtype = "f4";
  array.shape = std::move(shape);
  array.data = std::move(float32_bytes);
  return array;
}

std::vector<float> floats_as_is(const NpyArray& array) {
  const size_t count = array.element_count();
  std::vector<float> out(count);
  const std::string& dt = array.dtype;
  if (dt == "f4") {
    // An empty vector's data() may be null, which memcpy must not be given even for 0 bytes.
    if (count > 0) std::memcpy(out.data(), array.data.data(), count * sizeof(float));
  } else if (dt == "f8") {
    for (size_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(load<double>(array.data, i));
  } else if (dt == "f2") {
    for (size_t i = 0; i < count; ++i)
      out[i] = half_bits_to_float(load<uint16_t>(array.data, i));
  } else if (dt == "b1") {
    for (size_t i = 0; i < count; ++i)
      out[i] = array.data[i] != 0 ? 1.0f : 0.0f;
  } else {
    for (size_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(integer_at(array, i));
  }
  return out;
}

StatusOr<std::vector<float>> to_floats(const NpyArray& array, const std::string& name) {
  std::vector<float> out = floats_as_is(array);
  if (array.dtype[0] == 'f') {
    for (size_t i = 0; i < out.size(); ++i) {
      if (!std::isfinite(out[i])) {
        return invalid_argument(name + ": element " + std::to_string(i) + " is not finite" +
                                (array.dtype == "f8" ? " in float32" : ""));
      }
    }
  }
  return out;
}

StatusOr<Dataset> dataset_from_array(const NpyArray& features, const std::string& name) {
  if (features.shape.empty()) {
    return invalid_argument(name + ": features must have a leading sample dimension, got a 0-d array");
  }
  const auto num_samples = static_cast<size_t>(features.shape[0]);
  if (num_samples == 0)
    return invalid_argument(name + ": contains no samples (shape " + shape_string(features.shape) + ")");

  Dataset ds;
  ds.source = name;
  ds.sample_shape.assign(features.shape.begin() + 1, features.shape.end());
  if (ds.sample_shape.empty()) ds.sample_shape = {1};
  ds.num_samples = num_samples;

  IPU_ASSIGN_OR_RETURN(ds.features, to_floats(features, name));
  if (features.dtype == "u1" &&
      std::any_of(ds.features.begin(), ds.features.end(), [](float v) { return v > 1; })) {
    ds.note = name + ": uint8 features are used as they are, 0 to 255, as Keras's fit uses them; the mnist: "
                     "loader divides pixels by 255, so a model trained on it expects values in [0, 1]";
  }
  return ds;
}

StatusOr<Dataset> load_npy_dataset(const std::string& features_path, const std::string& labels_path) {
  // The raw features are released (end of the lambda) before the labels are read.
  StatusOr<Dataset> loaded = [&]() -> StatusOr<Dataset> {
    IPU_ASSIGN_OR_RETURN(NpyArray features, read_npy(features_path));
    return dataset_from_array(features, features_path);
  }();
  if (!loaded.ok()) return loaded.status();
  Dataset ds = std::move(*loaded);
  ds.source = "npy:" + features_path + (labels_path.empty() ? "" : "," + labels_path);
  const size_t num_samples = ds.num_samples;

  if (labels_path.empty()) return ds;

  IPU_ASSIGN_OR_RETURN(NpyArray labels, read_npy(labels_path));
  if (labels.dtype[0] == 'f') {
    // Float labels (one-hot rows, probabilities, targets) for the losses that take them.
    if (labels.shape.empty() || static_cast<size_t>(labels.shape[0]) != num_samples) {
      return invalid_argument(labels_path + ": has " +
                              (labels.shape.empty() ? std::string("no sample dimension")
                                                    : std::to_string(labels.shape[0]) + " labels") +
                              " but " + features_path + " has " + std::to_string(num_samples) + " samples");
    }
    ds.label_shape.assign(labels.shape.begin() + 1, labels.shape.end());
    if (ds.label_shape.empty()) ds.label_shape = {1};
    IPU_ASSIGN_OR_RETURN(ds.float_labels, to_floats(labels, labels_path));
    return ds;
  }
  if (!is_integer_dtype(labels.dtype)) {
    return invalid_argument(labels_path + ": labels must be integers (class indices) or floats, got " +
                            describe_dtype(labels.dtype));
  }
  const bool column = labels.shape.size() == 2 && labels.shape[1] == 1;
  if (labels.shape.size() != 1 && !column) {
    return invalid_argument(labels_path + ": labels must have shape (N,) or (N, 1), got " +
                            shape_string(labels.shape));
  }
  if (static_cast<size_t>(labels.shape[0]) != num_samples) {
    return invalid_argument(labels_path + ": has " + std::to_string(labels.shape[0]) + " labels but " +
                            features_path + " has " + std::to_string(num_samples) + " samples");
  }
  ds.labels.resize(num_samples);
  int64_t max_label = 0;
  for (size_t i = 0; i < num_samples; ++i) {
    const int64_t v = integer_at(labels, i);
    // Bounded so that num_classes = 1 + max label still fits an int.
    if (v < 0 || v >= std::numeric_limits<int32_t>::max()) {
      return invalid_argument(labels_path + ": label " + std::to_string(v) + " at index " +
                              std::to_string(i) + " is out of range (labels must be class indices >= 0)");
    }
    ds.labels[i] = static_cast<int32_t>(v);
    max_label = std::max(max_label, v);
  }
  ds.num_classes = static_cast<int>(max_label + 1);
  return ds;
}

} // namespace ipu::data
