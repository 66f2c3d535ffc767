// Checkpoints (runtime/session/checkpoint.h): tensor names from models may hold anything, and every
// tensor still gets a file of its own, named safely, that reads back bit for bit.
#include <doctest/doctest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/data/npy.h"
#include "runtime/session/checkpoint.h"
#include "tests/unit/test_strings.h"
#include "tests/unit/test_temp_dir.h"

namespace ipu::testing {
namespace {

using namespace std::string_literals;
using session::checkpoint_file_names;
using session::NamedTensor;
using session::read_checkpoint;
using session::write_checkpoint;

std::string lower(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The names a hostile model can give its weights.
std::vector<std::string> hostile_names() {
  return {"a/b/kernel",
          "a.b/kernel",
          "a:b/kernel",
          "Dense/kernel",
          "dense/kernel",
          "..",
          ".",
          "../../etc/passwd",
          "/",
          "/kernel",
          "",
          "x\0y/kernel"s,
          "line\nbreak",
          "back\\slash",
          "tilde~0123abcd",
          "space and 'quote'",
          "gewicht_\xc3\xa4",
          std::string(300, 'L') + "/kernel",
          std::string(300, 'L') + "/bias",
          std::string(5000, '/')};
}

// Values whose bits a careless copy would change: -0, a denormal, infinities, a NaN with payload.
NamedTensor tensor_for(size_t seed, const std::vector<int64_t>& shape = {2, 3}) {
  NamedTensor t;
  t.shape = shape;
  const uint32_t bits[] = {0x80000000u, 0x00000001u, 0x7f800000u, 0xff800000u, 0x7fc12345u, 0x3f800000u};
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
    float v;
    const uint32_t b = bits[(i + seed) % 6] ^ static_cast<uint32_t>(seed << 8);
    std::memcpy(&v, &b, sizeof v);
    t.values.push_back(v);
  }
  return t;
}

bool same_bits(const NamedTensor& a, const NamedTensor& b) {
  return a.shape == b.shape && a.values.size() == b.values.size() &&
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void write_tensor(const std::string& path, const NamedTensor& t) {
  REQUIRE(data::write_npy(path, data::make_npy_f32(t.shape, t.values.data())).ok());
}

TEST_CASE("checkpoint_file_names keeps plain names readable") {
  const auto files =
      checkpoint_file_names({"dense1/kernel", "dense1/bias", "dense1/kernel/momentum", "conv:0"});
  CHECK(files.at("dense1/kernel") == "dense1.kernel.npy");
  CHECK(files.at("dense1/bias") == "dense1.bias.npy");
  CHECK(files.at("dense1/kernel/momentum") == "dense1.kernel.momentum.npy");
  CHECK(files.at("conv:0") == "conv.0.npy");
}

TEST_CASE("checkpoint_file_names gives every name its own safe file") {
  const std::vector<std::string> names = hostile_names();
  const auto files = checkpoint_file_names(names);
  REQUIRE(files.size() == names.size());
  std::set<std::string> seen;
  for (const auto& name_and_file : files) {
    const std::string& file = name_and_file.second;
    CAPTURE(file);
    // Distinct even on a case-insensitive file system.
    CHECK(seen.insert(lower(file)).second);
    CHECK(file.size() <= 229);
    CHECK(file.ends_with(".npy"));
    CHECK(file[0] != '.');
    for (char c : file) {
      const bool safe =
          std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '~';
      CHECK(safe);
    }
  }
  SUBCASE("names that would share a file are told apart by a suffix") {
    CHECK(files.at("a/b/kernel").starts_with("a.b.kernel~"));
    CHECK(files.at("a.b/kernel").starts_with("a.b.kernel~"));
    CHECK(files.at("Dense/kernel").starts_with("Dense.kernel~"));
    CHECK(files.at("dense/kernel").starts_with("dense.kernel~"));
  }
  SUBCASE("names a file cannot spell get a suffix even alone") {
    CHECK(checkpoint_file_names({"x\0y"s}).at("x\0y"s).starts_with("x_y~"));
    CHECK(checkpoint_file_names({""}).at("").starts_with("_~"));
    CHECK(checkpoint_file_names({".."}).at("..").starts_with("_.~"));
    CHECK(checkpoint_file_names({"tilde~0123abcd"}).at("tilde~0123abcd") != "tilde~0123abcd.npy");
    CHECK(checkpoint_file_names({std::string(300, 'L')}).at(std::string(300, 'L')).size() == 160 + 1 + 8 + 4);
  }
  SUBCASE("a name keeps its file whatever unrelated names are saved with it") {
    CHECK(checkpoint_file_names({"a/b/kernel", "a.b/kernel"}).at("a/b/kernel") == files.at("a/b/kernel"));
    CHECK(checkpoint_file_names({"x\0y/kernel"s}).at("x\0y/kernel"s) == files.at("x\0y/kernel"s));
  }
}

TEST_CASE("a checkpoint of hostile names reads back bit for bit") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  std::map<std::string, NamedTensor> tensors;
  size_t seed = 0;
  for (const std::string& name : hostile_names())
    tensors[name] = tensor_for(seed++);
  REQUIRE(write_checkpoint(dir, tensors).ok());

  // Only the index and one file per tensor, all inside the directory.
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    CHECK(entry.is_regular_file());
    ++entries;
  }
  CHECK(entries == tensors.size() + 1);
  CHECK_FALSE(std::filesystem::exists(tmp.file("etc")));

  auto read = read_checkpoint(dir);
  REQUIRE(read.ok());
  REQUIRE(read->size() == tensors.size());
  for (const auto& name_and_tensor : tensors) {
    const std::string& name = name_and_tensor.first;
    CAPTURE(name);
    REQUIRE(read->count(name) == 1);
    CHECK(same_bits(read->at(name), name_and_tensor.second));
  }
  // The directory is the tools' own checkpoint, so a later save may replace it.
  CHECK(session::check_checkpoint_destination(dir).ok());
  tensors["a/b/kernel"] = tensor_for(99);
  REQUIRE(write_checkpoint(dir, tensors).ok());
  auto again = read_checkpoint(dir);
  REQUIRE(again.ok());
  CHECK(same_bits(again->at("a/b/kernel"), tensor_for(99)));
  CHECK(same_bits(again->at("a.b/kernel"), tensors.at("a.b/kernel")));
}

TEST_CASE("a FLOAT16 tensor's file is <f2, and either float file reads back bit for bit") {
  TempDir dir;
  std::map<std::string, NamedTensor> tensors;
  tensors["w16"] = {{2}, {0x1p-24f, -65504.0f}, /*half=*/true};
  tensors["w32"] = {{2}, {0.1f, -3.0f}, /*half=*/false};
  REQUIRE(write_checkpoint(dir.file("ck"), tensors).ok());
  auto w16 = data::read_npy(dir.file("ck/w16.npy"));
  auto w32 = data::read_npy(dir.file("ck/w32.npy"));
  REQUIRE(w16.ok());
  REQUIRE(w32.ok());
  CHECK(w16->dtype == "f2");
  CHECK(w32->dtype == "f4");
  auto back = read_checkpoint(dir.file("ck"));
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  for (const auto& [name, tensor] : tensors) {
    const NamedTensor& read = back->at(name);
    CHECK(read.half == tensor.half);
    CHECK(read.shape == tensor.shape);
    CHECK(std::memcmp(read.values.data(), tensor.values.data(), tensor.values.size() * sizeof(float)) == 0);
  }
  // Written again, the files are the same bytes.
  REQUIRE(write_checkpoint(dir.file("again"), *back).ok());
  for (const char* file : {"w16.npy", "w32.npy"}) {
    auto first = data::read_npy(dir.file("ck/"s + file));
    auto second = data::read_npy(dir.file("again/"s + file));
    REQUIRE(second.ok());
    CHECK(first->data == second->data);
  }
}

TEST_CASE("a checkpoint written with the earlier names ('/' and ':' as '.') still reads") {
  TempDir tmp;
  const std::string dir = tmp.file("old");
  std::filesystem::create_directory(dir);
  const NamedTensor kernel = tensor_for(1, {3, 2}), bias = tensor_for(2, {2});
  write_tensor(dir + "/dense1.kernel.npy", kernel);
  write_tensor(dir + "/dense1.bias.npy", bias);
  write_text(dir + "/index.json",
             "{\"dense1/bias\": \"dense1.bias.npy\", \"dense1/kernel\": \"dense1.kernel.npy\"}\n");
  auto read = read_checkpoint(dir);
  REQUIRE(read.ok());
  CHECK(same_bits(read->at("dense1/kernel"), kernel));
  CHECK(same_bits(read->at("dense1/bias"), bias));
}

TEST_CASE("an index that names files outside its directory, or one file twice, is refused") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  std::filesystem::create_directory(dir);
  const NamedTensor t = tensor_for(0);
  write_tensor(dir + "/a.b.kernel.npy", t);
  write_tensor(tmp.file("outside.npy"), t);

  SUBCASE("two names share a file: the checkpoint lost one of them when it was written") {
    write_text(dir + "/index.json",
               "{\"a/b/kernel\": \"a.b.kernel.npy\", \"a.b/kernel\": \"a.b.kernel.npy\"}");
    auto read = read_checkpoint(dir);
    REQUIRE_FALSE(read.ok());
    CHECK(read.status().code() == StatusCode::kDataLoss);
    CHECK(contains(read.status().message(), "'a.b/kernel' and 'a/b/kernel' share the file 'a.b.kernel.npy'"));
  }
  // As JSON text: the last one is "a.b.kernel.npy", a NUL, then "x".
  for (const std::string file :
       {"../outside.npy", "..", ".", "", "index.json", "sub/a.b.kernel.npy", "a.b.kernel.npy\\u0000x"}) {
    CAPTURE(file);
    write_text(dir + "/index.json", "{\"w\": \"" + file + "\"}");
    auto read = read_checkpoint(dir);
    REQUIRE_FALSE(read.ok());
    CHECK(read.status().code() == StatusCode::kDataLoss);
    CHECK(contains(read.status().message(), "the entry of 'w' is not the name of a file in " + dir));
  }
}

TEST_CASE("checkpoint messages print a name's NUL and control characters escaped") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  std::filesystem::create_directory(dir);
  write_text(dir + "/index.json", "{\"x\\u0000y\\n/kernel\": \"../elsewhere.npy\"}");
  auto read = read_checkpoint(dir);
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().message().find('\0') == std::string::npos);
  CHECK(contains(read.status().message(), "'x\\x00y\\x0a/kernel'"));
}

TEST_CASE("a name that is not UTF-8 is refused before anything is written") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  const std::map<std::string, NamedTensor> tensors = {{"ok/kernel", tensor_for(0)},
                                                      {"bad\xff/kernel", tensor_for(1)}};
  Status written = write_checkpoint(dir, tensors);
  REQUIRE_FALSE(written.ok());
  CHECK(written.code() == StatusCode::kInvalidArgument);
  CHECK(contains(written.message(), "tensor name 'bad\\xff/kernel' is not UTF-8"));
  CHECK_FALSE(std::filesystem::exists(dir));
}

} // namespace
} // namespace ipu::testing
