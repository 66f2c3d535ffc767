#!/usr/bin/env bash
# Lints the C++ sources (docs/development.md):
#   scripts/lint.sh [BUILD_DIR]   clang-format check, then clang-tidy with
#                                 BUILD_DIR's compile database (default build/, a full build made by
#                                 scripts/build.sh; CMakeLists.txt always exports the database)
#   scripts/lint.sh --fix-format  rewrites every checked file with clang-format
#   scripts/lint.sh --list-tidied [BUILD_DIR]
#                                 prints the files clang-tidy would check, one per line, and exits
# The files are the tracked and new (not ignored) C++ files under runtime/ compiler/ cache/
# compile_cache/ cli/ tests/: .cpp, .h and the X-macro .def lists for clang-format, the .cpp files
# for clang-tidy. Exits 1 on any finding, with a one-line summary last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mapfile -t sources < <(git ls-files --cached --others --exclude-standard -- \
  runtime compiler cache compile_cache cli tests | grep -E '\.(cpp|h|def)$' | sort -u)

if [ "${1:-}" = "--fix-format" ]; then
  clang-format -i "${sources[@]}"
  echo "lint: clang-formatted ${#sources[@]} files"
  exit 0
fi
list_only=0
if [ "${1:-}" = "--list-tidied" ]; then
  list_only=1
  shift
fi
build=$(cd "${1:-build}" && pwd)
if [ ! -f "$build/compile_commands.json" ]; then
  echo "lint: $build/compile_commands.json missing: configure a full build there (scripts/build.sh)" >&2
  exit 2
fi

# clang-tidy needs each file's compile command. Files the full build does not compile are skipped
# and named: the fuzzers (built only with clang, IPUCC_FUZZ=ON) and the runtime-only build's
# stand-in cli/run_model_unavailable.cpp. A unity build's database (scripts/test.sh builds the
# sanitizer tree so) holds its units instead of the files they include: a file is then tidied as
# part of its unit, which parses the headers the unit's files share once instead of once per file
# (about four times less work; the release build, which compiles every file alone, proves that
# each includes what it uses).
# (A set lookup: a `printf | grep -q` test under pipefail fails whenever grep exits before printf
# has written everything, and silently skipped files.)
declare -A in_database=() unit_of=()
while IFS=$'\t' read -r file unit; do
  if [ -n "$unit" ]; then unit_of[$file]=$unit; else in_database[$file]=1; fi
done < <(/usr/bin/python3 -c '
import json, re, sys
for entry in json.load(open(sys.argv[1])):
    file = entry["file"]
    if re.search(r"/Unity/unity_[0-9]+_cxx\.cxx$", file):
        for line in open(file):
            included = re.match(r"#include \"(.+)\"$", line.strip())
            if included:
                print(included.group(1) + "\t" + file)
    else:
        print(file + "\t")' "$build/compile_commands.json")
tidy_files=() skipped=()
declare -A units=()
for f in "${sources[@]}"; do
  [[ $f == *.cpp ]] || continue
  if [ -n "${in_database[$root/$f]:-}" ]; then
    tidy_files+=("$root/$f")
  elif [ -n "${unit_of[$root/$f]:-}" ]; then
    tidy_files+=("$root/$f")
    units[${unit_of[$root/$f]}]=1
  else
    skipped+=("$f")
  fi
done
if [ "$list_only" = 1 ]; then
  printf '%s\n' "${tidy_files[@]}"
  exit 0
fi
[ ${#skipped[@]} -eq 0 ] || echo "lint: not in $build's compile database, not tidied: ${skipped[*]}"

unformatted=0
for f in "${sources[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted=$((unformatted + 1))
done
format_failed=0
if [ "$unformatted" -gt 0 ]; then
  for f in "${sources[@]}"; do
    clang-format --dry-run --Werror "$f" 2>&1 | head -n 3 || true
  done
  format_failed=1
fi

start=$SECONDS
tidy_log=$(mktemp)
trap 'rm -f "$tidy_log"' EXIT
tidy_failed=0
# run-clang-tidy takes path regexes; each file is matched exactly.
exact_regexes() {
  local f
  for f in "$@"; do printf '^%s$\n' "$(printf '%s' "$f" | sed 's/[].[^$*+?(){}|\\]/\\&/g')"; done
}
# .clang-tidy makes every warning an error, so clang-tidy fails on any finding. The database holds
# GCC's flags, some of which (-Wno-restrict) clang does not know.
tidy=(run-clang-tidy-14 -p "$build" -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option)
direct=()
for f in "${tidy_files[@]}"; do [ -n "${in_database[$f]:-}" ] && direct+=("$f"); done
if [ ${#direct[@]} -gt 0 ]; then
  mapfile -t regexes < <(exact_regexes "${direct[@]}")
  "${tidy[@]}" "${regexes[@]}" >"$tidy_log" 2>&1 || tidy_failed=1
fi
# A unit lives in the build tree, where clang-tidy would not find .clang-tidy: it is given the
# config its files would find, on one line so that run-clang-tidy's echo of each command stays
# one line. The units of tests/ (the unit tests and the fuzzers) take tests/.clang-tidy's three
# relaxations on top of the root's checks; the libraries' units take the root's.
# Its files count as headers of the unit, so the header filter takes .cpp files too, and the line
# filter drops what is said about the unit itself (that it includes .cpp files).
tidy_units() {  # CONFIG_FILE... -- UNIT...: the root config, then any that inherit from it
  local configs=() config
  while [ "$1" != -- ]; do configs+=("$1"); shift; done
  shift
  [ $# -gt 0 ] || return 0
  mapfile -t regexes < <(exact_regexes "$@")
  config=$(/usr/bin/python3 -c '
import json, sys, yaml
merged = {}
for path in sys.argv[1:]:
    config = yaml.safe_load(open(path))
    checks = merged.get("Checks", "")
    merged.update(config)
    if checks and config.get("InheritParentConfig"):
        merged["Checks"] = checks.strip().rstrip(",") + "," + config["Checks"].strip()
merged.pop("InheritParentConfig", None)
print(json.dumps(merged))' "${configs[@]}")
  "${tidy[@]}" -config="$config" \
    -header-filter='/(runtime|compiler|cache|compile_cache|cli|tests)/.*\.(h|cpp)$' \
    -line-filter='[{"name":".h"},{"name":".cpp"}]' "${regexes[@]}" >>"$tidy_log" 2>&1 || tidy_failed=1
}
library_units=() test_units=()
for unit in "${!units[@]}"; do
  if [[ $unit == "$build"/tests/* ]]; then test_units+=("$unit"); else library_units+=("$unit"); fi
done
tidy_units "$root/.clang-tidy" -- "${library_units[@]}"
tidy_units "$root/.clang-tidy" "$root/tests/.clang-tidy" -- "${test_units[@]}"
# Keep the findings and the source lines under them; drop colours, command lines and counts.
sed -i 's/\x1b\[[0-9;]*m//g' "$tidy_log"
grep -vE '^(/usr/bin/clang-tidy|clang-tidy|[0-9]+ (warnings?|errors?)( and [0-9]+ errors?)? generated\.|Suppressed [0-9]+ warnings|Use -header-filter|Running clang-tidy)' \
  "$tidy_log" || true
findings=$(grep -cE ': (warning|error): ' "$tidy_log" || true)

echo "lint: $unformatted of ${#sources[@]} files not clang-formatted; clang-tidy: $findings findings in ${#tidy_files[@]} files ($((SECONDS - start))s)"
[ "$format_failed" = 0 ] && [ "$tidy_failed" = 0 ]
