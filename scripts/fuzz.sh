#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS (default
# FUZZ_SECONDS, else 120) from its seed corpus, FUZZ_JOBS of them at once (default nproc: each
# fuzzer is one process on one core). Exits non-zero if a fuzzer finds a crash, a leak or undefined
# behaviour; the reproducer is left in the printed directory.
#   scripts/fuzz.sh [SECONDS]
#   scripts/fuzz.sh --long [SECONDS]   the search for new bugs, outside CI: SECONDS per fuzzer
#                                      (default 4 hours), each growing a corpus of its own that
#                                      the next --long run starts from (IPUCC_FUZZ_CORPUS, default
#                                      build-fuzz-corpus/NAME; ignored by git); FUZZ_RUNS=N stops
#                                      each one after N executions instead
# The build directory is IPUCC_FUZZ_BUILD_DIR (default build-fuzz). One that is already configured
# with IPUCC_FUZZ=ON is built as it is: scripts/test.sh hands over its clang sanitizer build, whose
# libraries carry the fuzzers' instrumentation too, so CI compiles them once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
long=0
if [ "${1:-}" = "--long" ]; then
  long=1
  shift
fi
if [ "$long" = 1 ]; then seconds=${1:-14400}; else seconds=${1:-${FUZZ_SECONDS:-120}}; fi
runs=${FUZZ_RUNS:--1}  # libFuzzer's -runs: -1 is no limit
parallel=${FUZZ_JOBS:-$(nproc)}
build=${IPUCC_FUZZ_BUILD_DIR:-$root/build-fuzz}
kept_corpora=${IPUCC_FUZZ_CORPUS:-$root/build-fuzz-corpus}

"$root/scripts/apt-install.sh" clang libclang-rt-14-dev

if [ -f "$build/CMakeCache.txt" ]; then
  grep -q '^IPUCC_FUZZ:BOOL=ON$' "$build/CMakeCache.txt" ||
    { echo "fuzz: $build is configured without IPUCC_FUZZ=ON; give another IPUCC_FUZZ_BUILD_DIR" >&2; exit 2; }
else
  # Line tables only (-g1): a crash report still names file and line, for a faster build.
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    -DIPUCC_FUZZ=ON -DIPUCC_BUILD_TESTS=OFF >/dev/null
fi
fuzzers=(fuzz_executable fuzz_graph_spec fuzz_onnx_import fuzz_model_fingerprint fuzz_data_files fuzz_remote_cache)
cmake --build "$build" --target "${fuzzers[@]}"

work=$(mktemp -d)
# fuzz_executable also starts from the payloads of executables of every layout, compiled by the
# release build's ipucc (scripts/test.sh builds it first). Not under --long: each is about 1 MB and
# is run, not only parsed, so with them the fuzzer makes about 100 executions a second instead of
# about 5,000; the long search starts from the small committed seeds and the corpus it grows.
release=${IPUCC_BUILD_DIR:-$root/build}
executable_seeds=$root/tests/fuzz/corpus/executable
if [ "$long" = 1 ]; then
  :
elif cmake --build "$release" --target ipucc hostile_executable >/dev/null 2>&1; then
  "$root/tests/fuzz/make_executable_corpus.sh" "$release/cli/ipucc" "$release/tests/tools/hostile_executable" \
    "$work/executable_seeds" "${IPUCC_CONFORMANCE_DIR:-$root/../shared/conformance/onnx-node-tests}" 2>/dev/null
  executable_seeds+=",$work/executable_seeds"
else
  echo "fuzz: no release build in $release; fuzz_executable starts from tests/fuzz/corpus/executable only" >&2
fi

run() {  # name corpus[,corpus...] [extra libFuzzer flags]: runs in the background, logs to $work/name.log
  local name=$1 corpora grown
  grown=$work/$name
  IFS=, read -ra corpora <<< "$2"
  shift 2
  # libFuzzer writes what it finds into the first corpus directory: a throwaway one, or under
  # --long the fuzzer's kept corpus.
  if [ "$long" = 1 ]; then grown=$kept_corpora/$name; fi
  mkdir -p "$grown"
  (cd "$work" && exec "$build/tests/fuzz/$name" -max_total_time="$seconds" -runs="$runs" -rss_limit_mb=2048 -print_final_stats=1 \
     "$@" "$grown" "${corpora[@]}" 2>"$work/$name.log") &
  pids[$name]=$!
  echo "== $name for ${seconds}s$( ((runs < 0)) || echo " or $runs executions")"
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
}
declare -A pids=()
run fuzz_executable "$executable_seeds"
run fuzz_graph_spec "$root/tests/fuzz/corpus/graph_spec" -dict="$root/tests/fuzz/graph_spec.dict"
run fuzz_onnx_import "$root/tests/fuzz/corpus/onnx"
run fuzz_model_fingerprint "$root/tests/fuzz/corpus/onnx,$root/tests/fuzz/corpus/graph_spec"
run fuzz_data_files "$root/tests/fuzz/corpus/data_files"
run fuzz_remote_cache "$root/tests/fuzz/corpus/remote_cache"

status=0
for name in "${fuzzers[@]}"; do
  echo "== $name"
  if ! wait "${pids[$name]}"; then
    tail -40 "$work/$name.log"
    echo "fuzz: $name failed; reproducer and log in $work" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added" "$work/$name.log" || true
  fi
done
[ $status -eq 0 ] && rm -rf "$work"
exit $status
