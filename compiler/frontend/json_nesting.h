// How deep a JSON document nests, measured on its text before any parser sees it. nlohmann's
// parser is iterative, but dump() and every walk over a parsed value recurse once per level, so a
// file of a million '[' would overflow the stack: documents deeper than kMaxJsonNesting are
// refused (graph specs) or never parsed (fingerprints).
#pragma once

#include <string_view>

namespace ipu::frontend {

// A graph spec needs 4 levels (document, layers, layer, shape); the rest is headroom.
inline constexpr int kMaxJsonNesting = 64;

// Deepest nesting of arrays and objects, found without recursion (strings are skipped).
int json_nesting_depth(std::string_view text);

} // namespace ipu::frontend
