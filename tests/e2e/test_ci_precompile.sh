#!/usr/bin/env bash
# scripts/ci-precompile.sh: a precompile job fills the cache with every model x configuration of
# a list; a later check job finds every executable without compiling, proven by the counters.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCRIPT=$SRC/scripts/ci-precompile.sh

# Every spec in models/ at two configurations.
write_list() {
  local model
  {
    echo "# model, then ipucc compile options"
    for model in "$MODELS"/*.json; do
      # Pipelined specs need two micro-batches per update to fill two stages.
      echo "$model --batch-size 8 --gradient-accumulation 2 --steps-per-execution 2"
      echo "$model --batch-size 16 --mode infer   # inference"
    done
  } > models.list
}

test_precompile_then_check_finds_everything() {
  write_list
  local n
  n=$(grep -c -- '--batch-size' models.list)
  expect_exit 0 bash "$SCRIPT" --ipucc "$IPUCC" precompile models.list --tiles-per-ipu 64
  expect_stdout_contains "precompiled $n configuration(s)"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" "d['misses'] == $n and d['hits'] == 0 and d['entries'] == $n"
  expect_exit 0 bash "$SCRIPT" --ipucc "$IPUCC" check models.list --tiles-per-ipu 64
  expect_stdout_contains "all $n configuration(s) found without compiling"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" "d['misses'] == $n and d['hits'] == $n"
  # ipurun of a listed configuration runs without compiling.
  expect_exit 0 "$IPURUN" predict "$MODELS/mlp_functional.json" --batch-size 16 --mode infer --tiles-per-ipu 64 \
    --data synthetic:32 --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
}

test_check_fails_on_what_was_not_precompiled() {
  write_list
  expect_exit 0 bash "$SCRIPT" --ipucc "$IPUCC" --cache-dir pre all models.list --tiles-per-ipu 64
  expect_stdout_contains "found without compiling"
  # Other options than were precompiled: the check names the configurations and fails.
  expect_exit 1 bash "$SCRIPT" --ipucc "$IPUCC" --cache-dir pre check models.list --tiles-per-ipu 32
  expect_stderr_contains "not precompiled (miss): $MODELS/mlp_functional.json --batch-size 16 --mode infer --tiles-per-ipu 32"
  expect_exit 2 bash "$SCRIPT" --ipucc "$IPUCC" run models.list
  expect_exit 2 bash "$SCRIPT" --ipucc "$IPUCC" check missing.list
}

run_tests "$@"
