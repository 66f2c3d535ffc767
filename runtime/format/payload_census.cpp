#include "runtime/format/payload_census.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <string>

#include "runtime/format/executable.pb.h"

namespace ipu::format {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// protobuf's parser refuses messages nested deeper than this (its default recursion limit).
constexpr int kMaxNesting = 100;
// A parsed sub-message: the object (a Vertex with its three repeated fields is about 120 bytes)
// and the allocator's header around it.
constexpr uint64_t kBytesPerMessage = 160;
constexpr uint64_t kBytesPerScalar = 8;
// A compiled executable's objects take about 5 times its payload (the tutorial MLP's vertices:
// 62 KiB of payload, 290 KiB of objects); an empty sub-message takes 80 times its 2 bytes.
constexpr uint64_t kParsedBytesPerPayloadByte = 16;
constexpr uint64_t kParsedBytesFloor = uint64_t{64} << 20;
// An ONNX model holds its weights once, as the tensors' initial values do, plus its graph.
constexpr uint64_t kSourceOnnxSlack = uint64_t{64} << 20;

bool is_field(const FieldDescriptor* field, const Descriptor* in, std::string_view name) {
  return field != nullptr && field->containing_type() == in && field->name() == name;
}

class CensusTaker {
public:
  // Walks the message of `type` that ends at byte `end` of the input.
  Status walk(CodedInputStream& in, const Descriptor* type, int depth, int end) {
    if (depth > kMaxNesting)
      return data_loss("payload nests messages deeper than " + std::to_string(kMaxNesting));
    while (true) {
      const uint32_t tag = in.ReadTag();
      if (tag == 0) return in.CurrentPosition() == end ? Status() : malformed();
      const int number = WireFormatLite::GetTagFieldNumber(tag);
      const FieldDescriptor* field = type != nullptr ? type->FindFieldByNumber(number) : nullptr;
      switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t ignored = 0;
        if (!in.ReadVarint64(&ignored)) return malformed();
        count_scalar(field);
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED32: {
        uint32_t ignored = 0;
        if (!in.ReadLittleEndian32(&ignored)) return malformed();
        count_scalar(field);
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED64: {
        uint64_t ignored = 0;
        if (!in.ReadLittleEndian64(&ignored)) return malformed();
        count_scalar(field);
        break;
      }
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length) || static_cast<int>(length) < 0 ||
            static_cast<int>(length) > in.BytesUntilTotalBytesLimit()) {
          return malformed();
        }
        if (field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE) {
          ++m_census.messages;
          const int end_of_field = in.CurrentPosition() + static_cast<int>(length);
          const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
          IPU_RETURN_IF_ERROR(walk(in, field->message_type(), depth + 1, end_of_field));
          in.PopLimit(limit);
          break;
        }
        if (field != nullptr && field->is_repeated() &&
            field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
          m_census.scalars += length; // packed: at least a byte each
        } else {
          m_census.string_bytes += length;
          if (is_field(field, Tensor::descriptor(), "initial_value")) m_census.initial_value_bytes += length;
          if (is_field(field, Executable::descriptor(), "source_onnx")) m_census.source_onnx_bytes += length;
        }
        if (!in.Skip(static_cast<int>(length))) return malformed();
        break;
      }
      default: // groups are not in this schema, and the parser refuses them in proto3
        return malformed();
      }
    }
  }

  const PayloadCensus& census() const { return m_census; }

private:
  // A repeated number costs its element; a singular one lives inside its message's object; an
  // unknown one is kept in the unknown field set, about as large as a repeated element.
  void count_scalar(const FieldDescriptor* field) {
    if (field == nullptr || field->is_repeated()) ++m_census.scalars;
  }
  static Status malformed() { return data_loss("payload is not a valid executable message"); }

  PayloadCensus m_census;
};

} // namespace

uint64_t PayloadCensus::parsed_bytes() const {
  return messages * kBytesPerMessage + scalars * kBytesPerScalar + string_bytes;
}

uint64_t parsed_bytes_budget(uint64_t payload_bytes) {
  return kParsedBytesFloor + kParsedBytesPerPayloadByte * payload_bytes;
}

uint64_t source_onnx_budget(uint64_t initial_value_bytes) {
  return kSourceOnnxSlack + 2 * initial_value_bytes;
}

StatusOr<PayloadCensus> take_census(std::string_view payload) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(payload.data()), static_cast<int>(payload.size()));
  in.SetTotalBytesLimit(static_cast<int>(payload.size()));
  CensusTaker taker;
  IPU_RETURN_IF_ERROR(taker.walk(in, Executable::descriptor(), 0, static_cast<int>(payload.size())));
  return taker.census();
}

} // namespace ipu::format
