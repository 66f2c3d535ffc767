// What `ipucc compile --json` prints when the compile fails (docs/json.md): the one object every
// --json output is, with `fits` false when the model does not fit (the question users come with)
// and null when the compile failed before knowing, the error, and, when a plan overflowed, its
// tiles over the limit by category and the options that free tile memory.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "compiler/driver/compile.h"
#include "runtime/base/status.h"

namespace ipu::cli {

// `overflow`: the plan that did not fit (ResourceExhausted), else null; `options`: the compile's,
// null when they could not be made.
nlohmann::json compile_failure_json(const std::string& model, const Status& status, int exit_code,
                                    const lowering::MemoryReport* overflow,
                                    const compiler::CompileOptions* options);

} // namespace ipu::cli
