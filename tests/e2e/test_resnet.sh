#!/usr/bin/env bash
# torchvision's ResNet-18 (random weights, eval mode, opset 13; scripts/make_resnet18.py) compiles
# for inference on one mk2 IPU with its default tile memory at batch 1 and 16 -- its Conv vertices
# split the output rows of 112x112 and 56x56 planes, so none receives a whole sample -- and
# predicts torch's logits within 1e-5 of the largest, also split automatically into four pipeline
# stages. Needs Debian's python3-torch and
# python3-torchvision (scripts/setup.sh installs them); skipped without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COMPARE_TENSORS=${COMPARE_TENSORS:-$SRC/build/tests/tools/compare_tensors}

# The model and 4 samples with torch's logits for them, in model/ (batch 16 pads them).
make_resnet() {
  /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null || skip "no python3-torch and python3-torchvision"
  expect_exit 0 /usr/bin/python3 "$SRC/scripts/make_resnet18.py" model --batch 4
}

# predict BATCH [FLAGS...]: compiles for BATCH, predicts the samples into out_BATCH.npy and
# checks them against torch.
predict_and_compare() {
  local batch=$1
  shift
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode infer --batch-size "$batch" -o "r$batch.ipuexe" --json "$@"
  expect_json "$STDOUT" 'd["estimates"]["peak_tile_bytes"] <= 638976' "fits an mk2 tile"
  expect_exit 0 "$IPURUN" predict "r$batch.ipuexe" --input model/resnet18.input.npy --output "out_$batch.npy"
  expect_exit 0 "$PYTHON" "$E2E_DATA" compare "out_$batch.npy" model/resnet18.output.npy
  expect_json "$STDOUT" 'd["shape_equal"] and d["rel_to_max"] <= 1e-5' "batch $batch against torch"
}

test_resnet18_fits_one_ipu_and_matches_torch_at_batch_1_and_16() {
  make_resnet
  predict_and_compare 1
  predict_and_compare 16
  # On fewer tiles each Conv vertex takes more rows and channels, and a convolution may split its
  # input channels otherwise: its sums then add in another order, within float rounding.
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode infer --batch-size 1 --tiles-per-ipu 300 -o few.ipuexe
  expect_exit 0 "$IPURUN" predict few.ipuexe --input model/resnet18.input.npy --output few.npy
  expect_exit 0 "$COMPARE_TENSORS" few.npy out_1.npy --rtol 1e-5 --atol 1e-5
}

# What was measured when training first fitted (peak tile bytes and train cycles per step are
# printed, so a change to either shows in the log): 393,588 of 638,976 bytes, 3,054,639 cycles.
test_resnet18_trains_at_micro_batch_4_on_one_ipu() {
  make_resnet
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode train --loss sparse_categorical_crossentropy \
    --optimizer sgd --learning-rate 0.01 --momentum 0.9 --batch-size 4 -o train.ipuexe --json
  expect_json "$STDOUT" 'd["estimates"]["peak_tile_bytes"] <= 638976' "training fits an mk2 tile"
  echo "resnet18 train micro-batch 4: peak tile $(json_get "$STDOUT" 'd["estimates"]["peak_tile_bytes"]') bytes," \
    "$(json_get "$STDOUT" 'd["estimates"]["cycles_per_step"]["train"]') cycles/step"
  expect_exit 0 "$PYTHON" -c 'import numpy as np; np.save("labels.npy", np.array([1, 7, 42, 999], np.int32))'
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:model/resnet18.input.npy,labels.npy --epochs 2 \
    --step-log steps.json --progress none
  expect_json steps.json 'len(d["losses"]) == 2 and all(abs(l) < 1e30 for l in d["losses"])' "two finite losses"
}

# Training at micro-batch 16 (SGD with momentum) fits four mk2 IPUs in an automatic 4-stage split
# (issue 14; compile only). The partitioner's memory bound adds up per tile what each node keeps
# (weights, optimizer state, activations for the backward pass, 4 stash slots of the grouped
# schedule) but counts only the largest of their short-lived peaks; the bound that summed each
# node's fullest tile refused every split ("stage 2 needs about 2,145,924 bytes"). Measured:
# stages from the stem, layer1.0/relu_1, layer2.0/relu_1 and layer3.1/relu, fullest tiles
# 507,908, 372,816, 275,252 and 281,008 bytes, imbalance 1.13, 5,250,369 cycles per step (before
# convolutions split their input channels: 621,576, 582,876, 550,100 and 548,980, 9,235,287).
# Its estimated execution (--trace, docs/trace.md) is well formed and adds up: the trace ends at
# the estimate and each IPU's compute sets are its stage's passes plus at most the update.
test_resnet18_trains_at_micro_batch_16_on_four_automatic_stages() {
  make_resnet
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode train --loss sparse_categorical_crossentropy \
    --optimizer sgd --momentum 0.9 --batch-size 16 --pipeline-stages 4 --num-ipus 4 -o train16.ipuexe --json \
    --trace train16.trace.json
  "$PYTHON" "$E2E_LIB_DIR/check_trace.py" train16.trace.json "$STDOUT" > check.out ||
    fail "check_trace: $(cat check.out)"
  expect_json train16.trace.json 'sum(1 for e in d["traceEvents"] if e["name"] == "process_name" and e["args"]["name"].startswith("IPU ")) == 4'
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 4 and d["pipeline"]["split"] == "automatic"'
  expect_json "$STDOUT" 'all(0 < i["peak_tile_bytes"] <= 638976 for i in d["pipeline"]["ipus"])' \
    "every stage fits an mk2 IPU"
  echo "resnet18 train micro-batch 16, 4 automatic stages: fullest tiles" \
    "$(json_get "$STDOUT" '[i["peak_tile_bytes"] for i in d["pipeline"]["ipus"]]'), imbalance" \
    "$(json_get "$STDOUT" 'round(d["pipeline"]["stage_imbalance"], 3)')"
}

# With --recompute a stage stashes only its inputs (docs/pipelining.md), and the split's memory
# bound counts only those: at micro-batch 32 no split stashing every activation fits (stage 1 of
# the best, the stem's Relu to MaxPool, needs about 781,084 bytes), while recomputing stages fit
# (fullest tiles 604,480, 489,652, 302,252 and 354,200 when AMP runs were charged below peak, at
# the second split tried: the first one's stage 0 planned 657,216 bytes against a bound of
# 526,956, the partitioner's estimate). Before the bound knew of recomputation both compiles were
# refused alike.
test_resnet18_recomputing_stages_fit_where_stashing_ones_do_not() {
  make_resnet
  local train=(compile model/resnet18.onnx --mode train --loss sparse_categorical_crossentropy --optimizer sgd
    --momentum 0.9 --batch-size 32 --pipeline-stages 4 --num-ipus 4 --gradient-accumulation 16 --json)
  expect_error 5 "no split into 4 pipeline stages fits one IPU each" -- "$IPUCC" "${train[@]}"
  expect_exit 0 "$IPUCC" "${train[@]}" --recompute
  expect_json "$STDOUT" 'd["pipeline"]["split"] == "automatic"'
  expect_json "$STDOUT" 'all(0 < i["peak_tile_bytes"] <= 638976 for i in d["pipeline"]["ipus"])' \
    "every recomputing stage fits an mk2 IPU"
}

# The partitioner's memory bound is an estimate, so the chosen split's own memory plan judges it
# (docs/pipelining.md). With tile memory a little under what the default split's fullest tile needs,
# the split the bound picks for it overflows its plan, and the next best splits without the
# overflowing stage are compiled, each refusal a note, until one fits (micro-batch 8, 12,000 bytes
# under: three refusals, then a split that fits), or until no split left fits the bound: out of
# memory (exit 5), after the refusal's note (26,000 bytes under). (The third ending, 4 splits
# tried and none fitting, which this test reached before convolutions split their input channels,
# no longer occurs for ResNet-18: from 12,000 to 24,000 bytes under, 1 to 3 refusals, then a fit.) The bound counts one receive buffer per cut,
# while a value read stages later, such as the stem's output, waits in one per stage it crosses.
# expect_split_retries BATCH MARGIN: compiles at the default tile memory, then MARGIN bytes under
# its fullest tile, leaving the second compile's JSON in $STDOUT.
expect_split_retries() {
  local train=(compile model/resnet18.onnx --mode train --loss sparse_categorical_crossentropy --optimizer sgd
    --momentum 0.9 --batch-size "$1" --pipeline-stages 4 --num-ipus 4 --json)
  expect_exit 0 "$IPUCC" "${train[@]}"
  expect_stderr_not_contains "does not fit its memory plan"
  local fullest
  fullest=$(json_get "$STDOUT" 'max(i["peak_tile_bytes"] for i in d["pipeline"]["ipus"])')
  BYTES=$((fullest - $2))
  E2E_RC=0
  "$IPUCC" "${train[@]}" --bytes-per-tile "$BYTES" > "$STDOUT" 2> "$STDERR" || E2E_RC=$?
  expect_stderr_contains "does not fit its memory plan"
  expect_stderr_contains "trying the next best split without th" # that stage, or those stages
}

test_resnet18_automatic_split_retries_when_its_memory_plan_overflows() {
  make_resnet
  expect_split_retries 8 12000
  ((E2E_RC == 0)) || fail "micro-batch 8: no split fits $BYTES bytes per tile (exit $E2E_RC)"
  expect_json "$STDOUT" "all(0 < i['peak_tile_bytes'] <= $BYTES for i in d['pipeline']['ipus'])" \
    "the split taken fits $BYTES bytes per tile"
  expect_split_retries 8 26000
  ((E2E_RC == 5)) || fail "micro-batch 8, 26,000 bytes under its fullest tile: expected exit 5, got $E2E_RC"
  expect_stderr_contains "no split into 4 pipeline stages fits one IPU each"
}

# --pipeline-stages 4 splits its 65 nodes (docs/pipelining.md): the pipelined model still
# predicts torch's logits, and its slowest stage, which sets the pipeline's pace, is no slower
# than that of four stages of equal node counts. A pipelined inference keeps every stage busy
# with a micro-batch of its own, and a slot's copies between IPUs move at once, each over its own
# IPU-Links: at 64 steps per execution four stages predict at least 1.8 times the samples per
# cycle of one IPU (2.3 when this was written; 1.26 when the copies were charged one after the
# other over one link).
test_resnet18_automatic_four_stage_split() {
  make_resnet
  predict_and_compare 1 --pipeline-stages 4
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode infer --batch-size 1 --pipeline-stages 4 \
    --steps-per-execution 64 --json
  cp "$STDOUT" auto.json
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode infer --batch-size 1 --steps-per-execution 64 --json
  cp "$STDOUT" one.json
  "$PYTHON" - one.json auto.json <<'PY' || fail "four pipelined stages predict less than 1.8x one IPU's samples per cycle"
import json, sys
one, four = (json.load(open(f))["estimates"]["cycles_per_step"]["predict"] for f in sys.argv[1:])
print(f"predict cycles per step at 64 steps per execution: {one} on one IPU, {four} on four stages", file=sys.stderr)
sys.exit(0 if one >= 1.8 * four else 1)
PY
  expect_json auto.json 'd["pipeline"]["stages"] == 4 and d["pipeline"]["split"] == "automatic"'
  local nodes
  nodes=$(/usr/bin/python3 -c 'import onnx, sys; print(len(onnx.load(sys.argv[1]).graph.node))' model/resnet18.onnx)
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode infer --batch-size 1 --json --stage-assignment \
    "$("$PYTHON" -c 'import sys; u = int(sys.argv[1]); print(",".join(str(i * 4 // u) for i in range(u)))' "$nodes")"
  cp "$STDOUT" naive.json
  "$PYTHON" - auto.json naive.json <<'PY' || fail "the automatic split's slowest stage is slower than equal node counts'"
import json, sys
auto, naive = (json.load(open(f))["pipeline"] for f in sys.argv[1:])
slowest = lambda p: max(i["stage_cycles"] for i in p["ipus"])
print(f'slowest stage {slowest(auto):.0f} vs {slowest(naive):.0f}, imbalance '
      f'{auto["stage_imbalance"]:.3f} vs {naive["stage_imbalance"]:.3f}', file=sys.stderr)
sys.exit(0 if slowest(auto) <= slowest(naive) else 1)
PY
}

run_tests "$@"
