#!/usr/bin/env bash
# Sets up, builds and runs every test: unit and end-to-end tests (ctest), the lint (clang-format and
# clang-tidy: scripts/lint.sh), the tests under ASan and UBSan (all but the slowest suites, which
# repeat paths the others cover), the runtime-only build that proves the runtime links without the
# compiler, with its tests under ThreadSanitizer, and a short run of every fuzzer (FUZZ_SECONDS
# each, default 30; scripts/fuzz.sh runs them for longer). docs/development.md keeps each stage's
# time against CI's budget.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# Each stage's wall time, printed when the script ends however it ends: CI's budget is per run,
# and these say where it went (docs/development.md keeps the figures).
stage_times=()
report_stage_times() {
  echo "== stage times"
  printf '%s\n' "${stage_times[@]}"
}
trap report_stage_times EXIT
stage() {  # NAME COMMAND...
  local name=$1 start=$SECONDS status=0
  shift
  echo "== $name"
  "$@" || status=$?
  stage_times+=("$(printf '%6d s  %s%s' $((SECONDS - start)) "$name" "$( ((status == 0)) || echo " (failed: $status)")")")
  return "$status"
}
in_dir() {  # DIR COMMAND...
  (cd "$1" && shift && "$@")
}
# clang_tree DIR: a build tree about to be configured with clang. One configured for another
# compiler (as the sanitizer tree was once, for GCC) cannot switch in place: it is this script's
# own output, so it starts afresh.
clang_tree() {
  if [ -f "$1/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++' "$1/CMakeCache.txt"; then
    echo "test.sh: $1 was configured for another compiler; configuring it afresh with clang"
    rm -rf "$1"
  fi
}

stage "setup" "$root/scripts/setup.sh"

# The release and runtime-only builds compile most files with the same command: ccache, in a
# directory of this checkout's own (cold in a fresh clone), compiles them once.
with_ccache=(env CCACHE_DIR="$root/build-ccache" CCACHE_BASEDIR="$root")
ccache_flags=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

stage "release build" "${with_ccache[@]}" IPUCC_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DIPUCC_WERROR=ON \
  "${ccache_flags[@]}"
stage "release tests" in_dir "$root/build" ctest --output-on-failure -j "$(nproc)"

# One clang build serves the sanitizer tests and the fuzzers: its libraries carry ASan, UBSan and
# libFuzzer's coverage instrumentation. clang compiles it in about half the time GCC takes with
# the sanitizers, and its -Werror adds clang's warnings to GCC's of the release build. Line tables
# only (-g1): the sanitizers' reports still name file and line, for a fifth less build time. A
# unity build (CMAKE_UNITY_BUILD: the libraries' and the unit tests' files compiled eight to a
# unit) parses the shared headers once per unit, and the lint then tidies each unit whole. The
# release build compiles every file on its own, so each still stands alone.
sanitize=$root/build-sanitize
clang_tree "$sanitize"
stage "sanitizer build (clang: ASan + UBSan, fuzzers)" env CC=clang CXX=clang++ \
  IPUCC_BUILD_DIR="$sanitize" IPUCC_BUILD_TYPE=RelWithDebInfo \
  "$root/scripts/build.sh" -DIPUCC_SANITIZE=ON -DIPUCC_FUZZ=ON -DIPUCC_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
# The lint reads this tree's compile database: clang-tidy takes each unit whole, parsing the headers
# its files share once (the release build has proved that each file compiles alone), and the
# fuzzers, which only this tree builds, are tidied too.
stage "lint" "$root/scripts/lint.sh" "$sanitize"
# Not the suites labelled release_only (tests/e2e/CMakeLists.txt says which and why).
stage "sanitizer tests" in_dir "$sanitize" env ASAN_OPTIONS=detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j "$(nproc)" -LE release_only

# The runtime-only build proves the runtime links without the compiler, and it is built with
# ThreadSanitizer: the runtime is where the threads are. Its tests are the runtime's unit tests
# and e2e_runtime_threads, whose executables the release build's ipucc compiles.
runtime_tsan=$root/build-runtime-tsan
clang_tree "$runtime_tsan"
stage "runtime-only build (no compiler, no MPI; clang: TSan)" env CC=clang CXX=clang++ \
  IPUCC_BUILD_DIR="$runtime_tsan" IPUCC_BUILD_TYPE=RelWithDebInfo "$root/scripts/build.sh" \
  -DIPUCC_BUILD_COMPILER=OFF -DIPUCC_WITH_MPI=OFF -DIPUCC_TSAN=ON -DIPUCC_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
  "-DIPUCC_TEST_COMPILER=$root/build/cli/ipucc" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG"
# Full debug info (-g): TSan's reports then name oneTBB's functions in full, as the suppressions
# in cmake/tsan_suppressions.txt do.
stage "runtime-only tests (TSan)" in_dir "$runtime_tsan" \
  env TSAN_OPTIONS="halt_on_error=1 suppressions=$root/cmake/tsan_suppressions.txt" \
  ctest --output-on-failure -j "$(nproc)"

# Half a minute each: enough to replay the seed corpora and catch a parser that a change broke;
# the search for new bugs is scripts/fuzz.sh's, run for hours outside CI.
stage "fuzzers (libFuzzer, ${FUZZ_SECONDS:-30} s each)" env IPUCC_FUZZ_BUILD_DIR="$sanitize" \
  "$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-30}"
