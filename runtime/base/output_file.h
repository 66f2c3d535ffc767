// The one rule for every file the tools write at a user's path (`ipucc compile -o`, `--report`,
// `ipurun --history`, `--step-log`, `--output`, `--output-dir`, `--export-onnx`, and the
// checkpoint directories of `--save-weights`, through check_output_parent):
//
//  - a path may receive an output when nothing is there, or when it holds an output ipucc or
//    ipurun wrote and nobody has changed since; anything else, a user's data, is refused and left
//    as it was;
//  - the tools create the output itself, never the directories above it: its parent must exist.
//
// Which files are the tools' own: each write leaves a record, under the state directory
// ($XDG_STATE_HOME/ipucc/outputs, else ~/.local/state/ipucc/outputs), of the file's absolute path
// and the SHA-256 of what was written. A file whose content no longer matches its record (a user
// edited it, or wrote something else there) is the user's again. Records are written after the
// file; if the state directory cannot be written the output is still written, only not
// replaceable later.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace ipu {

// OK when `path` may receive an output (above). A refused path is kIoError naming it, saying why;
// a missing parent is kNotFound. Checks take no time worth noticing, so callers check every output
// path before doing any work.
Status check_output_file(const std::string& path);

// The parent directory of `path` exists and is writable (kNotFound / kIoError naming it).
Status check_output_parent(const std::string& path);

// check_output_file, then write_file_atomic (readers see the old content or the new, never a part
// of it), then the record that makes the file replaceable by a later run.
Status write_output_file(const std::string& path, std::string_view content);

} // namespace ipu
