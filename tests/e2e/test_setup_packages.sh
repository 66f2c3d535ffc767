#!/usr/bin/env bash
# scripts/check-setup.py, the guard that keeps a fresh Debian 12 able to build: it names each file
# the build reads whose package scripts/setup.sh would not install. (The ctest setup_packages runs
# it on every build directory; these tests show it fails when it should.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD=$(cd "$(dirname "$IPUCC")/.." && pwd)
CHECK=$SRC/scripts/check-setup.py

# expect_named_without LINE FILE PACKAGE: with LINE removed from setup.sh, the check fails naming
# FILE (and why the build reads it) and PACKAGE.
expect_named_without() {
  local line=$1 file=$2 package=$3
  grep -vxF "$line" "$SRC/scripts/setup.sh" > setup-without.sh
  expect_ne "$(cat setup-without.sh)" "$(cat "$SRC/scripts/setup.sh")" "setup.sh has the line '$line'"
  expect_exit 1 "$CHECK" "$BUILD" --setup setup-without.sh
  expect_stderr_contains "$file ("
  expect_stderr_contains "package $package: not installed by setup-without.sh"
  expect_stderr_contains "add their packages there"
}

test_a_package_setup_does_not_install_is_named_with_its_files() {
  expect_named_without '  libdnnl-dev \' /usr/include/oneapi/dnnl/dnnl.hpp libdnnl-dev
  expect_stderr_contains "/usr/include/oneapi/dnnl/dnnl.hpp (compiler dependency file)"
}

test_a_program_the_build_runs_is_checked_too() {
  expect_named_without '  libprotobuf-dev protobuf-compiler \' /usr/bin/protoc protobuf-compiler
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
