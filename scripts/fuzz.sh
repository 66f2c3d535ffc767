#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for FUZZ_SECONDS (default 120)
# from its seed corpus. Exits non-zero if a fuzzer finds a crash, a leak or undefined behaviour;
# the reproducer is left in the printed directory.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-${FUZZ_SECONDS:-120}}
build=${IPUCC_FUZZ_BUILD_DIR:-$root/build-fuzz}

"$root/scripts/apt-install.sh" clang libclang-rt-14-dev

# Line tables only (-g1): a crash report still names file and line, for a faster build.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DIPUCC_FUZZ=ON -DIPUCC_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target fuzz_executable fuzz_graph_spec fuzz_onnx_import fuzz_model_fingerprint

work=$(mktemp -d)
status=0
# fuzz_executable also starts from the payloads of executables of every layout, compiled by the
# release build's ipucc (scripts/test.sh builds it first).
release=${IPUCC_BUILD_DIR:-$root/build}
executable_seeds=$root/tests/fuzz/corpus/executable
if cmake --build "$release" --target ipucc hostile_executable >/dev/null 2>&1; then
  "$root/tests/fuzz/make_executable_corpus.sh" "$release/cli/ipucc" "$release/tests/tools/hostile_executable" \
    "$work/executable_seeds" "${IPUCC_CONFORMANCE_DIR:-$root/../shared/conformance/onnx-node-tests}" 2>/dev/null
  executable_seeds+=",$work/executable_seeds"
else
  echo "fuzz: no release build in $release; fuzz_executable starts from tests/fuzz/corpus/executable only" >&2
fi
run() {  # name corpus[,corpus...] [extra libFuzzer flags]
  local name=$1 corpora
  IFS=, read -ra corpora <<< "$2"
  shift 2
  mkdir -p "$work/$name"
  echo "== $name for ${seconds}s"
  if ! (cd "$work" && "$build/tests/fuzz/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
          "$@" "$work/$name" "${corpora[@]}" 2>"$work/$name.log"); then
    tail -40 "$work/$name.log"
    echo "fuzz: $name failed; reproducer and log in $work" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added" "$work/$name.log" || true
  fi
}
run fuzz_executable "$executable_seeds"
run fuzz_graph_spec "$root/tests/fuzz/corpus/graph_spec" -dict="$root/tests/fuzz/graph_spec.dict"
run fuzz_onnx_import "$root/tests/fuzz/corpus/onnx"
run fuzz_model_fingerprint "$root/tests/fuzz/corpus/onnx,$root/tests/fuzz/corpus/graph_spec"
[ $status -eq 0 ] && rm -rf "$work"
exit $status
