#!/usr/bin/env bash
# Sets up, builds and runs every test: unit and end-to-end tests (ctest), the lint (clang-format and
# clang-tidy: scripts/lint.sh), the same tests under ASan and UBSan, the
# runtime-only build that proves the runtime links without the compiler, and a short run of every
# fuzzer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
IPUCC_BUILD_DIR=$root/build "$root/scripts/build.sh" -DIPUCC_WERROR=ON
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")

echo "== lint"
"$root/scripts/lint.sh" "$root/build"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
IPUCC_BUILD_DIR=$root/build-sanitize IPUCC_BUILD_TYPE=RelWithDebInfo "$root/scripts/build.sh" -DIPUCC_SANITIZE=ON -DIPUCC_WERROR=ON
(cd "$root/build-sanitize" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure -j "$(nproc)")

echo "== runtime-only build (IPUCC_BUILD_COMPILER=OFF, IPUCC_WITH_MPI=OFF)"
IPUCC_BUILD_DIR=$root/build-runtime-only "$root/scripts/build.sh" -DIPUCC_BUILD_COMPILER=OFF -DIPUCC_WITH_MPI=OFF \
  -DIPUCC_WERROR=ON
(cd "$root/build-runtime-only" && ctest --output-on-failure -j "$(nproc)")

echo "== fuzzers (libFuzzer, ${FUZZ_SECONDS:-120}s each)"
"$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-120}"
