#!/usr/bin/env bash
# ipurun MODEL [compile options]: a model in place of an executable is looked up in the cache
# with the same key as `ipucc compile`, compiled only on a miss, and the run says which happened.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64 --batch-size 8)

test_predict_misses_then_hits_with_the_key_of_ipucc_compile() {
  expect_exit 0 "$IPURUN" predict "$MLP" "${SMALL[@]}" --data synthetic:16 --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["executable"].endswith("mlp_functional.json") and d["samples"] == 16'
  expect_stderr_contains "ipurun: cache miss ${key:0:16}, compiled in "
  expect_exit 0 "$IPURUN" predict "$MLP" "${SMALL[@]}" --data synthetic:16 --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key'"
  expect_stderr_contains "ipurun: cache hit ${key:0:16}"
  # predict defaults to --mode infer; ipucc compile of the same model and options finds the entry.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --mode infer --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key' and d['mode'] == 'infer'"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["misses"] == 1 and d["hits"] == 2 and d["entries"] == 1'
}

test_train_and_evaluate_default_to_the_train_executable() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPURUN" train "$MLP" "${SMALL[@]}" --data synthetic:64 --progress none --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key' and d['batch_size'] == 8"
  expect_exit 0 "$IPURUN" evaluate "$MLP" "${SMALL[@]}" --data synthetic:64 --progress none --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key'"
  # Options change the key: a different batch size is a miss.
  expect_exit 0 "$IPURUN" evaluate "$MLP" --tiles-per-ipu 64 --batch-size 4 --data synthetic:64 --progress none --json
  expect_json "$STDOUT" "d['cache'] == 'miss' and d['key'] != '$key'"
}

test_executables_and_keys_report_no_cache_lookup() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --mode infer -o mlp.ipuexe --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data synthetic:8 --json
  expect_json "$STDOUT" 'd["cache"] is None and d["key"] is None'
  expect_stderr_not_contains "cache"
  expect_exit 0 "$IPURUN" predict "${key:0:12}" --data synthetic:8 --json
  expect_json "$STDOUT" "d['cache'] is None and d['key'] == '$key'"
}

test_compile_options_need_a_model() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --mode infer -o mlp.ipuexe
  expect_error 2 "--batch-size applies only when EXECUTABLE is a model (.onnx or .json)" -- \
    "$IPURUN" predict mlp.ipuexe --batch-size 4 --data synthetic:8
  expect_error 2 "--cache-max-size: invalid size '12Q'" -- \
    "$IPURUN" predict "$MLP" "${SMALL[@]}" --cache-max-size 12Q --data synthetic:8
  expect_exit 2 "$IPURUN" predict "$MLP" --mode fast
}

test_model_errors_keep_their_exit_codes() {
  expect_error 6 "missing.json" -- "$IPURUN" predict missing.json --data synthetic:8
  echo '{"layers": [' > broken.json
  expect_error 3 "broken.json" -- "$IPURUN" predict broken.json --data synthetic:8
  # --mode overrides the command's default; an inference executable cannot train.
  expect_exit 7 "$IPURUN" train "$MLP" "${SMALL[@]}" --mode infer --data synthetic:64 --progress none
  expect_stderr_contains "mlp_functional.json: this executable has no 'train' program (compiled with --mode infer)"
}

test_no_cache_compiles_without_storing() {
  expect_exit 0 "$IPURUN" predict "$MLP" "${SMALL[@]}" --no-cache --data synthetic:8 --json
  expect_json "$STDOUT" 'd["cache"] == "disabled"'
  expect_stderr_contains "ipurun: cache disabled "
  expect_no_file "$IPUCC_CACHE_DIR/entries"
}

test_concurrent_runs_of_one_model_compile_once() {
  local i pids=()
  for i in 1 2 3 4; do
    "$IPURUN" predict "$MLP" "${SMALL[@]}" --data synthetic:8 --json > "r$i.json" 2> "r$i.err" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || fail "concurrent run $((i + 1)) failed: $(cat "r$((i + 1)).err")"; done
  expect_eq "$(cat r*.json | grep -c '"cache": "miss"')" 1 "compiles among four concurrent runs"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["misses"] == 1 and d["hits"] == 3 and d["entries"] == 1'
}

run_tests "$@"
