#include "cache/manifest.h"

#include <utility>

#include "runtime/base/sha256.h"

namespace ipu::cache {
namespace {

constexpr size_t kKeyLength = 64;

void append_escaped(std::string& out, std::string_view text, bool is_name) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '=' && is_name) {
      out += "\\=";
    } else {
      out += c;
    }
  }
}

// Unescapes one field of `line` starting at `pos`. A name ends at the first unescaped '=' (which
// must exist); a value runs to the end of the line.
StatusOr<std::string> unescape_field(std::string_view line, size_t& pos, bool is_name, size_t line_number) {
  std::string out;
  auto error = [&](const std::string& what) {
    return invalid_argument("manifest line " + std::to_string(line_number) + ": " + what);
  };
  while (pos < line.size()) {
    char c = line[pos++];
    if (c == '=' && is_name) return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos == line.size()) return error("backslash at end of line");
    char e = line[pos++];
    if (e == '\\') {
      out += '\\';
    } else if (e == 'n') {
      out += '\n';
    } else if (e == '=' && is_name) {
      out += '=';
    } else {
      return error(std::string("invalid escape \\") + e);
    }
  }
  if (is_name) return error("missing '='");
  return out;
}

bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

} // namespace

void Manifest::set(std::string name, std::string value) {
  m_entries[std::move(name)] = std::move(value);
}

std::string Manifest::canonical_text() const {
  std::string out;
  // std::map iterates in byte order of the raw names, which is the canonical order.
  for (const auto& [name, value] : m_entries) {
    append_escaped(out, name, /*is_name=*/true);
    out += '=';
    append_escaped(out, value, /*is_name=*/false);
    out += '\n';
  }
  return out;
}

StatusOr<Manifest> Manifest::parse(std::string_view text) {
  Manifest manifest;
  if (text.empty()) return manifest;
  if (text.back() != '\n') return invalid_argument("manifest: missing newline at end of text");
  size_t line_number = 0;
  const std::string* previous_name = nullptr;
  size_t start = 0;
  while (start < text.size()) {
    ++line_number;
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    size_t pos = 0;
    IPU_ASSIGN_OR_RETURN(std::string name, unescape_field(line, pos, /*is_name=*/true, line_number));
    IPU_ASSIGN_OR_RETURN(std::string value, unescape_field(line, pos, /*is_name=*/false, line_number));
    // Sorted and unique, or the text is not the canonical form and its key would not match.
    if (previous_name != nullptr && !(*previous_name < name)) {
      return invalid_argument("manifest line " + std::to_string(line_number) +
                              ": names are not sorted and unique");
    }
    auto [it, inserted] = manifest.m_entries.emplace(std::move(name), std::move(value));
    (void)inserted;
    previous_name = &it->first;
  }
  return manifest;
}

StatusOr<Manifest> Manifest::from_entries(const std::vector<std::pair<std::string, std::string>>& entries) {
  Manifest manifest;
  for (const auto& [name, value] : entries) {
    if (!manifest.m_entries.emplace(name, value).second) {
      return invalid_argument("manifest names '" + name + "' more than once");
    }
  }
  return manifest;
}

std::string Manifest::key() const {
  return sha256_hex(canonical_text());
}

std::vector<std::string> Manifest::differences(const Manifest& other) const {
  std::vector<std::string> out;
  auto a = m_entries.begin();
  auto b = other.m_entries.begin();
  // Merge walk over both sorted maps, so the result comes out sorted without a set.
  while (a != m_entries.end() || b != other.m_entries.end()) {
    if (b == other.m_entries.end() || (a != m_entries.end() && a->first < b->first)) {
      out.push_back(a->first);
      ++a;
    } else if (a == m_entries.end() || b->first < a->first) {
      out.push_back(b->first);
      ++b;
    } else {
      if (a->second != b->second) out.push_back(a->first);
      ++a;
      ++b;
    }
  }
  return out;
}

bool is_valid_key(std::string_view key) {
  return key.size() == kKeyLength && is_hex_prefix(key);
}

bool is_hex_prefix(std::string_view text) {
  if (text.empty() || text.size() > kKeyLength) return false;
  for (char c : text) {
    if (!is_lower_hex(c)) return false;
  }
  return true;
}

} // namespace ipu::cache
