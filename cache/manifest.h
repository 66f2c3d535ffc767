// The manifest: every input that changes a compiled executable, as (name, value) pairs. Its
// canonical text is what the cache stores next to an executable and its SHA-256 is the cache key,
// so two compilations share an entry exactly when all their inputs agree.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace ipu::cache {

class Manifest {
public:
  // Names are unique: setting a name again replaces its value.
  void set(std::string name, std::string value);

  // Entries sorted by name, one "name=value\n" line each. Backslash and newline are escaped
  // ("\\", "\n") in names and values, and '=' ("\=") in names, so no name or value can forge a
  // line or move the separator.
  std::string canonical_text() const;

  // Inverse of canonical_text(). Accepts only canonical text (sorted, unique names, minimal
  // escapes, final newline), so parse(t).canonical_text() == t for every accepted t.
  static StatusOr<Manifest> parse(std::string_view canonical_text);

  // The manifest of (name, value) pairs in any order, as an executable records the one it was
  // compiled from. InvalidArgument if a name appears twice: a list that says two things about one
  // input belongs to no key.
  static StatusOr<Manifest> from_entries(const std::vector<std::pair<std::string, std::string>>& entries);

  // Lowercase hex SHA-256 of canonical_text(): 64 characters.
  std::string key() const;

  const std::map<std::string, std::string>& entries() const { return m_entries; }

  // Names (sorted) whose values differ, or that are present on only one side.
  std::vector<std::string> differences(const Manifest& other) const;

  bool operator==(const Manifest& other) const = default;

private:
  std::map<std::string, std::string> m_entries;
};

// True for exactly 64 lowercase hex characters. Keys reach file paths and may come from the
// command line, so everything else must be rejected before a path is built.
bool is_valid_key(std::string_view key);

// True for 1..64 lowercase hex characters (a key or a prefix of one).
bool is_hex_prefix(std::string_view text);

} // namespace ipu::cache
