#!/usr/bin/env bash
# scripts/lint.sh tidies every C++ source of the build's compile database: the files it would hand
# to clang-tidy, alone or as part of a unity build's unit, are exactly the tracked .cpp files under
# the linted folders that the database compiles. (A membership test through `printf | grep -q` under pipefail once skipped some of them
# silently, compile.cpp among them, whenever grep exited before printf had written everything.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

test_lint_tidies_every_file_of_the_compile_database() {
  git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout"
  local build
  build=$(dirname "$(dirname "$IPUCC")")
  [ -f "$build/compile_commands.json" ] || skip "no compile database in $build"
  expect_exit 0 bash "$SRC/scripts/lint.sh" --list-tidied "$build"
  sort "$STDOUT" >tidied.txt
  git -C "$SRC" ls-files --cached --others --exclude-standard -- runtime compiler cache compile_cache cli tests \
    | grep -E '\.cpp$' | sed "s|^|$SRC/|" | sort -u >sources.txt
  # A unity build's database (scripts/test.sh builds the sanitizer tree so) names its units; what
  # they compile are the files they include.
  "$PYTHON" -c '
import json, sys
for entry in json.load(open(sys.argv[1])):
    if "/Unity/unity_" in entry["file"]:
        for line in open(entry["file"]):
            if line.startswith("#include \""):
                print(line.split("\"")[1])
    else:
        print(entry["file"])' "$build/compile_commands.json" | sort -u >database.txt
  comm -12 sources.txt database.txt >expected.txt
  [ -s expected.txt ] || fail "no tracked source is in $build/compile_commands.json"
  if ! cmp -s expected.txt tidied.txt; then
    diff expected.txt tidied.txt | head -n 20
    fail "lint.sh --list-tidied differs from the tracked sources in the compile database"
  fi
  expect_stdout_contains "$SRC/compiler/driver/compile.cpp"
}

run_tests "$@"
