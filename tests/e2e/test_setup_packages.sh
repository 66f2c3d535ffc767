#!/usr/bin/env bash
# scripts/check-setup.py, the guard that keeps a fresh Debian 12 able to build: it names each file
# the build reads whose package scripts/setup.sh would not install. (The ctest setup_packages runs
# it on every build directory; these tests show it fails when it should.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD=$(cd "$(dirname "$IPUCC")/.." && pwd)
CHECK=$SRC/scripts/check-setup.py

test_a_package_setup_does_not_install_is_named_with_its_files() {
  grep -v '^  libdnnl-dev \\$' "$SRC/scripts/setup.sh" > setup-without-dnnl.sh
  expect_ne "$(cat setup-without-dnnl.sh)" "$(cat "$SRC/scripts/setup.sh")" "setup.sh lists libdnnl-dev on a line of its own"
  expect_exit 1 "$CHECK" "$BUILD" --setup setup-without-dnnl.sh
  expect_stderr_contains "/usr/include/oneapi/dnnl/dnnl.hpp (compiler dependency file): package libdnnl-dev: not installed by setup-without-dnnl.sh"
  expect_stderr_contains "add their packages there"
}

test_a_program_the_build_runs_is_checked_too() {
  grep -v '^  libprotobuf-dev protobuf-compiler \\$' "$SRC/scripts/setup.sh" > setup-without-protobuf.sh
  expect_ne "$(cat setup-without-protobuf.sh)" "$(cat "$SRC/scripts/setup.sh")" "setup.sh lists protobuf on a line of its own"
  expect_exit 1 "$CHECK" "$BUILD" --setup setup-without-protobuf.sh
  expect_stderr_contains "/usr/bin/protoc ("
  expect_stderr_contains "package protobuf-compiler: not installed by setup-without-protobuf.sh"
}

test_the_setup_script_itself_passes() {
  expect_exit 0 "$CHECK" "$BUILD"
  expect_stdout_contains "every one installed by scripts/setup.sh"
}

test_not_a_build_directory_is_a_usage_error() {
  expect_exit 2 "$CHECK" "$E2E_TMP"
  expect_stderr_contains "not a Ninja build directory"
}

run_tests "$@"
