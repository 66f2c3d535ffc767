#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "cache/cache_stats.h"
#include "runtime/base/file_io.h"

namespace fs = std::filesystem;
using ipu::StatusCode;
using ipu::cache::CacheStats;

namespace {

class StatsDir {
public:
  StatsDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/ipucc_stats_test.XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    REQUIRE(made != nullptr);
    m_path = pattern;
  }
  ~StatsDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const std::string& path() const { return m_path; }
  // The directory as the cache holds it: open by descriptor.
  const ipu::cache::DirHandle& handle() {
    if (!m_handle) {
      auto opened = ipu::cache::DirHandle::open(m_path, /*create=*/false);
      REQUIRE(opened.ok());
      m_handle.emplace(std::move(opened).value());
    }
    return *m_handle;
  }

private:
  std::string m_path;
  std::optional<ipu::cache::DirHandle> m_handle;
};

} // namespace

TEST_CASE("cache stats start at zero") {
  StatsDir dir;
  auto stats = ipu::cache::read_stats(dir.handle());
  REQUIRE(stats.ok());
  CHECK(stats->hits == 0);
  CHECK(stats->misses == 0);
  CHECK(stats->compiles_avoided == 0);
  CHECK(stats->corrupt_found == 0);
  CHECK(stats->evictions == 0);
}

TEST_CASE("cache stats add and persist") {
  StatsDir dir;
  CacheStats hit;
  hit.hits = 1;
  hit.compiles_avoided = 1;
  CacheStats other;
  other.misses = 2;
  other.corrupt_found = 1;
  other.evictions = 3;
  REQUIRE(ipu::cache::add_stats(dir.handle(), hit).ok());
  REQUIRE(ipu::cache::add_stats(dir.handle(), hit).ok());
  REQUIRE(ipu::cache::add_stats(dir.handle(), other).ok());
  auto stats = ipu::cache::read_stats(dir.handle());
  REQUIRE(stats.ok());
  CHECK(stats->hits == 2);
  CHECK(stats->compiles_avoided == 2);
  CHECK(stats->misses == 2);
  CHECK(stats->corrupt_found == 1);
  CHECK(stats->evictions == 3);
  CHECK(fs::exists(dir.path() + "/stats.json"));
  CHECK(fs::exists(dir.path() + "/stats.lock"));
}

TEST_CASE("cache stats json round trip and malformed text") {
  CacheStats s;
  s.hits = 5;
  s.misses = 7;
  s.compiles_avoided = 5;
  s.corrupt_found = 1;
  s.evictions = 18446744073709551615ull;
  auto parsed = ipu::cache::parse_stats_json(ipu::cache::stats_json_text(s));
  REQUIRE(parsed.ok());
  CHECK(parsed->hits == 5);
  CHECK(parsed->misses == 7);
  CHECK(parsed->evictions == 18446744073709551615ull);

  auto spaced = ipu::cache::parse_stats_json(" { \"misses\":3 , \"future_field\": 9 }\n");
  REQUIRE(spaced.ok());
  CHECK(spaced->misses == 3);
  CHECK(spaced->hits == 0);

  for (const char* bad :
       {"", "[]", "{\"hits\": -1}", "{\"hits\": 1", "{\"hits\" 1}", "{\"hits\": 99999999999999999999}"}) {
    CAPTURE(bad);
    CHECK(ipu::cache::parse_stats_json(bad).status().code() == StatusCode::kDataLoss);
  }
}

TEST_CASE("cache stats damaged file is reported then replaced") {
  StatsDir dir;
  REQUIRE(ipu::write_file_atomic(dir.path() + "/stats.json", "garbage").ok());
  auto read = ipu::cache::read_stats(dir.handle());
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().code() == StatusCode::kDataLoss);
  CacheStats miss;
  miss.misses = 1;
  auto status = ipu::cache::add_stats(dir.handle(), miss);
  CHECK_FALSE(status.ok()); // reported, so the caller can warn
  auto again = ipu::cache::read_stats(dir.handle());
  REQUIRE(again.ok());
  CHECK(again->misses == 1);
}

TEST_CASE("cache stats update fails without failing on a missing directory") {
  StatsDir dir;
  const ipu::cache::DirHandle& gone = dir.handle();
  REQUIRE(::rmdir(dir.path().c_str()) == 0);
  CacheStats miss;
  miss.misses = 1;
  auto status = ipu::cache::add_stats(gone, miss);
  CHECK_FALSE(status.ok());
}

TEST_CASE("cache stats concurrent updates are not lost") {
  StatsDir dir;
  const ipu::cache::DirHandle& handle = dir.handle();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      CacheStats one;
      one.hits = 1;
      for (int i = 0; i < 25; ++i)
        CHECK(ipu::cache::add_stats(handle, one).ok());
    });
  }
  for (auto& t : threads)
    t.join();
  auto stats = ipu::cache::read_stats(dir.handle());
  REQUIRE(stats.ok());
  CHECK(stats->hits == 100);
}
