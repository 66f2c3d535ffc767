// The hyper-parameter flags ipurun train applies at run time to any executable (the optimizer's
// run-time values, docs/training.md), beside what they mean to a compile of a model.
#pragma once

#include <string>

#include "cli/run_flags.h"
#include "runtime/session/session.h"

namespace ipu::cli {

// Whether `flag` ("--momentum") is one of them: train takes it for an executable file too.
bool is_hyper_parameter_flag(const std::string& flag);

// The hyper-parameter flags given to train, set on the session: a flag the executable's optimizer
// does not read is a usage error naming it. --learning-rate before --lr-schedule, which may start
// from it. The exit code.
int apply_hyper_parameters(const RunFlags& f, session::Session& session);

} // namespace ipu::cli
