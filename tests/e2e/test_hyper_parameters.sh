#!/usr/bin/env bash
# The optimizer's hyper-parameters are run-time values (docs/training.md, "Hyper-parameters at run
# time"), LAMB's too: ipurun train sets them on an executable compiled without them, bitwise as if compiled
# with them; a learning-rate sweep is one cache entry; schedules stream a rate per update, appear
# in the step log and History, and resume from a checkpoint where they stopped.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TUTORIAL=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64 --batch-size 16)
QUIET=(--progress none)
DATA=(--data synthetic:1024 --steps-per-epoch 8)

# compile_to OUT MODEL [flags...]
compile_to() {
  local out=$1 model=$2
  shift 2
  expect_exit 0 "$IPUCC" compile "$model" "${SMALL[@]}" "$@" -o "$out"
}

test_hyper_parameters_at_run_time_equal_compiling_with_them() {
  local variant model defaults given
  # SGD with momentum (plain: SgdMomentum), Adam, centered RMSProp accumulating 2 micro-batches, LAMB
  # (LambMoments reads the betas, epsilon and weight decay, LambApply the rate) at a constant rate
  # and under a schedule, and pipelines whose second stage reads a copy of the hyper-parameters,
  # with SGD and with LAMB.
  for variant in "$TUTORIAL|--steps-per-execution 4|--learning-rate 0.003 --momentum 0.5" \
    "$TUTORIAL|--optimizer adam --steps-per-execution 4|--learning-rate 0.003 --beta1 0.8 --beta2 0.99 --epsilon 1e-6 --weight-decay 0.01" \
    "$TUTORIAL|--optimizer rmsprop --centered --gradient-accumulation 2 --steps-per-execution 4|--learning-rate 0.003 --rho 0.8 --epsilon 1e-6 --weight-decay 0.01" \
    "$TUTORIAL|--optimizer lamb --steps-per-execution 4|--learning-rate 0.003" \
    "$TUTORIAL|--optimizer lamb --gradient-accumulation 2 --steps-per-execution 4|--lr-schedule cosine:initial_learning_rate=0,warmup_target=0.004,warmup_steps=2,decay_steps=6" \
    "$MODELS/mlp_functional_staged.json|--num-ipus 2|--learning-rate 0.003 --momentum 0.5" \
    "$MODELS/mlp_functional_staged.json|--num-ipus 2 --optimizer lamb|--learning-rate 0.003 --beta1 0.8 --beta2 0.99 --epsilon 1e-5 --weight-decay 0.01"; do
    IFS='|' read -r model defaults given <<<"$variant"
    # shellcheck disable=SC2086 # flags and their values
    compile_to default.ipuexe "$model" $defaults
    # shellcheck disable=SC2086
    compile_to given.ipuexe "$model" $defaults $given
    # shellcheck disable=SC2086
    expect_exit 0 "$IPURUN" train default.ipuexe "${DATA[@]}" "${QUIET[@]}" $given --save-weights at_run_time \
      --step-log run.json
    expect_exit 0 "$IPURUN" train given.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights compiled --step-log compiled.json
    expect_same_checkpoints at_run_time compiled "$given at run time and compiled ($model $defaults)"
    cmp -s run.json compiled.json || fail "$given: the step logs differ"
    # And the values matter: the executable's own defaults train other weights.
    expect_exit 0 "$IPURUN" train default.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights defaults
    ! diff -r defaults compiled > /dev/null || fail "$given changed nothing"
    rm -rf at_run_time compiled defaults
  done
}

test_a_learning_rate_sweep_is_one_cache_entry() {
  local lr
  for lr in 0.001 0.003 0.01; do
    expect_exit 0 "$IPURUN" train "$TUTORIAL" "${SMALL[@]}" "${DATA[@]}" "${QUIET[@]}" --learning-rate "$lr" \
      --step-log "lr_$lr.json"
  done
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["entries"] == 1 and d["misses"] == 1 and d["hits"] == 2'
  "$PYTHON" -c '
import json
rates = [json.load(open(f"lr_{lr}.json"))["learning_rates"][0] for lr in ("0.001", "0.003", "0.01")]
losses = [json.load(open(f"lr_{lr}.json"))["losses"][-1] for lr in ("0.001", "0.003", "0.01")]
import struct
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
assert rates == [f32(0.001), f32(0.003), f32(0.01)], rates
assert len(set(losses)) == 3, losses' || fail "the sweep did not train at each rate"
  # The entry holds the first compile's values; a hit with another rate gets its own as defaults.
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --learning-rate 0.003 -o hit.ipuexe --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  compile_to fresh.ipuexe "$TUTORIAL" --learning-rate 0.003 --no-cache
  expect_exit 0 "$IPURUN" train hit.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights from_hit
  expect_exit 0 "$IPURUN" train fresh.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights from_fresh
  expect_same_checkpoints from_hit from_fresh "a cache hit given --learning-rate 0.003 and a fresh compile with it"
}

test_a_hyper_parameter_the_optimizer_does_not_read_is_refused() {
  compile_to adam.ipuexe "$TUTORIAL" --optimizer adam
  expect_exit 2 "$IPURUN" train adam.ipuexe "${DATA[@]}" "${QUIET[@]}" --momentum 0.9
  expect_stderr_contains "--momentum: this executable's optimizer does not read momentum"
  # SGD compiled without momentum has no velocity: momentum is part of its program.
  compile_to plain.ipuexe "$TUTORIAL" --momentum 0
  expect_exit 2 "$IPURUN" train plain.ipuexe "${DATA[@]}" "${QUIET[@]}" --momentum 0.9
  expect_stderr_contains "compile with it"
  expect_exit 2 "$IPURUN" train plain.ipuexe "${DATA[@]}" "${QUIET[@]}" --lr-schedule linear:decay_steps=2
  expect_stderr_contains "--lr-schedule: learning-rate schedule 'linear:decay_steps=2': unknown kind"
  # Only train sets them on an executable; evaluate refuses them as compile flags.
  expect_exit 2 "$IPURUN" evaluate plain.ipuexe --data synthetic:64 "${QUIET[@]}" --learning-rate 0.1
  expect_stderr_contains "--learning-rate applies only when EXECUTABLE is a model"
}

# Keras's ExponentialDecay with staircase (step decay) per update: 2 updates per execution of 4
# micro-batches with 2 accumulated, the rate halving every 2 updates.
test_a_schedule_streams_a_rate_per_update() {
  compile_to sched.ipuexe "$TUTORIAL" --steps-per-execution 4 --gradient-accumulation 2 \
    --lr-schedule exponential:initial_learning_rate=0.1,decay_steps=2,decay_rate=0.5,staircase=true
  expect_exit 0 "$IPURUN" train sched.ipuexe "${DATA[@]}" "${QUIET[@]}" --epochs 2 --step-log log.json \
    --history history.json --json
  expect_json log.json 'd["learning_rates"] == [0.10000000149011612] * 2 + [0.05000000074505806] * 2 + [0.02500000037252903] * 2 + [0.012500000186264515] * 2'
  expect_json history.json 'd["learning_rate"] == [0.05000000074505806, 0.012500000186264515]'
  expect_json "$STDOUT" '[e["learning_rate"] for e in d["epochs"]] == [0.05000000074505806, 0.012500000186264515]'
  # The same schedule from a JSON spec, as Keras serialises it, trains the same weights.
  "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
m["optimizer"]["learning_rate"] = {"module": "keras.optimizers.schedules", "class_name": "ExponentialDecay",
    "config": {"initial_learning_rate": 0.1, "decay_steps": 2, "decay_rate": 0.5, "staircase": True, "name": "ExponentialDecay"},
    "registered_name": None}
json.dump(m, open("keras_schedule.json", "w"))' "$TUTORIAL"
  compile_to spec.ipuexe keras_schedule.json --steps-per-execution 4 --gradient-accumulation 2
  expect_exit 0 "$IPURUN" train spec.ipuexe "${DATA[@]}" "${QUIET[@]}" --epochs 2 --step-log spec_log.json
  cmp -s log.json spec_log.json || fail "the spec's ExponentialDecay trained differently from --lr-schedule"
  # --learning-rate at run time replaces the schedule with a constant rate.
  expect_exit 0 "$IPURUN" train sched.ipuexe "${DATA[@]}" "${QUIET[@]}" --learning-rate 0.02 --step-log const.json
  expect_json const.json 'd["learning_rates"] == [0.019999999552965164] * 4'
  # Per epoch, as Keras's LearningRateScheduler callback: the epoch index selects the rate.
  expect_exit 0 "$IPURUN" train sched.ipuexe "${DATA[@]}" "${QUIET[@]}" --epochs 3 --step-log epochs.json \
    --lr-schedule piecewise:boundaries=0/1,values=0.1/0.01/0.001,per_epoch=1
  expect_json epochs.json 'd["learning_rates"] == [0.10000000149011612] * 4 + [0.009999999776482582] * 4 + [0.0010000000474974513] * 4'
}

# A checkpoint keeps the schedule's position: 1 + 1 epochs through it are 2 epochs, bit for bit.
test_resume_continues_the_schedule() {
  local schedule
  for schedule in "cosine:initial_learning_rate=0,warmup_target=0.05,warmup_steps=4,decay_steps=8" \
    "polynomial:initial_learning_rate=0.05,decay_steps=6,power=2,per_epoch=0" \
    "piecewise:boundaries=0,values=0.05/0.01,per_epoch=1"; do
    compile_to resume.ipuexe "$TUTORIAL" --optimizer adam --steps-per-execution 2 --lr-schedule "$schedule"
    expect_exit 0 "$IPURUN" train resume.ipuexe "${DATA[@]}" "${QUIET[@]}" --epochs 2 --save-weights two \
      --step-log two.json
    expect_exit 0 "$IPURUN" train resume.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights one --step-log first.json
    expect_exit 0 "$IPURUN" train resume.ipuexe "${DATA[@]}" "${QUIET[@]}" --weights one --save-weights resumed \
      --step-log second.json
    expect_same_checkpoints two resumed "$schedule: 1 + 1 epochs and 2 epochs"
    "$PYTHON" -c '
import json
two, first, second = (json.load(open(f))["learning_rates"] for f in ("two.json", "first.json", "second.json"))
assert two == first + second, (two, first, second)
assert len(set(two)) > 1, two' || fail "$schedule: the resumed run did not continue the schedule"
    rm -rf two one resumed
  done
}

run_tests
