#!/usr/bin/env bash
# The automatic pipeline split (ipucc compile --pipeline-stages N, docs/pipelining.md): the cuts
# it chooses train exactly as the same split given by hand, have a slowest stage no slower than
# cutting into equal layer counts, are keyed in the cache, and are explained on stderr and in --json; a
# split the user gives gets its imbalance reported the same way; a model that fits no split is
# refused naming the stage and its bytes.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_sequential.json
CNN=$MODELS/cnn_sequential.json
COMPARE=$SRC/scripts/reference/compare_to_reference.py
SMALL=(--tiles-per-ipu 64)
SHARED=${IPUCC_SHARED_DIR:-$SRC/../shared}
PEER_MODELS=$SHARED/peers/models

# layers MODEL: the spec's layer names, one per line.
layers() {
  "$PYTHON" -c 'import json, sys; [print(l["name"]) for l in json.load(open(sys.argv[1]))["layers"]]' "$1"
}

# assignment_of JSON MODEL: the --stage-assignment equal to the split a compile's --json reports.
assignment_of() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
firsts = [ipu["first_unit"] for ipu in json.load(open(sys.argv[1]))["pipeline"]["ipus"]]
stage, out = -1, []
for layer in json.load(open(sys.argv[2]))["layers"]:
    if stage + 1 < len(firsts) and layer["name"] == firsts[stage + 1]:
        stage += 1
    out.append(str(stage))
print(",".join(out))
PY
}

# equal_counts UNITS STAGES: the naive split, each stage as many layers as the others (± 1).
equal_counts() {
  "$PYTHON" -c 'import sys; u, n = map(int, sys.argv[1:]); print(",".join(str(i * n // u) for i in range(u)))' "$1" "$2"
}

test_automatic_split_trains_as_the_same_split_given_by_hand() {
  local n assignment
  for n in 2 4; do
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 8 --pipeline-stages $n --no-cache --json \
      -o auto$n.ipuexe
    cp "$STDOUT" auto$n.json
    expect_json auto$n.json "d['pipeline']['stages'] == $n and d['pipeline']['split'] == 'automatic'"
    expect_json auto$n.json "d['pipeline']['ipus'][0]['first_unit'] == 'flatten'"
    expect_stderr_contains "$n pipeline stages chosen to balance estimated cycles within each IPU's tile memory, starting at"
    assignment=$(assignment_of auto$n.json "$MLP")
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 8 --stage-assignment "$assignment" --no-cache \
      --json -o given$n.ipuexe
    expect_json "$STDOUT" "d['pipeline']['split'] == 'given' and d['pipeline']['stages'] == $n"
    expect_eq "$(json_get "$STDOUT" 'd["pipeline"]["stage_imbalance"]')" \
      "$(json_get auto$n.json 'd["pipeline"]["stage_imbalance"]')" "imbalance of the same split"
    for run in auto$n given$n; do
      expect_exit 0 "$IPURUN" train $run.ipuexe --data synthetic:256 --steps-per-epoch 8 --progress none \
        --save-weights $run --step-log $run.steps.json
    done
    expect_exit 0 "$PYTHON" "$COMPARE" --reference given$n --checkpoint auto$n --weight-tol 0
    expect_eq "$(json_get auto$n.steps.json 'd["losses"]')" "$(json_get given$n.steps.json 'd["losses"]')" "losses"
  done
}

# The split minimises the slowest stage (compute plus the copies it sends), which sets the
# pipeline's pace, so it is never slower there than equal layer counts, and on these models it
# is faster in at least two of the four cases.
test_automatic_split_is_no_slower_than_equal_layer_counts() {
  local model n units better=0
  for model in "$MLP" "$CNN"; do
    units=$(layers "$model" | wc -l)
    for n in 2 4; do
      expect_exit 0 "$IPUCC" compile "$model" "${SMALL[@]}" --pipeline-stages $n --json
      cp "$STDOUT" auto.json
      expect_exit 0 "$IPUCC" compile "$model" "${SMALL[@]}" --stage-assignment "$(equal_counts "$units" $n)" --json
      cp "$STDOUT" naive.json
      "$PYTHON" - auto.json naive.json "$(basename "$model") in $n stages" <<'PY' || fail "see above"
import json, sys
auto, naive = (json.load(open(f))["pipeline"] for f in sys.argv[1:3])
slowest = lambda p: max(i["stage_cycles"] for i in p["ipus"])
# Its imbalance (slowest over mean) may exceed equal counts' when it also moves fewer bytes,
# which lowers the mean: it is reported, not compared.
a, b = slowest(auto), slowest(naive)
ok = a <= b + 1e-6
print(f'{sys.argv[3]}: slowest stage {a:.0f} vs {b:.0f} of equal layer counts, imbalance '
      f'{auto["stage_imbalance"]:.3f} vs {naive["stage_imbalance"]:.3f}', file=sys.stderr)
sys.exit(0 if ok else 1)
PY
      if "$PYTHON" -c 'import json, sys; a, b = (max(i["stage_cycles"] for i in json.load(open(f))["pipeline"]["ipus"]) for f in sys.argv[1:]); sys.exit(0 if a < 0.99 * b else 1)' auto.json naive.json; then
        better=$((better + 1))
      fi
    done
  done
  # Equal layer counts are far from the best on these models: the split must find better ones.
  [[ $better -ge 2 ]] || fail "the automatic split beat equal layer counts in only $better of 4 cases"
}

test_a_given_split_reports_its_imbalance() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-assignment 0,1,1,1,1,1 --json
  expect_stderr_contains "stage imbalance: slowest stage "
  expect_json "$STDOUT" 'd["pipeline"]["stage_imbalance"] > 1.5' "flatten alone on stage 0"
  expect_stderr_not_contains "chosen to balance"
  expect_json "$STDOUT" 'd["pipeline"]["split"] == "given" and d["pipeline"]["ipus"][1]["first_unit"] is None'
  # A stage's cycles are its passes and the copies it sends and receives over its cuts.
  expect_json "$STDOUT" 'all(abs(i["stage_cycles"] - i["busy_cycles"] - i["crossing_cycles"]) < 1e-6 and
                             i["crossing_cycles"] > 0 and i["peak_tile_bytes"] > 0 for i in d["pipeline"]["ipus"])'
  # The spec's own stages too.
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_sequential_staged.json" "${SMALL[@]}" --json
  expect_stderr_contains "stage imbalance: slowest stage"
  # No note without stages.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}"
  expect_stderr_not_contains "stage imbalance"
}

test_the_option_is_keyed_and_the_note_survives_a_hit() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 2 --json
  local key2
  key2=$(json_get "$STDOUT" 'd["key"]')
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 2 --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key2'"
  expect_stderr_contains "2 pipeline stages chosen to balance estimated cycles"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 4 --json
  expect_json "$STDOUT" "d['cache'] == 'miss' and d['key'] != '$key2'"
  # The split it chose, given by hand, is another program source and another entry.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-assignment 0,0,1,1,1,1 --json
  expect_json "$STDOUT" "d['cache'] == 'miss' and d['key'] != '$key2'"
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --pipeline-stages 2 --json
  expect_json "$STDOUT" 'd["hit"] and d["manifest"]["option.pipeline_stages"] == "2"'
}

test_the_spec_stages_give_way_and_training_defaults_follow() {
  # A staged spec (2 stages) split automatically into 3: K defaults to 3, the new stage count.
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_sequential_staged.json" "${SMALL[@]}" --pipeline-stages 3 --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 3 and d["pipeline"]["gradient_accumulation"] == 3'
  expect_stderr_contains "3 pipeline stages: --gradient-accumulation defaults to 3"
  # Inference splits by forward cycles alone.
  expect_exit 0 "$IPUCC" compile "$CNN" "${SMALL[@]}" --mode infer --pipeline-stages 2 --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["pipeline"]["split"] == "automatic"'
  expect_stderr_contains "cycles per micro-batch; fullest tiles"
}

# --stage-starts names where stages 1, 2, ... begin, as the automatic split reports its choice and
# PopTorch's BeginBlock marks it: the same program, and cache entry, as the --stage-assignment it
# spells; names the model lacks, out of order, or the first layer are refused.
test_stage_starts_name_where_stages_begin() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts dense3 --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["pipeline"]["stages"] == 2 and d["pipeline"]["split"] == "given"'
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-assignment 0,0,0,1,1,1 --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key'" "the assignment --stage-starts spells"
  # The automatic split's first layers, given back, compile its split.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 4 --json
  local starts
  starts=$(json_get "$STDOUT" '",".join(i["first_unit"] for i in d["pipeline"]["ipus"][1:])')
  cp "$STDOUT" auto4.json
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts "$starts" --json
  expect_eq "$(json_get "$STDOUT" '[round(i["stage_cycles"]) for i in d["pipeline"]["ipus"]]')" \
    "$(json_get auto4.json '[round(i["stage_cycles"]) for i in d["pipeline"]["ipus"]]')" "stage cycles of the same split"
  expect_error 2 "mlp_sequential.json: --stage-starts: the model has no layer 'dense9'" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts dense2,dense9
  expect_error 2 "mlp_sequential.json: --stage-starts: 'dense2' does not come after 'dense4' in the model's order" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts dense4,dense2
  expect_error 2 "mlp_sequential.json: --stage-starts: 'flatten' is the model's first layer" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts flatten
  expect_error 2 "--stage-starts and --stage-assignment both give the stages: give one" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts dense3 --stage-assignment 0,0,0,1,1,1
  expect_error 2 "--pipeline-stages chooses the stages: give it or --stage-starts, not both" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-starts dense3 --pipeline-stages 2
}

test_split_errors() {
  expect_error 2 "--pipeline-stages chooses the stages: give it or --stage-assignment, not both" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 2 --stage-assignment 0,0,0,1,1,1
  expect_error 2 "mlp_sequential.json: --pipeline-stages 7 needs at least as many layers, the model has 6" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 7
  expect_exit 2 "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 0
  expect_error 2 "need 8 IPUs, the target has 4" -- "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 4 \
    --replicas 2 --num-ipus 4
  # dense1's kernel alone, 784 x 256 floats over 64 tiles, fills 12.5 kB of each.
  expect_error 5 "mlp_sequential.json: no split into 2 pipeline stages fits one IPU each: in the best," \
    "bytes on its fullest tile, more than 8,192" -- \
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --pipeline-stages 2 --bytes-per-tile 8192
}

test_onnx_model_splits_and_matches_its_reference() {
  [[ -f $PEER_MODELS/mlp.onnx ]] || skip "no shared peer models at $PEER_MODELS (set IPUCC_SHARED_DIR)"
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --mode infer --batch-size 4 --pipeline-stages 2 --json \
    -o mlp.ipuexe
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["pipeline"]["split"] == "automatic"'
  expect_stderr_contains "2 pipeline stages chosen to balance"
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --input "$PEER_MODELS/mlp.input.npy" --output out.npy
  expect_exit 0 "$PYTHON" "$E2E_DATA" compare out.npy "$PEER_MODELS/mlp.output.npy"
  expect_json "$STDOUT" 'd["shape_equal"] and d["rel_to_max"] <= 1e-5' "pipelined mlp.onnx output"
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --batch-size 8 --pipeline-stages 2 \
    --loss sparse_categorical_crossentropy --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["pipeline"]["gradient_accumulation"] == 2'
  expect_error 2 "mlp.onnx: --stage-starts: the model has no node 'dense9'" -- \
    "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --mode infer --stage-starts dense9
}

run_tests "$@"
