// Which cache entry an executable belongs to (compile_cache/executable_key.h): the manifest it
// records, less its weights digest, must be the one it was found under; and the names of a
// lookup's outcomes, which --json prints.
#include <doctest/doctest.h>

#include <string>

#include "cache/manifest.h"
#include "compile_cache/cache_outcome.h"
#include "compile_cache/executable_key.h"
#include "runtime/format/executable_file.h"

namespace ipu::testing {
namespace {

using cache::Manifest;
using compile_cache::check_cache_entry;
using compile_cache::check_executable_key;
using compile_cache::recorded_manifest;

void record(format::Executable& exe, const std::string& name, const std::string& value) {
  format::ManifestEntry* entry = exe.add_manifest();
  entry->set_name(name);
  entry->set_value(value);
}

Manifest manifest_of(std::initializer_list<std::pair<std::string, std::string>> entries) {
  Manifest m;
  for (const auto& [name, value] : entries)
    m.set(name, value);
  return m;
}

TEST_CASE("executable key: the recorded manifest leaves the weights digest out") {
  format::Executable exe;
  record(exe, "model", "abc");
  record(exe, compile_cache::kWeightsField, "0123");
  record(exe, "batch_size", "32");
  auto recorded = recorded_manifest(exe.manifest(), "entry.ipuexe");
  REQUIRE(recorded.ok());
  CHECK(*recorded == manifest_of({{"batch_size", "32"}, {"model", "abc"}}));
  // Any weights belong under the same key.
  CHECK(check_executable_key(exe.manifest(), *recorded, "entry.ipuexe").ok());
}

TEST_CASE("executable key: another key's executable is refused, naming both keys and the field") {
  format::Executable exe;
  record(exe, "model", "abc");
  record(exe, "batch_size", "16");
  const Manifest expected = manifest_of({{"batch_size", "32"}, {"model", "abc"}});
  const Status status = check_executable_key(exe.manifest(), expected, "entries/ab/abcd.ipuexe");
  CHECK(status.code() == StatusCode::kDataLoss);
  CHECK(status.message().find("entries/ab/abcd.ipuexe") == 0);
  CHECK(status.message().find(manifest_of({{"batch_size", "16"}, {"model", "abc"}}).key()) !=
        std::string::npos);
  CHECK(status.message().find("not " + expected.key()) != std::string::npos);
  CHECK(status.message().find("differs in 'batch_size'") != std::string::npos);
}

TEST_CASE("executable key: an executable without a manifest belongs to no key") {
  const Manifest expected = manifest_of({{"model", "abc"}});
  const Status status = check_executable_key(format::Executable().manifest(), expected, "m.ipuexe");
  CHECK(status.code() == StatusCode::kDataLoss);
  CHECK(status.message().find("records no manifest") != std::string::npos);
}

TEST_CASE("executable key: a manifest naming an input twice is corrupt") {
  format::Executable exe;
  record(exe, "model", "abc");
  record(exe, "model", "def");
  const auto recorded = recorded_manifest(exe.manifest(), "m.ipuexe");
  CHECK(recorded.status().code() == StatusCode::kDataLoss);
  CHECK(recorded.status().message().find("m.ipuexe: the executable's recorded") == 0);
  CHECK(check_executable_key(exe.manifest(), manifest_of({{"model", "abc"}}), "m.ipuexe").code() ==
        StatusCode::kDataLoss);
}

TEST_CASE("executable key: a cache entry must also be an executable that runs") {
  // The right key, framed around a message with no program: refused by the verifier, named.
  format::Executable exe;
  record(exe, "model", "abc");
  const Status status = check_cache_entry(exe, manifest_of({{"model", "abc"}}), "entries/ab/abcd.ipuexe");
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("entries/ab/abcd.ipuexe") == 0);
}

TEST_CASE("executable key: a fetched remote entry is checked manifest first, then executable") {
  const Manifest expected = manifest_of({{"model", "abc"}});
  const std::string where = "http://cache/ab/abcd";
  format::Executable exe;
  record(exe, "model", "abc");
  const std::string framed = format::serialize_executable(exe);
  using compile_cache::check_fetched_entry;

  // The manifest byte for byte: one more newline is another manifest.
  auto other_text = check_fetched_entry(expected.canonical_text() + "\n", framed, expected, where);
  CHECK(other_text.status().code() == StatusCode::kDataLoss);
  CHECK(other_text.status().message() == where + ".manifest: differs from the expected manifest");
  // Bytes that are no executable, under the right manifest.
  auto garbage = check_fetched_entry(expected.canonical_text(), "not an executable", expected, where);
  CHECK_FALSE(garbage.ok());
  CHECK(garbage.status().message().find(where + ".ipuexe") == 0);
  // Another key's executable.
  format::Executable other;
  record(other, "model", "def");
  auto other_key =
      check_fetched_entry(expected.canonical_text(), format::serialize_executable(other), expected, where);
  CHECK(other_key.status().code() == StatusCode::kDataLoss);
  CHECK(other_key.status().message().find("differs in 'model'") != std::string::npos);
  // The right key around a message that does not run: refused as a local entry would be.
  auto unrunnable = check_fetched_entry(expected.canonical_text(), framed, expected, where);
  CHECK_FALSE(unrunnable.ok());
  CHECK(unrunnable.status().message().find(where + ".ipuexe") == 0);
  CHECK(unrunnable.status().message().find("compiled for cache key") == std::string::npos);
}

TEST_CASE("cache outcome names are the ones --json documents") {
  using compile_cache::CacheOutcome;
  CHECK(compile_cache::cache_outcome_name(CacheOutcome::kHit) == "hit");
  CHECK(compile_cache::cache_outcome_name(CacheOutcome::kRemoteHit) == "remote-hit");
  CHECK(compile_cache::cache_outcome_name(CacheOutcome::kMiss) == "miss");
  CHECK(compile_cache::cache_outcome_name(CacheOutcome::kForced) == "forced");
  CHECK(compile_cache::cache_outcome_name(CacheOutcome::kDisabled) == "disabled");
}

} // namespace
} // namespace ipu::testing
