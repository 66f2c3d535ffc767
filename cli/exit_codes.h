// Exit codes of ipucc and ipurun (docs/exit_codes.md). Few, stable, and tested.
#pragma once

#include "runtime/base/status.h"

namespace ipu::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitRuntimeError = 1, // anything else: a failure while running, an internal error
  kExitUsage = 2,        // bad command line
  kExitInvalidInput =
      3, // malformed model spec, data, checkpoint, mismatched shapes, data out of an op's range
  kExitUnsupported = 4,     // valid input ipucc does not implement
  kExitOutOfTileMemory = 5, // the model does not fit in tile memory
  kExitIoError = 6,         // missing file, unreadable or unwritable file, full disk, cache failure
  kExitBadExecutable = 7,   // corrupt, truncated or incompatible executable
  kExitNonFinite = 8,       // training stopped at a NaN or an infinity (a loss, a gradient, a weight)
  kExitInstanceFailed = 9,  // an instance ended without an error of its own (killed) or stopped answering
};

inline int exit_code_for(const Status& status) {
  switch (status.code()) {
  case StatusCode::kOk:
    return kExitOk;
  case StatusCode::kInvalidArgument:
  case StatusCode::kOutOfRange:
    return kExitInvalidInput;
  case StatusCode::kUnsupported:
    return kExitUnsupported;
  case StatusCode::kResourceExhausted:
    return kExitOutOfTileMemory;
  case StatusCode::kNotFound:
  case StatusCode::kIoError:
    return kExitIoError;
  case StatusCode::kDataLoss:
  case StatusCode::kFailedPrecondition:
    return kExitBadExecutable;
  case StatusCode::kInternal:
    return kExitRuntimeError;
  case StatusCode::kNonFinite:
    return kExitNonFinite;
  case StatusCode::kBadOption:
    return kExitUsage;
  case StatusCode::kDeadlineExceeded:
    return kExitInstanceFailed;
  }
  return kExitRuntimeError;
}

// For errors reading a user's input file (data set, checkpoint): a corrupt one is invalid input,
// not the corrupt executable that DataLoss otherwise means.
inline int input_exit_code(const Status& status) {
  return status.code() == StatusCode::kDataLoss ? kExitInvalidInput : exit_code_for(status);
}

} // namespace ipu::cli
