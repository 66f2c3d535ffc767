// Text from a user's files (tensor, node and layer names, paths) made safe to print. Names come
// from models, so they can hold anything: a NUL would cut a message short where it is printed as a
// C string, a newline or an escape sequence would forge lines or drive the terminal.
#pragma once

#include <string>
#include <string_view>

namespace ipu {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// `text` as it should appear between single quotes in a message: every control character (NUL,
// newline, escape, DEL, ...) and every byte that is not part of well-formed UTF-8 becomes \xNN,
// and '\' and '\'' are escaped, so the quoted text reads back as exactly the original bytes:
// printable("a\0b") == "a\\x00b", printable("it's") == "it\\'s". Printable text, non-ASCII
// letters included, is unchanged.
std::string printable(std::string_view text);

// A whole message made safe to print: like printable, but newlines are kept (they separate a
// message's lines) and '\' and '\'' are left alone (the message's own quoting).
std::string printable_message(std::string_view text);

} // namespace ipu
