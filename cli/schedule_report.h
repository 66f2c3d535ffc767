// What the compiled schedule does and costs: the numbers for `ipucc compile --json` and the
// picture for `--report FILE.svg` and the HTML report (one row per IPU, forward and backward
// passes labelled by micro-batch, over estimated time), drawn from the executable's
// ScheduleEstimate.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/format/executable.pb.h"

namespace ipu::cli {

nlohmann::json schedule_json(const format::Executable& executable);
std::string schedule_svg(const format::Executable& executable);

} // namespace ipu::cli
