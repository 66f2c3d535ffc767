#include "runtime/base/status.h"

namespace ipu {

const char* status_code_name(StatusCode code) {
  switch (code) {
  case StatusCode::kOk:
    return "ok";
  case StatusCode::kInvalidArgument:
    return "invalid argument";
  case StatusCode::kNotFound:
    return "not found";
  case StatusCode::kUnsupported:
    return "unsupported";
  case StatusCode::kResourceExhausted:
    return "resource exhausted";
  case StatusCode::kDataLoss:
    return "data loss";
  case StatusCode::kFailedPrecondition:
    return "failed precondition";
  case StatusCode::kIoError:
    return "i/o error";
  case StatusCode::kInternal:
    return "internal error";
  case StatusCode::kOutOfRange:
    return "out of range";
  case StatusCode::kNonFinite:
    return "non-finite";
  case StatusCode::kBadOption:
    return "bad option";
  case StatusCode::kDeadlineExceeded:
    return "deadline exceeded";
  }
  return "unknown";
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  return Status(m_code, context + ": " + m_message);
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return m_message;
}

} // namespace ipu
