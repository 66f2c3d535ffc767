#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <system_error>

#include "cache/local_store.h"
#include "cache/manifest.h"
#include "runtime/base/file_io.h"
#include "tests/unit/test_strings.h"

namespace fs = std::filesystem;
using ipu::StatusCode;
using ipu::cache::LocalStore;
using ipu::cache::Manifest;
using ipu::testing::contains;

namespace {

// A fresh mkdtemp directory, removed (permissions restored first) when the test ends.
class TempDir {
public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/ipucc_cache_test.XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    REQUIRE(made != nullptr);
    m_path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    // A test may have left read-only directories behind; make them writable so they can go.
    for (auto it = fs::recursive_directory_iterator(m_path, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec)) ::chmod(it->path().c_str(), 0755);
    }
    ::chmod(m_path.c_str(), 0755);
    fs::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

Manifest sample_manifest(const std::string& model = "abc") {
  Manifest m;
  m.set("compiler", "ipucc-1");
  m.set("model", model);
  return m;
}

LocalStore open_store(const std::string& dir) {
  auto store = LocalStore::open(dir);
  REQUIRE(store.ok());
  return std::move(store).value();
}

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// Root ignores directory permissions, so a chmod-based test must first check it can bite.
bool directory_is_writable(const std::string& dir) {
  std::string probe = dir + "/.probe";
  int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0644);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

const std::string kBytes = std::string("IPUEXE\0\x01\xff binary\0", 17);

} // namespace

TEST_CASE("local store open creates nested directories") {
  TempDir tmp;
  std::string dir = tmp.path() + "/a/b/cache";
  auto store = LocalStore::open(dir + "/");
  REQUIRE(store.ok());
  CHECK(store->dir() == dir);
  CHECK(fs::is_directory(dir + "/entries"));
  // Opening again is fine.
  CHECK(LocalStore::open(dir).ok());
}

TEST_CASE("local store open fails on a file and names the dir") {
  TempDir tmp;
  std::string file = tmp.path() + "/plain_file";
  REQUIRE(ipu::write_file_atomic(file, "x").ok());
  auto store = LocalStore::open(file);
  REQUIRE_FALSE(store.ok());
  CHECK(contains(store.status().message(), file));
  CHECK(LocalStore::open("").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("local store entry layout") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  std::string key = sample_manifest().key();
  CHECK(store.entry_path(key) == tmp.path() + "/entries/c5/" + key + ".ipuexe");
  CHECK(store.manifest_path(key) == tmp.path() + "/entries/c5/" + key + ".manifest");
}

TEST_CASE("local store put then lookup hits with identical bytes") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();

  auto miss = store.lookup(m);
  REQUIRE(miss.ok());
  CHECK_FALSE(miss->hit);
  CHECK(miss->warnings.empty());
  CHECK(miss->executable.bytes.empty());

  REQUIRE(store.put(m, kBytes).ok());
  auto hit = store.lookup(m);
  REQUIRE(hit.ok());
  CHECK(hit->hit);
  CHECK(hit->executable.bytes == kBytes);
  CHECK(hit->manifest_text == m.canonical_text());
  CHECK(hit->key == m.key());
  CHECK(hit->path == store.entry_path(m.key()));
  CHECK(hit->warnings.empty());

  // Another manifest is a different entry.
  auto other = store.lookup(sample_manifest("xyz"));
  REQUIRE(other.ok());
  CHECK_FALSE(other->hit);

  // Putting again replaces the bytes; no temporary files are left in the shard.
  REQUIRE(store.put(m, "new bytes").ok());
  auto replaced = store.lookup(m);
  REQUIRE(replaced.ok());
  CHECK(replaced->hit);
  CHECK(replaced->executable.bytes == "new bytes");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(store.entry_path(m.key())).parent_path())) {
    (void)entry;
    ++files;
  }
  CHECK(files == 2);
}

TEST_CASE("local store lookup with a limit reads the executable's first bytes and gives its size") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  const std::string bytes(200000, 'x'); // several reads of the store's buffer
  REQUIRE(store.put(m, bytes).ok());
  for (uint64_t limit : {uint64_t{0}, uint64_t{10}, uint64_t{70000}, uint64_t{200000}, uint64_t{300000}}) {
    CAPTURE(limit);
    auto head = store.lookup(m, limit);
    REQUIRE(head.ok());
    CHECK(head->hit);
    CHECK(head->executable.bytes == bytes.substr(0, limit));
    CHECK(head->executable_size == bytes.size());
  }
}

TEST_CASE("local store touches the executable on a hit") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());
  std::string path = store.entry_path(m.key());
  struct timespec old_times[2] = {{1000, 0}, {1000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), old_times, 0) == 0);

  auto hit = store.lookup(m);
  REQUIRE(hit.ok());
  REQUIRE(hit->hit);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_mtime > std::time(nullptr) - 60);

  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), old_times, 0) == 0);
  REQUIRE(store.load_by_key(m.key()).ok());
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_mtime > std::time(nullptr) - 60);
}

TEST_CASE("local store manifest mismatch is a miss with a warning") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());
  std::string key = m.key();

  SUBCASE("different canonical manifest under the same key") {
    REQUIRE(
        ipu::write_file_atomic(store.manifest_path(key), sample_manifest("tampered").canonical_text()).ok());
    auto result = store.lookup(m);
    REQUIRE(result.ok());
    CHECK_FALSE(result->hit);
    CHECK(result->executable.bytes.empty());
    REQUIRE(result->warnings.size() == 1);
    CHECK(contains(result->warnings[0], key));
    CHECK(contains(result->warnings[0], "model"));
  }
  SUBCASE("malformed stored manifest") {
    REQUIRE(ipu::write_file_atomic(store.manifest_path(key), "garbage").ok());
    auto result = store.lookup(m);
    REQUIRE(result.ok());
    CHECK_FALSE(result->hit);
    REQUIRE(result->warnings.size() == 1);
    CHECK(contains(result->warnings[0], key));
    CHECK(contains(result->warnings[0], "malformed"));
  }
  SUBCASE("stored manifest is a prefix of the expected one") {
    REQUIRE(ipu::write_file_atomic(store.manifest_path(key), "compiler=ipucc-1\n").ok());
    auto result = store.lookup(m);
    REQUIRE(result.ok());
    CHECK_FALSE(result->hit);
    REQUIRE(result->warnings.size() == 1);
    CHECK(contains(result->warnings[0], "model"));
  }
}

TEST_CASE("local store executable without manifest is a miss") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());
  REQUIRE(::unlink(store.manifest_path(m.key()).c_str()) == 0);

  auto result = store.lookup(m);
  REQUIRE(result.ok());
  CHECK_FALSE(result->hit);
  CHECK(result->executable.bytes.empty());
  // Another process may be between its two writes, so the store reports it and the caller,
  // which knows whether it holds the key's lock, decides whether to warn.
  CHECK(result->uncommitted_executable);
  CHECK(result->warnings.empty());

  auto by_key = store.load_by_key(m.key());
  REQUIRE_FALSE(by_key.ok());
  CHECK(by_key.status().code() == StatusCode::kNotFound);
}

TEST_CASE("local store manifest without executable is a miss") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());
  REQUIRE(::unlink(store.entry_path(m.key()).c_str()) == 0);

  auto result = store.lookup(m);
  REQUIRE(result.ok());
  CHECK_FALSE(result->hit);
  REQUIRE(result->warnings.size() == 1);
  CHECK(contains(result->warnings[0], m.key()));

  auto by_key = store.load_by_key(m.key());
  REQUIRE_FALSE(by_key.ok());
  CHECK(by_key.status().code() == StatusCode::kDataLoss);
}

TEST_CASE("local store rejects invalid keys") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  const std::string bad[] = {
      "../etc",
      "../../../../../../etc/passwd",
      "abc",
      "abcdef0", // prefix shorter than 8
      std::string(64, 'A'),
      "ABCDEF0123",
      std::string(65, 'a'),
      std::string(62, 'a') + "/x",
      "",
  };
  for (const std::string& key : bad) {
    CAPTURE(key);
    CHECK(store.entry_path(key).empty());
    CHECK(store.manifest_path(key).empty());
    auto result = store.load_by_key(key);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("local store load by key and prefix") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());
  REQUIRE(store.put(sample_manifest("other"), "other bytes").ok());
  std::string key = m.key();

  SUBCASE("full key") {
    auto result = store.load_by_key(key);
    REQUIRE(result.ok());
    CHECK(result->hit);
    CHECK(result->key == key);
    CHECK(result->executable.bytes == kBytes);
    CHECK(result->manifest_text == m.canonical_text());
  }
  SUBCASE("unique prefix") {
    for (size_t length : {8, 20, 63}) {
      auto result = store.load_by_key(key.substr(0, length));
      REQUIRE(result.ok());
      CHECK(result->key == key);
      CHECK(result->executable.bytes == kBytes);
      CHECK(result->manifest_text == m.canonical_text());
    }
  }
  SUBCASE("no match") {
    // Flip the last character of the full key, and the 8th of a prefix.
    std::string absent = key;
    absent.back() = absent.back() == '0' ? '1' : '0';
    auto full = store.load_by_key(absent);
    REQUIRE_FALSE(full.ok());
    CHECK(full.status().code() == StatusCode::kNotFound);
    std::string prefix = key.substr(0, 8);
    prefix.back() = prefix.back() == '0' ? '1' : '0';
    auto partial = store.load_by_key(prefix);
    REQUIRE_FALSE(partial.ok());
    CHECK(partial.status().code() == StatusCode::kNotFound);
    auto empty_shard = store.load_by_key(key[0] == 'f' ? "00000000" : "ffffffff");
    REQUIRE_FALSE(empty_shard.ok());
    CHECK(empty_shard.status().code() == StatusCode::kNotFound);
  }
  SUBCASE("ambiguous prefix") {
    // Real 8-character prefix collisions need ~2^16 entries, so plant manifests by name: the
    // candidates are chosen from file names before any content is read.
    const std::string prefix = "abcdef01";
    REQUIRE(fs::create_directories(tmp.path() + "/entries/ab"));
    auto plant = [&](char c) {
      std::string fake = prefix + std::string(56, c);
      REQUIRE(ipu::write_file_atomic(store.manifest_path(fake), "x=1\n").ok());
      return fake;
    };
    std::string first = plant('0');
    std::string second = plant('1');
    auto two = store.load_by_key(prefix);
    REQUIRE_FALSE(two.ok());
    CHECK(two.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(two.status().message(), first));
    CHECK(contains(two.status().message(), second));
    CHECK(contains(two.status().message(), "ambiguous"));

    for (char c : {'2', '3', '4', '5', '6'})
      plant(c);
    auto seven = store.load_by_key(prefix);
    REQUIRE_FALSE(seven.ok());
    CHECK(seven.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(seven.status().message(), "7"));
    CHECK(contains(seven.status().message(), prefix + std::string(56, '4')));
    CHECK_FALSE(contains(seven.status().message(), prefix + std::string(56, '5')));

    // A longer prefix disambiguates; the planted manifest does not hash to its key.
    auto planted = store.load_by_key(prefix + "0");
    REQUIRE_FALSE(planted.ok());
    CHECK(planted.status().code() == StatusCode::kDataLoss);
  }
}

TEST_CASE("local store put failure leaves no partial entry") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  // A directory squatting on the manifest path makes the commit impossible, even for root.
  REQUIRE(fs::create_directories(store.manifest_path(m.key()) + "/blocker"));
  auto status = store.put(m, kBytes);
  CHECK_FALSE(status.ok());
  CHECK_FALSE(exists(store.entry_path(m.key())));
  auto result = store.lookup(m);
  REQUIRE(result.ok());
  CHECK_FALSE(result->hit);
}

TEST_CASE("local store in a read-only directory") {
  TempDir tmp;
  std::string ro = tmp.path() + "/ro";
  REQUIRE(fs::create_directories(ro));
  REQUIRE(::chmod(ro.c_str(), 0555) == 0);
  if (directory_is_writable(ro)) {
    MESSAGE("skipping read-only directory checks: permissions are not enforced (running as root?)");
    return;
  }

  SUBCASE("open cannot create the store and names the dir") {
    std::string dir = ro + "/cache";
    auto store = LocalStore::open(dir);
    REQUIRE_FALSE(store.ok());
    CHECK(contains(store.status().message(), dir));
  }
  SUBCASE("put fails cleanly when the store became read-only") {
    LocalStore store = open_store(tmp.path() + "/store");
    Manifest m = sample_manifest();
    std::string shard = fs::path(store.entry_path(m.key())).parent_path().string();
    REQUIRE(fs::create_directories(shard));
    REQUIRE(::chmod(shard.c_str(), 0555) == 0);
    auto status = store.put(m, kBytes);
    CHECK_FALSE(status.ok());
    CHECK(status.code() == StatusCode::kIoError);
    CHECK_FALSE(exists(store.entry_path(m.key())));
    CHECK_FALSE(exists(store.manifest_path(m.key())));
    auto result = store.lookup(m);
    REQUIRE(result.ok());
    CHECK_FALSE(result->hit);
  }
}

namespace {

void set_mtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

uint64_t size_file(const std::string& dir) {
  auto text = ipu::read_file(dir + "/size");
  REQUIRE(text.ok());
  return std::stoull(*text);
}

uint64_t disk_bytes(const LocalStore& store, const std::string& key) {
  return fs::file_size(store.entry_path(key)) + fs::file_size(store.manifest_path(key));
}

} // namespace

TEST_CASE("local store list reports entries with manifest fields") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  auto empty = store.list();
  REQUIRE(empty.ok());
  CHECK(empty->empty());

  Manifest m = sample_manifest();
  m.set("model_structure_sha256", "abcdef");
  m.set("option.batch_size", "16");
  REQUIRE(store.put(m, kBytes).ok());
  REQUIRE(store.put(sample_manifest("two"), "xx").ok());
  set_mtime(store.entry_path(m.key()), 5000);

  auto entries = store.list();
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 2);
  CHECK((*entries)[0].key < (*entries)[1].key);
  const auto& e = (*entries)[0].key == m.key() ? (*entries)[0] : (*entries)[1];
  CHECK(e.bytes == kBytes.size() + m.canonical_text().size());
  CHECK(e.last_use_ns == 5000LL * 1000000000);
  CHECK(e.manifest_ok);
  CHECK(e.executable_present);
  CHECK(e.model_structure_sha256 == "abcdef");
  CHECK(e.model_sha256.empty());
  CHECK(e.options.at("batch_size") == "16");
  CHECK(e.manifest.at("model") == "abc");
}

TEST_CASE("local store size file follows put, remove and quarantine") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest a = sample_manifest("a");
  Manifest b = sample_manifest("b");
  REQUIRE(store.put(a, kBytes).ok());
  CHECK(size_file(tmp.path()) == disk_bytes(store, a.key()));
  REQUIRE(store.put(b, "bbbb").ok());
  const uint64_t both = disk_bytes(store, a.key()) + disk_bytes(store, b.key());
  CHECK(size_file(tmp.path()) == both);
  auto total = store.total_bytes();
  REQUIRE(total.ok());
  CHECK(*total == both);

  // Rewriting an entry replaces its bytes in the total instead of adding them again.
  REQUIRE(store.put(b, "bbbbbbbb").ok());
  const uint64_t rewritten = disk_bytes(store, a.key()) + disk_bytes(store, b.key());
  CHECK(size_file(tmp.path()) == rewritten);

  const uint64_t b_bytes = disk_bytes(store, b.key());
  REQUIRE(store.remove(b.key()).ok());
  CHECK_FALSE(exists(store.entry_path(b.key())));
  CHECK_FALSE(exists(store.manifest_path(b.key())));
  CHECK(size_file(tmp.path()) == rewritten - b_bytes);
  CHECK(store.remove(b.key()).code() == StatusCode::kNotFound);
  CHECK(store.remove("../x").code() == StatusCode::kInvalidArgument);

  REQUIRE(store.quarantine(a.key()).ok());
  CHECK(size_file(tmp.path()) == 0);
  CHECK_FALSE(exists(store.entry_path(a.key())));
  CHECK(exists(tmp.path() + "/corrupt/" + a.key() + ".ipuexe"));
  CHECK(exists(tmp.path() + "/corrupt/" + a.key() + ".manifest"));
  auto after = store.lookup(a);
  REQUIRE(after.ok());
  CHECK_FALSE(after->hit);
  CHECK(store.quarantine(a.key()).code() == StatusCode::kNotFound);
  auto listed = store.list();
  REQUIRE(listed.ok());
  CHECK(listed->empty());
}

TEST_CASE("local store total is rescanned when the size file is missing or damaged") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest a = sample_manifest("a");
  REQUIRE(store.put(a, kBytes).ok());
  const uint64_t bytes = disk_bytes(store, a.key());
  SUBCASE("missing") {
    REQUIRE(::unlink((tmp.path() + "/size").c_str()) == 0);
  }
  SUBCASE("damaged") {
    REQUIRE(ipu::write_file_atomic(tmp.path() + "/size", "nonsense").ok());
  }
  auto total = store.total_bytes();
  REQUIRE(total.ok());
  CHECK(*total == bytes);
  CHECK(size_file(tmp.path()) == bytes);
}

TEST_CASE("local store evict_to removes least recently used entries first") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest oldest = sample_manifest("oldest");
  Manifest middle = sample_manifest("middle");
  Manifest newest = sample_manifest("newest");
  const std::string payload(1000, 'x');
  for (const Manifest* m : {&newest, &oldest, &middle})
    REQUIRE(store.put(*m, payload).ok());
  set_mtime(store.entry_path(oldest.key()), 1000);
  set_mtime(store.entry_path(middle.key()), 2000);
  set_mtime(store.entry_path(newest.key()), 3000);
  const uint64_t one = disk_bytes(store, oldest.key());
  const uint64_t all = one + disk_bytes(store, middle.key()) + disk_bytes(store, newest.key());
  CHECK(size_file(tmp.path()) == all);

  auto none = store.evict_to(all);
  REQUIRE(none.ok());
  CHECK(none->empty());

  auto first = store.evict_to(all - 1);
  REQUIRE(first.ok());
  REQUIRE(first->size() == 1);
  CHECK((*first)[0] == oldest.key());
  CHECK_FALSE(exists(store.entry_path(oldest.key())));
  CHECK(size_file(tmp.path()) == all - one);

  // A hit makes an entry recent again: middle is now the newest.
  auto hit = store.lookup(middle);
  REQUIRE(hit.ok());
  REQUIRE(hit->hit);
  auto second = store.evict_to(disk_bytes(store, middle.key()));
  REQUIRE(second.ok());
  REQUIRE(second->size() == 1);
  CHECK((*second)[0] == newest.key());
  CHECK(exists(store.entry_path(middle.key())));
  CHECK(size_file(tmp.path()) == disk_bytes(store, middle.key()));

  auto rest = store.evict_to(0);
  REQUIRE(rest.ok());
  CHECK(rest->size() == 1);
  CHECK(size_file(tmp.path()) == 0);
}

TEST_CASE("local store evict_older_than removes entries by last use") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest old_one = sample_manifest("old");
  Manifest fresh = sample_manifest("fresh");
  REQUIRE(store.put(old_one, kBytes).ok());
  REQUIRE(store.put(fresh, kBytes).ok());
  set_mtime(store.entry_path(old_one.key()), 1000);
  auto evicted = store.evict_older_than(2000LL * 1000000000);
  REQUIRE(evicted.ok());
  REQUIRE(evicted->size() == 1);
  CHECK((*evicted)[0] == old_one.key());
  CHECK(exists(store.entry_path(fresh.key())));
  CHECK(size_file(tmp.path()) == disk_bytes(store, fresh.key()));
}

TEST_CASE("local store load_by_key can leave the mtime alone") {
  TempDir tmp;
  LocalStore store = open_store(tmp.path());
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());
  set_mtime(store.entry_path(m.key()), 1000);
  REQUIRE(store.load_by_key(m.key(), /*touch_entry=*/false).ok());
  struct stat st {};
  REQUIRE(::stat(store.entry_path(m.key()).c_str(), &st) == 0);
  CHECK(st.st_mtime == 1000);
}

namespace {

// Every file below `dir`, as relative paths: what a test expects a link never led the store to
// touch.
std::vector<std::string> files_below(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    out.push_back(fs::relative(entry.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

void make_link(const std::string& target, const std::string& link) {
  fs::create_directories(fs::path(link).parent_path());
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
}

bool is_link(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

} // namespace

TEST_CASE("local store never follows a symbolic link inside its directory") {
  TempDir tmp;
  const std::string outside = tmp.path() + "/outside";
  REQUIRE(fs::create_directories(outside));
  const std::string cache = tmp.path() + "/cache";
  LocalStore store = open_store(cache);
  Manifest m = sample_manifest();
  const std::string key = m.key();
  const std::string shard = cache + "/entries/" + key.substr(0, 2);

  SUBCASE("a shard directory") {
    // A complete entry where the link points: following the link would hit, store and delete there.
    REQUIRE(ipu::write_file_atomic(outside + "/" + key + ".manifest", m.canonical_text()).ok());
    REQUIRE(ipu::write_file_atomic(outside + "/" + key + ".ipuexe", kBytes).ok());
    make_link(outside, shard);
    const auto before = files_below(outside);

    auto looked = store.lookup(m);
    REQUIRE(looked.ok());
    CHECK_FALSE(looked->hit);
    REQUIRE(looked->warnings.size() == 1);
    CHECK(contains(looked->warnings[0], shard + ": is a symbolic link"));
    CHECK(looked->warnings[0].ends_with("(treated as a cache miss)"));
    auto put = store.put(m, "other bytes");
    REQUIRE_FALSE(put.ok());
    CHECK(contains(put.message(), shard + ": is a symbolic link"));
    CHECK(store.load_by_key(key).status().code() == StatusCode::kIoError);
    CHECK(store.load_by_key(key.substr(0, 8)).status().code() == StatusCode::kIoError);
    CHECK(store.remove(key).code() == StatusCode::kIoError);
    CHECK(store.quarantine(key).code() == StatusCode::kIoError);
    auto listed = store.list();
    REQUIRE(listed.ok());
    CHECK(listed->empty());
    auto evicted = store.evict_to(0);
    REQUIRE(evicted.ok());
    CHECK(evicted->empty());
    CHECK(files_below(outside) == before);

    // clear removes the link itself; what it points to stays.
    auto cleared = store.clear();
    REQUIRE(cleared.ok());
    CHECK(cleared->empty());
    CHECK_FALSE(exists(shard));
    CHECK(files_below(outside) == before);
    REQUIRE(store.put(m, kBytes).ok());
    CHECK(fs::is_directory(fs::symlink_status(shard)));
  }
  SUBCASE("an entry's files") {
    REQUIRE(store.put(m, kBytes).ok());
    REQUIRE(ipu::write_file_atomic(outside + "/secret", "not an executable").ok());
    REQUIRE(::unlink(store.entry_path(key).c_str()) == 0);
    make_link(outside + "/secret", store.entry_path(key));
    auto looked = store.lookup(m);
    REQUIRE(looked.ok());
    CHECK_FALSE(looked->hit);
    REQUIRE(looked->warnings.size() == 1);
    CHECK(contains(looked->warnings[0], store.entry_path(key) + ": is a symbolic link"));
    // A put replaces the link with the entry's file; the link's target is left as it was.
    REQUIRE(store.put(m, kBytes).ok());
    CHECK_FALSE(is_link(store.entry_path(key)));
    CHECK(*ipu::read_file(outside + "/secret") == "not an executable");
    // Removing an entry whose file is a link removes the link.
    REQUIRE(::unlink(store.entry_path(key).c_str()) == 0);
    make_link(outside + "/secret", store.entry_path(key));
    REQUIRE(store.remove(key).ok());
    CHECK_FALSE(is_link(store.entry_path(key)));
    CHECK(exists(outside + "/secret"));
  }
  SUBCASE("links among the entries are removed by clear, never their targets") {
    REQUIRE(store.put(m, kBytes).ok());
    REQUIRE(ipu::write_file_atomic(outside + "/file", "x").ok());
    make_link(outside + "/file", shard + "/" + std::string(64, 'f') + ".manifest");
    make_link(outside, cache + "/entries/zz");
    auto cleared = store.clear();
    REQUIRE(cleared.ok());
    CHECK(*cleared == std::vector<std::string>{key});
    CHECK(files_below(cache + "/entries") == std::vector<std::string>{key.substr(0, 2)});
    CHECK(files_below(outside) == std::vector<std::string>{"file"});
  }
  SUBCASE("the corrupt directory") {
    REQUIRE(store.put(m, kBytes).ok());
    make_link(outside, cache + "/corrupt");
    auto moved = store.quarantine(key);
    REQUIRE_FALSE(moved.ok());
    CHECK(contains(moved.message(), cache + "/corrupt: is a symbolic link"));
    CHECK(files_below(outside).empty());
    CHECK(exists(store.entry_path(key)));
  }
  SUBCASE("a key's lock file") {
    make_link(outside + "/created", cache + "/locks/" + key + ".lock");
    auto lock = store.lock_key(key);
    REQUIRE_FALSE(lock.ok());
    CHECK(contains(lock.status().message(), cache + "/locks/" + key + ".lock: is a symbolic link"));
    CHECK(files_below(outside).empty());
  }
  SUBCASE("the locks directory") {
    make_link(outside, cache + "/locks");
    auto lock = store.lock_key(key);
    REQUIRE_FALSE(lock.ok());
    CHECK(contains(lock.status().message(), cache + "/locks: is a symbolic link"));
    CHECK(files_below(outside).empty());
  }
  SUBCASE("the stats lock") {
    make_link(outside + "/created", cache + "/stats.lock");
    auto put = store.put(m, kBytes);
    REQUIRE_FALSE(put.ok());
    CHECK(contains(put.message(), cache + "/stats.lock: is a symbolic link"));
    CHECK_FALSE(store.remove(key).ok());
    CHECK(files_below(outside).empty());
  }
  SUBCASE("a FIFO in place of a file") {
    // Opening a FIFO to read waits for a writer: it must be refused, not waited on.
    REQUIRE(store.put(m, kBytes).ok());
    REQUIRE(::unlink(store.manifest_path(key).c_str()) == 0);
    REQUIRE(::mkfifo(store.manifest_path(key).c_str(), 0644) == 0);
    auto looked = store.lookup(m);
    REQUIRE(looked.ok());
    CHECK_FALSE(looked->hit);
    REQUIRE(looked->warnings.size() == 1);
    CHECK(contains(looked->warnings[0], store.manifest_path(key) + ": not a regular file"));
    REQUIRE(::unlink((cache + "/stats.lock").c_str()) == 0);
    REQUIRE(::mkfifo((cache + "/stats.lock").c_str(), 0644) == 0);
    CHECK(contains(store.remove(key).message(), cache + "/stats.lock: lock file is not a regular file"));
  }
  SUBCASE("the entries directory") {
    fs::remove_all(cache + "/entries");
    make_link(outside, cache + "/entries");
    auto reopened = LocalStore::open(cache);
    REQUIRE_FALSE(reopened.ok());
    CHECK(contains(reopened.status().message(), cache + "/entries: is a symbolic link"));
    CHECK(files_below(outside).empty());
  }
}

TEST_CASE("local store refuses a directory that others can write") {
  TempDir tmp;
  const std::string cache = tmp.path() + "/cache";
  LocalStore store = open_store(cache);
  Manifest m = sample_manifest();
  REQUIRE(store.put(m, kBytes).ok());

  for (const auto& mode_and_what : {std::pair{0775, "writable by its group (mode 0775)"},
                                    std::pair{0757, "writable by others (mode 0757)"},
                                    std::pair{01777, "writable by its group and others (mode 1777)"}}) {
    const int mode = mode_and_what.first;
    const std::string what = mode_and_what.second;
    CAPTURE(mode);
    REQUIRE(::chmod(cache.c_str(), static_cast<mode_t>(mode)) == 0);
    auto refused = LocalStore::open(cache);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kIoError);
    CHECK(contains(refused.status().message(),
                   cache + ": " + what + "; refusing a cache directory others can write"));
  }
  REQUIRE(::chmod(cache.c_str(), 0755) == 0);
  REQUIRE(LocalStore::open(cache).ok());

  // A directory inside it is held to the same rule.
  const std::string shard = fs::path(store.entry_path(m.key())).parent_path().string();
  REQUIRE(::chmod(shard.c_str(), 0775) == 0);
  auto looked = store.lookup(m);
  REQUIRE(looked.ok());
  CHECK_FALSE(looked->hit);
  REQUIRE(looked->warnings.size() == 1);
  CHECK(contains(looked->warnings[0], shard + ": writable by its group (mode 0775)"));
  CHECK_FALSE(store.put(m, kBytes).ok());
  REQUIRE(::chmod(shard.c_str(), 0755) == 0);
  REQUIRE(::chmod((cache + "/entries").c_str(), 0777) == 0);
  CHECK(contains(LocalStore::open(cache).status().message(),
                 cache + "/entries: writable by its group and others"));
}

TEST_CASE("local store refuses a directory another user owns") {
  TempDir tmp;
  const std::string cache = tmp.path() + "/cache";
  LocalStore store = open_store(cache);
  if (::geteuid() != 0) {
    MESSAGE("skipping ownership checks: only root can give a directory to another user");
    return;
  }
  REQUIRE(::chown(cache.c_str(), 65534, static_cast<gid_t>(-1)) == 0);
  auto refused = LocalStore::open(cache);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kIoError);
  CHECK(contains(refused.status().message(), cache + ": owned by uid 65534"));
  CHECK(contains(refused.status().message(), "not by the current user, uid 0"));
  REQUIRE(::chown(cache.c_str(), 0, static_cast<gid_t>(-1)) == 0);
  REQUIRE(::chown((cache + "/entries").c_str(), 65534, static_cast<gid_t>(-1)) == 0);
  CHECK(contains(LocalStore::open(cache).status().message(), cache + "/entries: owned by uid 65534"));
  // Root's directories are trusted by everyone: root can write anything anyway.
  REQUIRE(::chown((cache + "/entries").c_str(), 0, static_cast<gid_t>(-1)) == 0);
  CHECK(LocalStore::open(cache).ok());
}
