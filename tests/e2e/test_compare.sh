#!/usr/bin/env bash
# `ipucc compare A B` (docs/report.md, "Comparing two compiles"): each program's cycles per step,
# the memory estimates, and the ops whose cycles, exchange or tiles changed, for two executables
# named by file or cache key.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CNN=$MODELS/cnn_sequential.json

test_fp16_against_fp32_names_the_ops_that_changed() {
  expect_exit 0 "$IPUCC" compile "$CNN" --no-cache -o fp32.ipuexe --json
  cp "$STDOUT" fp32.json
  expect_exit 0 "$IPUCC" compile "$CNN" --no-cache --precision fp16 -o fp16.ipuexe --json
  cp "$STDOUT" fp16.json
  expect_exit 0 "$IPUCC" compare fp32.ipuexe fp16.ipuexe --json
  cp "$STDOUT" compare.json
  "$PYTHON" - fp32.json fp16.json compare.json <<'PY' || fail "the comparison does not match the compiles"
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:])
assert c["command"] == "compare", c
for program, cycles in a["estimates"]["cycles_per_step"].items():
    assert c["programs"][program] == {"a": cycles, "b": b["estimates"]["cycles_per_step"][program]}, program
assert c["a"]["peak_tile_bytes"] == a["estimates"]["peak_tile_bytes"]
assert c["b"]["peak_tile_bytes"] == b["estimates"]["peak_tile_bytes"]
ops = c["ops_changed"]
assert ops, "fp16 changed no op"
for op in ops:
    x, y = op["a"], op["b"]
    assert x is None or y is None or abs(x["cycles"] - y["cycles"]) >= 0.5 or x["tiles"] != y["tiles"] \
        or abs(x["exchange_bytes"] - y["exchange_bytes"]) >= 0.5, op
changes = [abs(op["cycles_change"]) for op in ops]
assert changes == sorted(changes, reverse=True), "not the largest change first"
assert any(op["op"] == "conv1/conv" for op in ops), [op["op"] for op in ops]
PY
  expect_exit 0 "$IPUCC" compare fp32.ipuexe fp16.ipuexe
  expect_stdout_contains "op(s) changed"
  expect_stdout_contains "train cycles/step"
  grep -qE '^conv1/conv +[0-9,]+ +[0-9,]+ +-[0-9.]+%' "$STDOUT" || fail "conv1/conv's row is not in the text: $(cat "$STDOUT")"
}

test_an_executable_against_its_cache_entry_has_nothing_changed() {
  expect_exit 0 "$IPUCC" compile "$CNN" -o file.ipuexe --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" compare file.ipuexe "${key:0:12}" --json
  expect_json "$STDOUT" 'd["ops_changed"] == [] and d["ops_unchanged"] > 0'
  expect_exit 0 "$IPUCC" compare file.ipuexe "$key"
  expect_stdout_contains "0 op(s) changed"
}

test_bad_operands_say_which_and_why() {
  expect_exit 0 "$IPUCC" compile "$CNN" --no-cache -o good.ipuexe
  expect_error 2 "cnn_sequential.json: a model" "ipucc compile" -- "$IPUCC" compare "$CNN" good.ipuexe
  expect_error 6 "missing.ipuexe" -- "$IPUCC" compare good.ipuexe missing.ipuexe
  head -c 100 good.ipuexe > torn.ipuexe
  expect_error 7 "torn.ipuexe" -- "$IPUCC" compare good.ipuexe torn.ipuexe
  expect_error 2 "" -- "$IPUCC" compare good.ipuexe
}

run_tests "$@"
