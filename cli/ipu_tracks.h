// The tracks both traces (ipucc compile --trace, ipurun --trace) draw compute sets on: one
// process per IPU of a replica, named with the pipeline stages it runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/format/executable.pb.h"

namespace ipu::cli {

// "IPU 2 · stage 2".
std::string ipu_process_name(const format::Executable& executable, uint32_t ipu);

// The IPUs of the replica whose tiles `compute_set`'s vertices run on, ascending; {0} for none.
std::vector<uint32_t> compute_set_ipus(const format::Executable& executable,
                                       const format::ComputeSet& compute_set);

} // namespace ipu::cli
