// What parsing an executable's payload would build, counted from the wire before anything is
// built: protobuf turns a 2-byte empty sub-message into an object of a hundred bytes or more, so
// 16 MiB of payload can become a gigabyte of objects. parse_executable refuses a payload whose
// objects would outgrow it by more than a compiled executable's do (docs/executable_format.md).
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/base/status.h"

namespace ipu::format {

struct PayloadCensus {
  uint64_t messages = 0;            // sub-messages, each one object
  uint64_t scalars = 0;             // elements of repeated numbers (an upper bound for packed ones)
  uint64_t string_bytes = 0;        // bytes of strings, bytes fields and unknown fields, kept as they are
  uint64_t initial_value_bytes = 0; // of those, the tensors' initial values
  uint64_t source_onnx_bytes = 0;   // and the ONNX model kept for --export-onnx

  // An upper estimate of the memory the parsed message holds.
  uint64_t parsed_bytes() const;
};

// Walks `payload` as an Executable message by its schema. DataLoss if it is not a well-formed
// message (the parser would refuse it too) or nests deeper than protobuf's parser allows.
StatusOr<PayloadCensus> take_census(std::string_view payload);

// The objects a payload of `payload_bytes` may parse into, and the ONNX source it may keep
// beside the tensors it describes (which hold the same weights).
uint64_t parsed_bytes_budget(uint64_t payload_bytes);
uint64_t source_onnx_budget(uint64_t initial_value_bytes);

} // namespace ipu::format
