// What the compiled schedule does and costs: the numbers for `ipucc compile --json` and the
// picture for `--report FILE.svg` and the HTML report (one row per IPU, forward and backward
// passes labelled by micro-batch, over estimated time), drawn from the executable's
// ScheduleEstimate.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/format/executable.pb.h"

namespace ipu::cli {

nlohmann::json schedule_json(const format::ExecutableSummary& executable);
// The slowest stage's cycles per micro-batch over the mean of the stages' (1 without stages).
double stage_imbalance(const format::ExecutableSummary& executable);
// For a pipelined executable, where the compiler cut it (when it chose the stages) and how even
// the stages are: "model.json: 2 pipeline stages chosen ..., starting at 'dense2'; stage
// imbalance: slowest stage 1.05x the mean (...)"; "" without stages.
std::string stage_split_note(const std::string& model_path, const format::ExecutableSummary& executable);
std::string schedule_svg(const format::ExecutableSummary& executable);

} // namespace ipu::cli
