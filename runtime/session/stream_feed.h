// How the host feeds a program's input streams (engine::HostStreams::pull), one way for every
// command: fit, evaluate and predict over a data set (host_io.cpp) and infer over named inputs
// (infer.cpp). Each stream reads its transfers in order from a host array. The engine makes them
// step by step, replica-major within a step, so transfer k of a stream takes the array's rows at
// (first + k / share) transfers' worth: `share` 1 gives each replica rows of its own, `share` R
// gives the R replicas of a step the same row (the optimizer's hyper-parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "runtime/base/status.h"

namespace ipu::session {

class StreamFeed {
public:
  struct Source {
    std::span<const std::byte> bytes;
    uint64_t first = 0; // in transfers
    uint64_t share = 1; // transfers that read the same rows
    // The whole array into every transfer (an input without a batch axis), which must hold it
    // exactly.
    bool whole = false;
    // Past the array's end: zeros (infer's padding rows), else `overrun` as DataLoss (a data set's
    // feed is padded already, so the executable streamed more than an execution holds).
    bool zeros_past_end = false;
    std::string overrun;
  };

  void add(uint32_t stream, Source source);
  // The engine's pull: the next transfer of `stream` into `destination`.
  Status pull(uint32_t stream, std::span<std::byte> destination);
  // The transfers `stream` has made.
  uint64_t transfers(uint32_t stream) const;

private:
  struct Fed {
    Source source;
    uint64_t transfers = 0;
  };
  std::map<uint32_t, Fed> m_streams;
};

} // namespace ipu::session
