// Executables written by an earlier ipucc (tests/data/golden_executables, made by its make.sh)
// still load and predict bitwise what they predicted then: a change that breaks the format (a
// codelet's parameters read another way, a field renumbered) fails here rather than in users'
// files and caches. When the format version is bumped on purpose, they must be refused by
// version with the message that says to recompile, and make.sh writes new ones.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "runtime/data/npy.h"
#include "runtime/format/executable_file.h"
#include "runtime/session/session.h"

namespace {

// The format version the golden files were written with.
constexpr uint32_t kGoldenFormatVersion = 7;

std::string golden(const std::string& file) {
  return std::string(IPUCC_SOURCE_DIR) + "/tests/data/golden_executables/" + file;
}

// The executable `name`, as a run loads it (initial values left in the mapped file) or with every
// initial value read into the message.
ipu::StatusOr<ipu::format::LoadedExecutable> load_golden(const std::string& name, bool mapped) {
  const std::string path = golden(name + ".ipuexe");
  if (mapped) return ipu::format::load_executable_file(path);
  IPU_ASSIGN_OR_RETURN(ipu::format::Executable exe, ipu::format::read_executable_file(path));
  return ipu::format::LoadedExecutable{std::move(exe), {}};
}

TEST_CASE("golden executables load and predict what they predicted when written") {
  for (const char* name : {"mlp_replicated", "mlp_staged", "gemm_infer"})
    for (const bool mapped : {true, false}) {
      CAPTURE(name);
      CAPTURE(mapped);
      auto exe = load_golden(name, mapped);
      if (ipu::format::kFormatVersion != kGoldenFormatVersion) {
        REQUIRE_FALSE(exe.ok());
        CHECK(exe.status().code() == ipu::StatusCode::kFailedPrecondition);
        CHECK(exe.status().message().find("recompile the model with this ipucc") != std::string::npos);
        continue;
      }
      INFO(exe.status().message());
      REQUIRE(exe.ok());
      auto session = ipu::session::Session::create(std::move(*exe), {});
      INFO(session.status().message());
      REQUIRE(session.ok());
      auto input = ipu::data::read_npy(golden("input.npy"));
      auto want = ipu::data::read_npy(golden(std::string(name) + ".predicted.npy"));
      REQUIRE(input.ok());
      REQUIRE(want.ok());
      auto got = (*session)->infer({*input});
      INFO(got.status().message());
      REQUIRE(got.ok());
      REQUIRE(got->outputs.size() == 1);
      CHECK(got->outputs[0].shape == want->shape);
      CHECK(got->outputs[0].dtype == want->dtype);
      REQUIRE(got->outputs[0].data.size() == want->data.size());
      CHECK(std::memcmp(got->outputs[0].data.data(), want->data.data(), want->data.size()) == 0);
    }
}

} // namespace
