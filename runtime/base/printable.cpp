#include "runtime/base/printable.h"

#include <cstdio>

namespace ipu {
namespace {

// The length of the well-formed UTF-8 sequence that starts `text` (Unicode's table 3-7), or 0.
size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char first = byte(0);
  if (first < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf; // the range of the second byte
  if (first >= 0xc2 && first <= 0xdf) {
    length = 2;
  } else if (first >= 0xe0 && first <= 0xef) {
    length = 3;
    if (first == 0xe0) low = 0xa0;  // overlong
    if (first == 0xed) high = 0x9f; // surrogates
  } else if (first >= 0xf0 && first <= 0xf4) {
    length = 4;
    if (first == 0xf0) low = 0x90;  // overlong
    if (first == 0xf4) high = 0x8f; // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

void append_hex_escape(std::string& out, unsigned char c) {
  char buffer[5];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
  out += buffer;
}

std::string escape(std::string_view text, bool whole_message) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = utf8_sequence_length(text.substr(i));
    const auto c = static_cast<unsigned char>(text[i]);
    // C1 controls (U+0080..U+009F, 0xc2 0x80..0x9f) act on some terminals like ESC sequences.
    const bool c1_control = length == 2 && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (length == 0) {
      append_hex_escape(out, c);
      ++i;
    } else if (c1_control) {
      append_hex_escape(out, c);
      append_hex_escape(out, static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      if (c == '\n' && whole_message) {
        out += '\n';
      } else if (c < 0x20 || c == 0x7f) {
        append_hex_escape(out, c);
      } else if ((c == '\\' || c == '\'') && !whole_message) {
        out += '\\';
        out += static_cast<char>(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
    }
  }
  return out;
}

} // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence_length(text.substr(i));
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string printable(std::string_view text) {
  return escape(text, false);
}

std::string printable_message(std::string_view text) {
  return escape(text, true);
}

} // namespace ipu
