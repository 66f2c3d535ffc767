// The compile flags `ipucc compile` and `ipurun MODEL` share, parsed as the tools parse them
// (cli/compile_flags.cpp registers them on a CLI11 app, cli/compile_options.cpp makes the
// compiler's options of them): what a flag left out leaves unset, what each typed flag becomes,
// which values CLI11 refuses before the compiler sees them, and how the cache-use flags fall back
// on their environment variables.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>

#include "cli/compile_flags.h"
#include "cli/compile_options.h"

namespace ipu::cli {
namespace {

// An app holding the compile flags, parsed from COMMAND_LINE (without a program name).
struct ParsedFlags {
  CLI::App app{"test"};
  CompileFlags flags;
  std::vector<const CLI::Option*> options = add_compile_flags(&app, flags, "");

  explicit ParsedFlags(const std::string& command_line) { app.parse(command_line, false); }

  size_t given() const {
    size_t count = 0;
    for (const CLI::Option* option : options)
      count += option->count() > 0 ? 1 : 0;
    return count;
  }
};

compiler::CompileOptions options_of(const std::string& command_line,
                                    const std::string& default_mode = "train") {
  ParsedFlags parsed(command_line);
  StatusOr<compiler::CompileOptions> options = to_compile_options(parsed.flags, "model.json", default_mode);
  REQUIRE_MESSAGE(options.ok(), options.status().to_string());
  return std::move(*options);
}

// Sets or clears an environment variable for one test, and puts back what was there.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_saved = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { m_saved ? ::setenv(m_name, m_saved->c_str(), 1) : ::unsetenv(m_name); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* m_name;
  std::optional<std::string> m_saved;
};

TEST_CASE("no compile flag given: none counts as given, and the options are the defaults") {
  ParsedFlags parsed("");
  CHECK(parsed.given() == 0);
  const compiler::CompileOptions o = options_of("");
  CHECK(o.model_path == "model.json");
  CHECK(o.batch_size == 32);
  CHECK(o.precision == lowering::Precision::kFp32);
  CHECK(o.schedule == lowering::Schedule::kGrouped);
  CHECK(o.mode == compiler::Mode::kTrain);
  // Unset, not a sentinel: the spec's (or Keras's) value stays.
  CHECK_FALSE(o.optimizer.has_value());
  CHECK_FALSE(o.learning_rate.has_value());
  CHECK(o.optimizer_arguments.empty());
  CHECK_FALSE(o.loss.has_value());
  CHECK_FALSE(o.loss_scaling.has_value());
  CHECK_FALSE(o.learning_rate_schedule.has_value());
}

TEST_CASE("the default mode is the tool's until --mode names one") {
  CHECK(options_of("", "infer").mode == compiler::Mode::kInfer);
  CHECK(options_of("--mode train", "infer").mode == compiler::Mode::kTrain);
  CHECK(options_of("--mode infer", "train").mode == compiler::Mode::kInfer);
}

TEST_CASE("named values become the compiler's enums, numbers their optional fields") {
  ParsedFlags parsed("--precision mixed --schedule interleaved --optimizer adam --beta1 0.8 "
                     "--loss-scaling dynamic --loss categorical_crossentropy --batch-size 4");
  CHECK(parsed.given() == 7);
  const compiler::CompileOptions o =
      options_of("--precision mixed --schedule interleaved --optimizer adam --beta1 0.8 "
                 "--loss-scaling dynamic --loss categorical_crossentropy --batch-size 4");
  CHECK(o.precision == lowering::Precision::kMixed);
  CHECK(o.schedule == lowering::Schedule::kInterleaved);
  CHECK(o.optimizer == passes::OptimizerKind::kAdam);
  CHECK(o.optimizer_arguments.numbers == std::map<std::string, float, std::less<>>{{"beta_1", 0.8f}});
  CHECK(o.loss_scaling == passes::LossScalingMode::kDynamic);
  CHECK(o.loss == passes::LossKind::kCategoricalCrossEntropy);
  CHECK(o.batch_size == 4);
}

TEST_CASE("a switch and its --no- form set the option either way; neither leaves it unset") {
  const auto switches = [](const std::string& flags) {
    return options_of(flags).optimizer_arguments.switches;
  };
  using Switches = std::map<std::string, bool, std::less<>>;
  CHECK(switches("--nesterov") == Switches{{"nesterov", true}});
  CHECK(switches("--no-nesterov") == Switches{{"nesterov", false}});
  CHECK(switches("--centered") == Switches{{"centered", true}});
  CHECK(switches("--no-centered") == Switches{{"centered", false}});
  CHECK(switches("--momentum 0.5").empty());
}

TEST_CASE("stage flags keep their lists in order") {
  const compiler::CompileOptions o = options_of("--stage-assignment 0,0,1,2 --pipeline-stages 3");
  CHECK(o.stage_assignment == std::vector<int>{0, 0, 1, 2});
  CHECK(o.pipeline_stages == 3);
  CHECK(options_of("--stage-starts dense_1,dense_2").stage_starts ==
        std::vector<std::string>{"dense_1", "dense_2"});
}

TEST_CASE("CLI11 refuses a value out of its flag's set or range before the compiler sees it") {
  for (const char* bad : {"--precision fp64", "--schedule zigzag", "--optimizer nadam", "--momentum 1",
                          "--beta1 -0.1", "--batch-size 0", "--learning-rate 0", "--epsilon 1e39",
                          "--loss-scaling sometimes", "--mode eval", "--constant-input no_equals_sign"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ParsedFlags{bad}, const CLI::ValidationError&);
  }
  CHECK_THROWS_AS(ParsedFlags{"--no-such-flag"}, const CLI::ExtrasError&);
}

TEST_CASE("an unknown loss is the compiler's refusal, a usage error listing the losses") {
  ParsedFlags parsed("--loss hinge");
  const StatusOr<compiler::CompileOptions> options = to_compile_options(parsed.flags, "model.json", "train");
  REQUIRE_FALSE(options.ok());
  CHECK(options.status().code() == StatusCode::kBadOption);
  CHECK(options.status().message().find("--loss must be ") != std::string::npos);
  CHECK(options.status().message().find("got 'hinge'") != std::string::npos);
}

TEST_CASE("--constant-input: an unreadable or malformed file is refused naming the flag") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ipucc_test_compile_flags_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string missing = (dir / "missing.npy").string();
  const std::string corrupt = (dir / "corrupt.npy").string();
  std::ofstream(corrupt) << "not an npy file";

  ParsedFlags absent("--constant-input shape=" + missing);
  const auto not_found = to_compile_options(absent.flags, "model.onnx", "infer");
  REQUIRE_FALSE(not_found.ok());
  CHECK(not_found.status().code() == StatusCode::kNotFound);
  CHECK(not_found.status().to_string().find("--constant-input shape=" + missing) != std::string::npos);

  // Corrupt content is the user's input, not a corrupt executable: InvalidArgument, not DataLoss.
  ParsedFlags malformed("--constant-input shape=" + corrupt);
  const auto invalid = to_compile_options(malformed.flags, "model.onnx", "infer");
  REQUIRE_FALSE(invalid.ok());
  CHECK(invalid.status().code() == StatusCode::kInvalidArgument);
  CHECK(invalid.status().to_string().find("--constant-input shape=" + corrupt) != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the cache size: the flag, else $IPUCC_CACHE_MAX_SIZE, else 5G; a bad one names its source") {
  ScopedEnv env("IPUCC_CACHE_MAX_SIZE", nullptr);
  CacheUseFlags flags;
  CHECK(*cache_max_size(flags) == uint64_t{5} << 30);
  {
    ScopedEnv set("IPUCC_CACHE_MAX_SIZE", "500M");
    CHECK(*cache_max_size(flags) == uint64_t{500} << 20);
    ScopedEnv bad("IPUCC_CACHE_MAX_SIZE", "lots");
    const auto refused = cache_max_size(flags);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message() ==
          "$IPUCC_CACHE_MAX_SIZE: invalid size 'lots' (expected bytes or e.g. 1024K, 500M, 2G)");
  }
  flags.cache_max_size = "2G";
  CHECK(*cache_max_size(flags) == uint64_t{2} << 30);
  flags.cache_max_size = "2Q";
  const auto refused = cache_max_size(flags);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message().rfind("--cache-max-size: invalid size '2Q'", 0) == 0);
}

TEST_CASE("the remote cache: http(s) only, the flag before $IPUCC_REMOTE_CACHE, read-only either way") {
  ScopedEnv url("IPUCC_REMOTE_CACHE", nullptr);
  ScopedEnv read_only("IPUCC_REMOTE_CACHE_READONLY", nullptr);
  CacheUseFlags flags;
  CHECK(*remote_cache_url(flags) == "");
  CHECK_FALSE(remote_cache_read_only(flags));
  {
    ScopedEnv set("IPUCC_REMOTE_CACHE", "https://cache.example/ipucc");
    CHECK(*remote_cache_url(flags) == "https://cache.example/ipucc");
    flags.remote_cache = "http://127.0.0.1:8080";
    CHECK(*remote_cache_url(flags) == "http://127.0.0.1:8080");
    ScopedEnv ftp("IPUCC_REMOTE_CACHE", "ftp://cache.example");
    CHECK(remote_cache_url(flags).ok()); // the flag wins; the variable is not read
  }
  flags.remote_cache = "cache.example";
  const auto refused = remote_cache_url(flags);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--remote-cache: 'cache.example' is not an http:// or https:// URL");
  ScopedEnv env_read_only("IPUCC_REMOTE_CACHE_READONLY", "1");
  CHECK(remote_cache_read_only(flags));
  ScopedEnv not_one("IPUCC_REMOTE_CACHE_READONLY", "yes");
  CHECK_FALSE(remote_cache_read_only(flags));
  flags.remote_cache_read_only = true;
  CHECK(remote_cache_read_only(flags));
}

} // namespace
} // namespace ipu::cli
