#include <doctest/doctest.h>

#include <string>

#include "cache/manifest.h"

using ipu::StatusCode;
using ipu::cache::is_hex_prefix;
using ipu::cache::is_valid_key;
using ipu::cache::Manifest;

TEST_CASE("manifest canonical text is independent of insertion order") {
  Manifest a;
  a.set("model", "abc");
  a.set("compiler", "ipucc-1");
  a.set("target", "ipu2");
  Manifest b;
  b.set("target", "ipu2");
  b.set("compiler", "ipucc-1");
  b.set("model", "abc");
  CHECK(a.canonical_text() == "compiler=ipucc-1\nmodel=abc\ntarget=ipu2\n");
  CHECK(a.canonical_text() == b.canonical_text());
  CHECK(a.key() == b.key());
}

TEST_CASE("manifest set replaces an existing value") {
  Manifest m;
  m.set("opt", "1");
  m.set("opt", "2");
  CHECK(m.entries().size() == 1);
  CHECK(m.canonical_text() == "opt=2\n");
}

TEST_CASE("manifest escaping cannot forge entries") {
  // A value that tries to smuggle in a second line.
  Manifest forged;
  forged.set("a", "1\nb=2");
  Manifest honest;
  honest.set("a", "1");
  honest.set("b", "2");
  CHECK(forged.canonical_text() == "a=1\\nb=2\n");
  CHECK(forged.canonical_text() != honest.canonical_text());
  CHECK(forged.key() != honest.key());

  // A literal backslash-n must not collide with a real newline.
  Manifest literal;
  literal.set("a", "1\\nb=2");
  CHECK(literal.canonical_text() != forged.canonical_text());

  // A trailing backslash must not swallow the line break.
  Manifest trailing;
  trailing.set("a", "x\\");
  trailing.set("b", "y");
  CHECK(trailing.canonical_text() == "a=x\\\\\nb=y\n");

  // '=' in a name must not move the separator.
  Manifest name_eq;
  name_eq.set("a=b", "c");
  Manifest value_eq;
  value_eq.set("a", "b=c");
  CHECK(name_eq.canonical_text() != value_eq.canonical_text());

  for (const Manifest* m : {&forged, &literal, &trailing, &name_eq, &value_eq}) {
    auto parsed = Manifest::parse(m->canonical_text());
    REQUIRE(parsed.ok());
    CHECK(parsed->entries() == m->entries());
    CHECK(parsed->canonical_text() == m->canonical_text());
  }
}

TEST_CASE("manifest parse round-trips awkward content") {
  Manifest m;
  m.set("", "empty name");
  m.set("empty value", "");
  m.set("bytes", std::string("nul\0tab\tcr\r\xff\0", 13));
  m.set("multi\nline\\name=", "v=w\n\n\\");
  auto parsed = Manifest::parse(m.canonical_text());
  REQUIRE(parsed.ok());
  CHECK(*parsed == m);
  CHECK(parsed->key() == m.key());

  auto empty = Manifest::parse("");
  REQUIRE(empty.ok());
  CHECK(empty->entries().empty());
}

TEST_CASE("manifest parse rejects malformed text") {
  const char* bad[] = {
      "a=1",          // no final newline
      "a\n",          // no separator
      "b=1\na=2\n",   // not sorted
      "a=1\na=2\n",   // duplicate name
      "a=\\x\n",      // unknown escape
      "a=\\\n",       // backslash at end of line
      "a=b\\=c\n",    // '=' escape is only canonical in names
      "\n",           // empty line
      "a=1\n\nb=2\n", // empty line in the middle
  };
  for (const char* text : bad) {
    CAPTURE(text);
    auto parsed = Manifest::parse(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("manifest key is stable") {
  Manifest m;
  m.set("model", "abc");
  m.set("compiler", "ipucc-1");
  // printf 'compiler=ipucc-1\nmodel=abc\n' | sha256sum
  CHECK(m.key() == "c5a2c16dd29dc4d80f7b21aa3629112af153944e5ad6db8bdf276f172eb4d467");
  CHECK(is_valid_key(m.key()));
  // printf '' | sha256sum
  CHECK(Manifest().key() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("manifest from an executable's recorded entries has the key of the manifest it records") {
  Manifest m;
  m.set("model", "abc");
  m.set("compiler", "ipucc-1");
  // An executable records its entries in any order.
  auto recorded = Manifest::from_entries({{"model", "abc"}, {"compiler", "ipucc-1"}});
  REQUIRE(recorded.ok());
  CHECK(*recorded == m);
  CHECK(recorded->key() == m.key());
  auto other = Manifest::from_entries({{"model", "xyz"}, {"compiler", "ipucc-1"}});
  REQUIRE(other.ok());
  CHECK(other->key() != m.key());
  CHECK(Manifest::from_entries({})->key() == Manifest().key());
  // A name given twice binds to no key, whichever value a map would keep.
  auto twice = Manifest::from_entries({{"model", "abc"}, {"compiler", "ipucc-1"}, {"model", "xyz"}});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().code() == StatusCode::kInvalidArgument);
  CHECK(twice.status().message().find("'model'") != std::string::npos);
}

TEST_CASE("manifest differences lists changed and one-sided names") {
  Manifest a;
  a.set("same", "1");
  a.set("changed", "x");
  a.set("only_a", "1");
  Manifest b;
  b.set("same", "1");
  b.set("changed", "y");
  b.set("only_b", "1");
  std::vector<std::string> expected = {"changed", "only_a", "only_b"};
  CHECK(a.differences(b) == expected);
  CHECK(b.differences(a) == expected);
  CHECK(a.differences(a).empty());
  CHECK(Manifest().differences(a) == std::vector<std::string>{"changed", "only_a", "same"});
}

TEST_CASE("key validation") {
  CHECK(is_valid_key(std::string(64, 'a')));
  CHECK(is_valid_key("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
  CHECK_FALSE(is_valid_key(std::string(63, 'a')));
  CHECK_FALSE(is_valid_key(std::string(65, 'a')));
  CHECK_FALSE(is_valid_key(std::string(64, 'A')));
  CHECK_FALSE(is_valid_key(std::string(64, 'g')));
  CHECK_FALSE(is_valid_key("../etc"));
  CHECK_FALSE(is_valid_key(""));
  CHECK(is_hex_prefix("abc"));
  CHECK_FALSE(is_hex_prefix(""));
  CHECK_FALSE(is_hex_prefix("ab/c"));
}
