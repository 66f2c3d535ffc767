#!/usr/bin/env bash
# Dynamic loss scaling (docs/training.md, "Loss scaling"), as TF2 Keras's LossScaleOptimizer: every
# weight update unscales the gradients by the current scale; when any element of any stage's is
# not finite the update is skipped (weights, optimizer state and its step count unchanged) and the
# scale halves (never below 1), else growth_steps finite updates in a row double it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TUTORIAL=$MODELS/mlp_functional.json
STAGED=$MODELS/mlp_functional_staged.json
SMALL=(--tiles-per-ipu 64 --batch-size 16)
QUIET=(--progress none)
DATA=(--data synthetic:1024)
# 3.4e38 times the loss gradient overflows float32 in some steps' gradients and not in others:
# the schedule skips, halves, grows and caps within a short run.
OVERFLOW=(--loss-scaling dynamic --loss-scale 3.4e38 --loss-scale-growth-steps 3)

# compile_to OUT MODEL [flags...]
compile_to() {
  local out=$1 model=$2
  shift 2
  expect_exit 0 "$IPUCC" compile "$model" "${SMALL[@]}" "$@" -o "$out"
}

# expect_same_except_scale A B WHAT: the checkpoints hold the same files, bit for bit, but the
# loss scale's state (present in a dynamic run's only, or changed by a skipped update).
expect_same_except_scale() {
  "$PYTHON" - "$1" "$2" <<'PY' || fail "$3: the checkpoints differ"
import json, os, sys
a, b = sys.argv[1], sys.argv[2]
ia, ib = json.load(open(os.path.join(a, "index.json"))), json.load(open(os.path.join(b, "index.json")))
names = lambda i: {n for n in i if not n.startswith("optimizer/loss_scale")}
assert names(ia) == names(ib), (sorted(ia), sorted(ib))
for n in names(ia):
    assert open(os.path.join(a, ia[n]), "rb").read() == open(os.path.join(b, ib[n]), "rb").read(), n
PY
}

# The first update a step log marks skipped after an applied one, 1-based.
first_skipped() {
  json_get "$1" 'next(i + 1 for i in range(1, len(d["skipped"])) if d["skipped"][i] and not d["skipped"][i - 1])'
}

test_the_scale_follows_keras_schedule_step_for_step() {
  compile_to overflow.ipuexe "$TUTORIAL" "${OVERFLOW[@]}"
  # Skipped updates do not stop the run: their losses are finite (TerminateOnNaN watches losses).
  expect_exit 0 "$IPURUN" train overflow.ipuexe "${DATA[@]}" --steps-per-epoch 16 --epochs 2 "${QUIET[@]}" \
    --step-log log.json --history history.json --json --save-weights final
  expect_keras_schedule log.json 3.4e38 3 final
  expect_json log.json 'len(d["loss_scales"]) == 32 == len(d["skipped"])'
  # --json and History: each epoch's last scale and its skipped updates.
  expect_json "$STDOUT" 'all([e["loss_scale"] for e in d["epochs"]] == [l["loss_scales"][15], l["loss_scales"][31]]
    and [e["skipped_updates"] for e in d["epochs"]] == [sum(l["skipped"][:16]), sum(l["skipped"][16:])]
    for l in [json.load(open("log.json"))])' "--json's loss_scale and skipped_updates"
  # The plain progress line: the epoch's last scale and its skipped updates.
  expect_exit 0 "$IPURUN" train overflow.ipuexe "${DATA[@]}" --steps-per-epoch 16 --progress plain
  grep -q "loss_scale: $(json_get history.json '"%g" % d["loss_scale"][0]') - skipped: $(json_get history.json \
    'd["skipped_updates"][0]')$" "$STDERR" || fail "the progress line lacks the scale and skipped updates"
  expect_json history.json '(d["loss_scale"] == [e["loss_scale"] for e in d["epochs"]]
    and d["skipped_updates"] == [e["skipped_updates"] for e in d["epochs"]] and sum(d["skipped_updates"]) > 0)'
  # Gradient accumulation: one scale per update of 4 micro-batches, Adam.
  compile_to accumulated.ipuexe "$TUTORIAL" "${OVERFLOW[@]}" --optimizer adam --gradient-accumulation 4 \
    --steps-per-execution 8
  expect_exit 0 "$IPURUN" train accumulated.ipuexe "${DATA[@]}" --steps-per-epoch 64 "${QUIET[@]}" \
    --step-log accumulated.json --save-weights accumulated
  expect_json accumulated.json 'len(d["loss_scales"]) == 16 and len(d["losses"]) == 64'
  expect_keras_schedule accumulated.json 3.4e38 3 accumulated
}

# A skipped update changes nothing but the scale: the checkpoints after the update before it and
# after it are bitwise the same (weights, Adam's moments and step counts, the schedule position).
test_a_skipped_update_leaves_weights_and_optimizer_state() {
  local optimizer
  for optimizer in "adam" "sgd --momentum 0.9"; do
    # shellcheck disable=SC2086 # the optimizer and its flags
    compile_to skip.ipuexe "$TUTORIAL" "${OVERFLOW[@]}" --optimizer $optimizer
    expect_exit 0 "$IPURUN" train skip.ipuexe "${DATA[@]}" --steps-per-epoch 16 "${QUIET[@]}" --step-log log.json
    local j
    j=$(first_skipped log.json)
    expect_exit 0 "$IPURUN" train skip.ipuexe "${DATA[@]}" --steps-per-epoch $((j - 1)) "${QUIET[@]}" \
      --save-weights before
    expect_exit 0 "$IPURUN" train skip.ipuexe "${DATA[@]}" --steps-per-epoch "$j" "${QUIET[@]}" \
      --save-weights after
    expect_same_except_scale before after "the updates before and after skipped update $j ($optimizer)"
    cmp -s before/"$(json_get before/index.json 'd["optimizer/loss_scale"]')" \
      after/"$(json_get after/index.json 'd["optimizer/loss_scale"]')" && fail "the skip did not halve the scale"
    rm -rf before after
  done
}

# Power-of-two scales unscale exactly, so updates dynamic scaling applies are bitwise those of
# static scaling at the same scale, and of no scaling: SGD with momentum and Adam, the scale
# growing every 2 updates (1024 to 2^14 in 8 steps, never overflowing).
test_applied_updates_equal_static_scaling_bitwise() {
  local optimizer
  for optimizer in "sgd --momentum 0.9" "adam"; do
    # shellcheck disable=SC2086 # the optimizer and its flags
    compile_to dynamic.ipuexe "$TUTORIAL" --optimizer $optimizer --loss-scaling dynamic --loss-scale 1024 \
      --loss-scale-growth-steps 2
    # shellcheck disable=SC2086
    compile_to static.ipuexe "$TUTORIAL" --optimizer $optimizer --loss-scaling static --loss-scale 1024
    expect_exit 0 "$IPURUN" train dynamic.ipuexe "${DATA[@]}" --steps-per-epoch 8 "${QUIET[@]}" \
      --save-weights dynamic --step-log dynamic.json
    expect_exit 0 "$IPURUN" train static.ipuexe "${DATA[@]}" --steps-per-epoch 8 "${QUIET[@]}" \
      --save-weights static --step-log static.json
    expect_json dynamic.json '(d["loss_scales"] == [1024.0, 1024.0, 2048.0, 2048.0, 4096.0, 4096.0, 8192.0, 8192.0]
      and not any(d["skipped"]))'
    expect_json dynamic.json 'd["losses"] == json.load(open("static.json"))["losses"]' "losses ($optimizer)"
    expect_same_except_scale dynamic static "dynamic and static scaling ($optimizer)"
    rm -rf dynamic static
  done
}

# The scale and its counter are optimizer state: a run resumed from a checkpoint mid-schedule
# continues bitwise as one run.
test_a_resumed_run_continues_the_schedule_bitwise() {
  compile_to overflow.ipuexe "$TUTORIAL" "${OVERFLOW[@]}" --optimizer adam
  local common=("${DATA[@]}" --steps-per-epoch 8 "${QUIET[@]}")
  expect_exit 0 "$IPURUN" train overflow.ipuexe "${common[@]}" --epochs 3 --save-weights whole --step-log whole.json
  expect_exit 0 "$IPURUN" train overflow.ipuexe "${common[@]}" --epochs 1 --save-weights first
  expect_exit 0 "$IPURUN" train overflow.ipuexe "${common[@]}" --weights first --initial-epoch 1 --epochs 3 \
    --save-weights resumed --step-log resumed.json
  expect_same_checkpoints whole resumed "one run and a resumed one"
  expect_json resumed.json 'all(d["loss_scales"] == w["loss_scales"][8:] and d["skipped"] == w["skipped"][8:]
    for w in [json.load(open("whole.json"))])' "the resumed run's scales"
  expect_json whole.json 'any(d["skipped"][8:]) and len(set(d["loss_scales"][8:])) > 1'
}

# The scaled gradients are accumulated and all-reduced before they are unscaled and checked:
# replicas 2 × accumulation 2 and replicas 1 × accumulation 4 each train bitwise as their layout
# without scaling while the scale grows, and both follow the same schedule through overflows.
test_dynamic_scaling_replicas_times_accumulation() {
  local layout name flags scaling kind scale
  for layout in "replicas|--replicas 2 --num-ipus 2 --gradient-accumulation 2|16" \
    "accumulated|--gradient-accumulation 4|32"; do
    IFS='|' read -r name flags steps <<<"$layout"
    for scaling in "plain|" "scaled|--loss-scaling dynamic --loss-scale 4096 --loss-scale-growth-steps 2" \
      "overflow|${OVERFLOW[*]}"; do
      IFS='|' read -r kind scale <<<"$scaling"
      # shellcheck disable=SC2086 # flags and their values
      expect_exit 0 "$IPUCC" compile "$TUTORIAL" -o "$name-$kind.ipuexe" --tiles-per-ipu 64 --batch-size 8 \
        --steps-per-execution 4 $flags --optimizer adam $scale
      expect_exit 0 "$IPURUN" train "$name-$kind.ipuexe" "${DATA[@]}" --steps-per-epoch "$steps" "${QUIET[@]}" \
        --save-weights "$name-$kind" --step-log "$name-$kind.json"
    done
    expect_same_except_scale "$name-plain" "$name-scaled" "$name with and without dynamic scaling"
    expect_json "$name-scaled.json" 'd["loss_scales"] == [4096.0 * 2 ** (i // 2) for i in range(8)]'
    expect_keras_schedule "$name-overflow.json" 3.4e38 3 "$name-overflow"
  done
  expect_json replicas-overflow.json 'd["skipped"] == json.load(open("accumulated-overflow.json"))["skipped"]' \
    "the two layouts' skipped updates"
}

# Two pipeline stages: every stage checks its own gradients and all take the same decision, so a
# skipped update leaves both stages' weights and state as they were (the combination of the
# stages' checks is tests/unit/compiler/passes/test_loss_scaling.cpp's).
test_a_pipeline_skips_every_stage() {
  compile_to staged.ipuexe "$STAGED" --num-ipus 2 --momentum 0.5 "${OVERFLOW[@]}"
  expect_exit 0 "$IPURUN" train staged.ipuexe "${DATA[@]}" --steps-per-epoch 16 "${QUIET[@]}" \
    --step-log log.json --save-weights final
  expect_keras_schedule log.json 3.4e38 3 final
  expect_json final/index.json '"optimizer/loss_scale@1" in d' "the second stage's copy of the state"
  # K micro-batches (steps) per update.
  local j k
  j=$(first_skipped log.json)
  k=$(json_get log.json 'len(d["losses"]) // len(d["loss_scales"])')
  expect_exit 0 "$IPURUN" train staged.ipuexe "${DATA[@]}" --steps-per-epoch $(((j - 1) * k)) "${QUIET[@]}" \
    --save-weights before
  expect_exit 0 "$IPURUN" train staged.ipuexe "${DATA[@]}" --steps-per-epoch $((j * k)) "${QUIET[@]}" \
    --save-weights after
  expect_same_except_scale before after "both stages across skipped update $j"
  # Every stage holds the same state.
  "$PYTHON" - final <<'PY' || fail "the stages' loss scale states differ"
import json, os, sys
i = json.load(open(os.path.join(sys.argv[1], "index.json")))
read = lambda n: open(os.path.join(sys.argv[1], i[n]), "rb").read()
assert read("optimizer/loss_scale") == read("optimizer/loss_scale@1")
PY
}

# Only the second stage overflows: the first stage's output (dense3) is made 1e10 and the second
# stage's first kernel (dense4) 1e-10 times what it was, so the forward pass computes what it did
# while dense4's kernel gradient (1e10 times the activations' gradient, times the scale 1e30)
# overflows and every gradient sent back to the first stage shrinks by 1e10. The first stage's
# gradients are finite, yet its update is skipped with the second's: the decision is global.
test_one_stage_overflowing_skips_both() {
  compile_to staged.ipuexe "$STAGED" --num-ipus 2 --momentum 0.5 --loss-scaling dynamic --loss-scale 1e30
  expect_exit 0 "$IPURUN" train staged.ipuexe "${DATA[@]}" --steps-per-epoch 2 "${QUIET[@]}" --save-weights base
  "$PYTHON" - base <<'PY' || fail "could not rescale the checkpoint"
import json, os, sys, numpy
d = sys.argv[1]
i = json.load(open(os.path.join(d, "index.json")))
def scale(name, f):
    path = os.path.join(d, i[name])
    numpy.save(path, f(numpy.load(path)).astype(numpy.float32))
scale("dense3/bias", lambda b: b + numpy.float32(1e10))
scale("dense4/kernel", lambda k: k * numpy.float32(1e-10))
PY
  expect_exit 0 "$IPURUN" train staged.ipuexe "${DATA[@]}" --steps-per-epoch 2 "${QUIET[@]}" --weights base \
    --save-weights after --step-log log.json
  expect_json log.json 'd["skipped"] == [True]' "the update after the rescaling"
  expect_same_except_scale base after "both stages across the second stage's overflow"
}

# Keras's learning-rate schedules read the inner optimizer's iterations, which a skipped update
# does not advance: with one update per execution the rate after a skip is the skipped one's.
test_a_skipped_update_does_not_advance_the_schedule() {
  compile_to overflow.ipuexe "$TUTORIAL" "${OVERFLOW[@]}"
  expect_exit 0 "$IPURUN" train overflow.ipuexe "${DATA[@]}" --steps-per-epoch 16 "${QUIET[@]}" \
    --lr-schedule exponential:decay_steps=1,decay_rate=0.5 --step-log log.json
  expect_json log.json '(all(abs(lr - 0.01 * 0.5 ** (i - sum(d["skipped"][:i]))) <= 1e-9
    for i, lr in enumerate(d["learning_rates"])) and any(d["skipped"]))'
}

# A spec's LossScaleOptimizer with "dynamic": true (Keras's default) is the same program as the flags.
test_a_spec_loss_scale_optimizer_may_be_dynamic() {
  "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
m["optimizer"] = {"class_name": "LossScaleOptimizer", "config": {"name": "loss_scale_optimizer",
    "inner_optimizer": m["optimizer"], "initial_scale": 3.4e38, "dynamic": True, "dynamic_growth_steps": 3}}
json.dump(m, open("wrapped.json", "w"))' "$TUTORIAL"
  compile_to wrapped.ipuexe wrapped.json
  compile_to flags.ipuexe "$TUTORIAL" "${OVERFLOW[@]}"
  expect_exit 0 "$IPURUN" train wrapped.ipuexe "${DATA[@]}" --steps-per-epoch 8 "${QUIET[@]}" \
    --save-weights wrapped --step-log wrapped_log.json
  expect_exit 0 "$IPURUN" train flags.ipuexe "${DATA[@]}" --steps-per-epoch 8 "${QUIET[@]}" \
    --save-weights flags --step-log flags_log.json
  expect_same_checkpoints wrapped flags "the spec's LossScaleOptimizer and the flags"
  cmp -s wrapped_log.json flags_log.json || fail "the step logs differ"
  # The initial scale and growth steps are compiled in: each is its own cache entry.
  expect_exit 0 "$IPUCC" cache stats --json
  local before
  before=$(json_get "$STDOUT" 'd["entries"]')
  compile_to other.ipuexe "$TUTORIAL" --loss-scaling dynamic --loss-scale 3.4e38 --loss-scale-growth-steps 4
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" "d[\"entries\"] == $before + 1"
}

test_bad_dynamic_scaling_flags_are_usage_errors() {
  expect_error 2 "--loss-scale-growth-steps" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling dynamic \
    --loss-scale-growth-steps 0
  expect_error 2 "--loss-scale-growth-steps" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling dynamic \
    --loss-scale-growth-steps 16777217
  expect_error 2 "--loss-scale-growth-steps" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling dynamic \
    --loss-scale-growth-steps 2.5
  expect_error 2 "--loss-scale-growth-steps needs dynamic loss scaling" -- \
    "$IPUCC" compile "$TUTORIAL" --loss-scaling static --loss-scale-growth-steps 3
  expect_error 2 "--loss-scale-growth-steps needs dynamic loss scaling" -- \
    "$IPUCC" compile "$TUTORIAL" --loss-scale-growth-steps 3
  expect_error 2 "--loss-scale" "positive number" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling dynamic \
    --loss-scale 0
  # The dynamic scale lives on the device: ipurun cannot set it.
  compile_to dynamic.ipuexe "$TUTORIAL" --loss-scaling dynamic
  expect_error 2 "--loss-scale: this executable's optimizer does not read loss_scale" -- \
    "$IPURUN" train dynamic.ipuexe "${DATA[@]}" "${QUIET[@]}" --loss-scale 8
  "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
m["optimizer"] = {"class_name": "LossScaleOptimizer", "config": {"inner_optimizer": m["optimizer"],
    "dynamic_growth_steps": 0}}
json.dump(m, open("bad.json", "w"))' "$TUTORIAL"
  expect_error 3 "'dynamic_growth_steps' must be an integer in [1, 2^24]" -- "$IPUCC" compile bad.json "${SMALL[@]}"
}

run_tests "$@"
