// The compiler's options from the flags `ipucc compile` and `ipurun MODEL` share, and the note
// on what the model chose for those the flags left to it. Built only with the compiler.
#pragma once

#include <string>

#include "cli/compile_flags.h"
#include "compiler/driver/compile.h"
#include "runtime/base/status.h"
#include "runtime/format/executable.pb.h"

namespace ipu::cli {

// The compiler options of `flags` for `model_path`; `default_mode` when flags.mode is empty.
// Reads the --constant-input files; errors name the flag, the input and the file: NotFound /
// IoError (the file cannot be read), InvalidArgument (a name given twice, content that is not a
// tensor), Unsupported (a tensor type ipucc does not read).
StatusOr<compiler::CompileOptions>
to_compile_options(const CompileFlags& flags, const std::string& model_path, const std::string& default_mode);

// A note on what the model chose for options the flags left to it (compiler::with_model_defaults),
// worth saying when it is not 1: "MODEL: 2 pipeline stages: --gradient-accumulation defaults to
// 2, ...". Empty otherwise.
std::string model_defaults_note(const CompileFlags& flags, const std::string& model_path,
                                const format::ExecutableSummary& exe);

} // namespace ipu::cli
