#!/usr/bin/env bash
# --trace FILE.json (docs/trace.md): `ipucc compile` writes the estimated execution of one train
# (or predict) run, `ipurun` the host time of every program and step it ran, as Chrome trace
# events. check_trace.py holds each file to the format (every event well formed, slices nested on
# their tracks) and to the numbers it shows (the compile's trace ends at the estimate, each IPU's
# compute sets sum to its stage's passes plus at most the update; the run's steps lie inside
# their programs' runs). ResNet-18 on four pipelined IPUs is traced in test_resnet.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STAGED=$MODELS/mlp_functional_staged.json
CHECK=$E2E_LIB_DIR/check_trace.py

test_compile_trace_of_a_pipeline_sums_to_the_estimate() {
  expect_exit 0 "$IPUCC" compile "$STAGED" --trace trace.json --json
  cp "$STDOUT" compile.json
  "$PYTHON" "$CHECK" trace.json compile.json > check.out || fail "check_trace: $(cat check.out)"
  expect_json trace.json 'd["otherData"]["program"] == "train" and d["otherData"]["steps"] == 2'
  # One process per IPU, named with its stage, before the links and the host.
  expect_json trace.json '[e["args"]["name"] for e in d["traceEvents"] if e["name"] == "process_name"][:2] == ["IPU 0 · stage 0", "IPU 1 · stage 1"]'
  expect_json trace.json 'any(e.get("cat") == "copy" and "between IPUs" in e["name"] for e in d["traceEvents"])' \
    "the stages' activations cross between IPUs"
  expect_json trace.json '{"sync", "exchange", "compute"} <= {e["name"] for e in d["traceEvents"] if e.get("cat") == "superstep phase"}'
  # A cache hit writes the same trace: it is drawn from the executable alone.
  expect_exit 0 "$IPUCC" compile "$STAGED" --trace hit.json --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  cmp trace.json hit.json || fail "the trace of a cache hit differs from the compile's"
}

test_compile_trace_of_inference_is_the_predict_program() {
  expect_exit 0 "$IPUCC" compile "$MODELS/cnn_sequential.json" --mode infer --batch-size 4 \
    --steps-per-execution 3 --trace trace.json --json
  cp "$STDOUT" compile.json
  "$PYTHON" "$CHECK" trace.json compile.json > check.out || fail "check_trace: $(cat check.out)"
  expect_json trace.json 'd["otherData"]["program"] == "predict" and d["otherData"]["steps"] == 3'
  expect_json trace.json '{"stream in: features", "stream out: predictions"} <= {e["name"] for e in d["traceEvents"]}'
}

test_trace_paths_are_checked_before_any_work() {
  expect_error 2 "--trace trace.txt" "must end in .json" -- "$IPUCC" compile "$STAGED" --trace trace.txt
  expect_no_file trace.txt
  echo '{"mine": true}' > mine.json
  expect_error 6 "mine.json" -- "$IPUCC" compile "$STAGED" --trace mine.json
  expect_eq "$(cat mine.json)" '{"mine": true}' "the user's file"
  expect_exit 0 "$IPUCC" compile "$STAGED" -o staged.ipuexe
  expect_error 2 "must end in .json" -- "$IPURUN" train staged.ipuexe --data synthetic:64 --trace t.csv
  expect_error 6 "mine.json" -- "$IPURUN" train staged.ipuexe --data synthetic:64 --trace mine.json
  expect_eq "$(cat mine.json)" '{"mine": true}' "the user's file"
  # The tools' own trace is theirs to replace.
  expect_exit 0 "$IPUCC" compile "$STAGED" --trace ours.json
  expect_exit 0 "$IPUCC" compile "$STAGED" --trace ours.json
}

test_run_trace_shows_host_time_per_compute_set() {
  expect_exit 0 "$IPUCC" compile "$STAGED" -o staged.ipuexe --json
  cp "$STDOUT" compile.json
  expect_exit 0 "$IPURUN" train staged.ipuexe --data synthetic:256 --progress none --trace train.json
  "$PYTHON" "$CHECK" train.json > check.out || fail "check_trace: $(cat check.out)"
  # 256 samples are 4 executions of 2 micro-batches of 32: the weights move to the device once
  # (and back at the end of fit), and train runs 4 times.
  expect_json train.json 'd["otherData"]["programs"]["train"]["runs"] == 4'
  expect_json train.json 'd["otherData"]["programs"]["weights_from_host"]["runs"] >= 1'
  "$PYTHON" - train.json <<'PY' || fail "the compute sets of the summary are not the trace's"
import json, sys
d = json.load(open(sys.argv[1]))
drawn = {e["name"] for e in d["traceEvents"] if e.get("cat") == "compute set"}
summary = d["otherData"]["compute_sets_by_host_time"]
assert summary and all(c["name"] in drawn and c["runs"] > 0 and c["host_seconds"] > 0 for c in summary), summary
assert [c["host_seconds"] for c in summary] == sorted((c["host_seconds"] for c in summary), reverse=True)
PY
  expect_exit 0 "$IPURUN" predict staged.ipuexe --data synthetic:64 --trace predict.json --output p.npy
  "$PYTHON" "$CHECK" predict.json > check.out || fail "check_trace: $(cat check.out)"
  expect_json predict.json '"predict" in d["otherData"]["programs"] and "train" not in d["otherData"]["programs"]'
}

run_tests "$@"
