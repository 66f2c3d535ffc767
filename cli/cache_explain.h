// `ipucc cache explain KEY|MODEL [compile options]`: why a compile would miss. The manifest of
// the model and options (or of the entry KEY) against the nearest stored entry, the one with the
// fewest differing manifest fields, field by field.
#pragma once

#include <string>

#include "cache/local_store.h"
#include "cli/compile_flags.h"

namespace ipu::cli {

// Prints the explanation (JSON with `json`, docs/json.md); returns the exit code: 0, 2 for a
// malformed key, 3 for an unreadable model, 6 for a missing entry or an unreadable cache.
int run_cache_explain(cache::LocalStore& store, const std::string& target, const CompileFlags& compile,
                      bool json);

} // namespace ipu::cli
