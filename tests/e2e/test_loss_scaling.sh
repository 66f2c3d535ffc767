#!/usr/bin/env bash
# Loss scaling (docs/training.md, "Loss scaling"), as Keras's LossScaleOptimizer: the loss gradient
# is multiplied by the scale and every gradient divided by it before clipping and the update.
# Static: a power-of-two scale trains bitwise as no scaling; the scale is a run-time
# hyper-parameter; a scale large enough to overflow float32 does overflow (so it is applied).
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

# With S = 1024 every scaled gradient is the unscaled one times 2^10, exactly (nothing here comes
# near float32's range), and 1 / 1024 undoes it exactly: the weights, the optimizer state and every
# loss are bitwise those of the same run without scaling. SGD with momentum; Adam accumulating 2
# micro-batches; SGD clipped by global norm (the norm of the unscaled gradients); a two-stage
# pipeline, whose first stage unscales with its own copy of the scale; 2 replicas.
test_static_power_of_two_scale_trains_bitwise_as_no_scaling() {
  local variant model flags
  for variant in "$TUTORIAL|--momentum 0.9" \
    "$TUTORIAL|--optimizer adam --gradient-accumulation 2 --steps-per-execution 4" \
    "$TUTORIAL|--global-clipnorm 0.5 --learning-rate 0.1" \
    "$MODELS/mlp_functional_staged.json|--num-ipus 2 --momentum 0.5" \
    "$TUTORIAL|--replicas 2 --optimizer rmsprop"; do
    IFS='|' read -r model flags <<<"$variant"
    # shellcheck disable=SC2086 # flags and their values
    compile_to plain.ipuexe "$model" $flags
    # shellcheck disable=SC2086
    compile_to scaled.ipuexe "$model" $flags --loss-scaling static --loss-scale 1024
    expect_exit 0 "$IPURUN" train plain.ipuexe "${DATA[@]}" "${QUIET[@]}" --epochs 2 --save-weights plain \
      --step-log plain.json
    expect_exit 0 "$IPURUN" train scaled.ipuexe "${DATA[@]}" "${QUIET[@]}" --epochs 2 --save-weights scaled \
      --step-log scaled.json
    expect_same_checkpoints plain scaled "static scale 1024 and no scaling ($flags)"
    expect_json scaled.json 'd["losses"] == json.load(open("plain.json"))["losses"]' "losses ($flags)"
    expect_json scaled.json 'd["loss_scales"] == [1024.0] * len(json.load(open("plain.json"))["learning_rates"])' \
      "the step log's scale ($flags)"
    rm -rf plain scaled
  done
}

# The scaled gradients are accumulated and all-reduced before they are unscaled. Replicas 2 ×
# accumulation 2 and replicas 1 × accumulation 4, each with static scale 4096, take bitwise the
# steps of the same layout without scaling, with Adam and with LAMB clipped by global norm; so the
# two layouts agree with scaling exactly as tests/e2e/test_layouts.sh holds them to agree without
# (the micro-batches are summed in another order, so not bitwise).
test_static_scaling_replicas_times_accumulation() {
  local optimizer layout name flags steps scaling kind scale
  for optimizer in "adam" "lamb --global-clipnorm 0.05"; do
    for layout in "replicas|--replicas 2 --num-ipus 2 --gradient-accumulation 2|16" \
      "accumulated|--gradient-accumulation 4|32"; do
      IFS='|' read -r name flags steps <<<"$layout"
      for scaling in "plain|" "scaled|--loss-scaling static --loss-scale 4096"; do
        IFS='|' read -r kind scale <<<"$scaling"
        # shellcheck disable=SC2086 # flags and their values
        expect_exit 0 "$IPUCC" compile "$TUTORIAL" -o "$name-$kind.ipuexe" --tiles-per-ipu 64 --batch-size 8 \
          --steps-per-execution 4 $flags --optimizer $optimizer $scale
        expect_exit 0 "$IPURUN" train "$name-$kind.ipuexe" --data synthetic:1024 --steps-per-epoch "$steps" \
          "${QUIET[@]}" --save-weights "$name-$kind" --step-log "$name-$kind.json"
      done
      expect_same_checkpoints "$name-plain" "$name-scaled" "$name with and without static scaling ($optimizer)"
    done
    expect_json replicas-scaled.json 'd["loss_scales"] == [4096.0] * 8'
    rm -rf ./*-plain ./*-scaled
  done
}

# 3.4e38 times the loss gradient overflows float32 where it is scaled: the static scale is really
# applied, and training stops at the first non-finite value (a static scale never skips).
test_an_overflowing_static_scale_stops_training() {
  compile_to huge.ipuexe "$TUTORIAL" --loss-scaling static --loss-scale 3.4e38
  expect_error 8 "training stopped at a NaN or an infinity" "node 'loss/grad/scaled'" -- \
    "$IPURUN" train huge.ipuexe "${DATA[@]}" "${QUIET[@]}"
  # The same executable with a sane scale given at run time trains.
  expect_exit 0 "$IPURUN" train huge.ipuexe "${DATA[@]}" "${QUIET[@]}" --loss-scale 8 --step-log log.json
  expect_json log.json 'd["loss_scales"] == [8.0] * 8'
}

# The static scale is a run-time hyper-parameter: set at run time it trains bitwise as compiled
# with it, and two scales of one model are one cache entry.
test_the_static_scale_is_a_run_time_value() {
  compile_to default.ipuexe "$TUTORIAL" --loss-scaling static
  compile_to given.ipuexe "$TUTORIAL" --loss-scaling static --loss-scale 3
  expect_exit 0 "$IPURUN" train default.ipuexe "${DATA[@]}" "${QUIET[@]}" --loss-scale 3 --save-weights run_time \
    --step-log run_time.json
  expect_exit 0 "$IPURUN" train given.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights compiled \
    --step-log compiled.json --epochs 2 --history history.json --json
  expect_json "$STDOUT" '[e["loss_scale"] for e in d["epochs"]] == [3.0, 3.0]' "--json's loss_scale"
  expect_json history.json 'd["loss_scale"] == [3.0, 3.0]' "History's loss_scale"
  expect_json compiled.json 'd["loss_scales"] == [3.0] * 16'
  expect_exit 0 "$IPURUN" train given.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights compiled \
    --step-log compiled.json
  expect_same_checkpoints run_time compiled "--loss-scale 3 at run time and compiled"
  cmp -s run_time.json compiled.json || fail "the step logs differ"
  # Keras's default scale, 2^15.
  expect_exit 0 "$IPURUN" train default.ipuexe "${DATA[@]}" "${QUIET[@]}" --step-log default.json
  expect_json default.json 'd["loss_scales"] == [32768.0] * 8'
  for scale in 256 4096; do
    expect_exit 0 "$IPURUN" train "$TUTORIAL" "${SMALL[@]}" "${DATA[@]}" "${QUIET[@]}" --loss-scaling static \
      --loss-scale "$scale"
  done
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["entries"] == 1 and d["misses"] == 1'
  # Without loss scaling neither History nor --json has a loss_scale.
  compile_to plain.ipuexe "$TUTORIAL"
  expect_exit 0 "$IPURUN" train plain.ipuexe "${DATA[@]}" "${QUIET[@]}" --history plain_history.json --json
  expect_json "$STDOUT" '"loss_scale" not in d["epochs"][0]'
  expect_json plain_history.json '"loss_scale" not in d'
}

# A spec's optimizer may be Keras's LossScaleOptimizer as Keras serialises it; "dynamic": false is
# tf.keras's static scaling, the same program as --loss-scaling static.
test_a_spec_loss_scale_optimizer_is_static_scaling() {
  "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
m["optimizer"] = {"class_name": "LossScaleOptimizer", "config": {"name": "loss_scale_optimizer",
    "inner_optimizer": m["optimizer"], "initial_scale": 64.0, "dynamic": False}}
json.dump(m, open("wrapped.json", "w"))' "$TUTORIAL"
  compile_to wrapped.ipuexe wrapped.json
  compile_to flags.ipuexe "$TUTORIAL" --loss-scaling static --loss-scale 64
  expect_exit 0 "$IPURUN" train wrapped.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights wrapped \
    --step-log wrapped_log.json
  expect_exit 0 "$IPURUN" train flags.ipuexe "${DATA[@]}" "${QUIET[@]}" --save-weights flags \
    --step-log flags_log.json
  expect_same_checkpoints wrapped flags "the spec's LossScaleOptimizer and the flags"
  cmp -s wrapped_log.json flags_log.json || fail "the step logs differ"
  # --loss-scaling none turns the spec's scaling off.
  compile_to off.ipuexe wrapped.json --loss-scaling none
  expect_exit 0 "$IPURUN" train off.ipuexe "${DATA[@]}" "${QUIET[@]}" --step-log off.json
  expect_json off.json '"loss_scales" not in d'
}

test_bad_loss_scaling_flags_are_usage_errors() {
  expect_error 2 "--loss-scale" "positive number" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling static --loss-scale 0
  expect_error 2 "--loss-scale" "positive number" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling static --loss-scale -4
  expect_error 2 "--loss-scale" "positive number" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling static --loss-scale inf
  expect_error 2 "--loss-scale" "positive number" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling static --loss-scale nan
  expect_error 2 "--loss-scaling" -- "$IPUCC" compile "$TUTORIAL" --loss-scaling sometimes
  expect_error 2 "--loss-scale needs loss scaling" -- "$IPUCC" compile "$TUTORIAL" --loss-scale 8
  # At run time, on an executable without loss scaling.
  compile_to plain.ipuexe "$TUTORIAL"
  expect_error 2 "--loss-scale: this executable's optimizer does not read loss_scale" -- \
    "$IPURUN" train plain.ipuexe "${DATA[@]}" "${QUIET[@]}" --loss-scale 8
  # A malformed LossScaleOptimizer in a spec is invalid input (3).
  "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
m["optimizer"] = {"class_name": "LossScaleOptimizer", "config": {"inner_optimizer": m["optimizer"],
    "initial_scale": -1.0, "dynamic": False}}
json.dump(m, open("bad.json", "w"))' "$TUTORIAL"
  expect_error 3 "LossScaleOptimizer: 'initial_scale' must be a positive number" -- \
    "$IPUCC" compile bad.json "${SMALL[@]}"
}

run_tests "$@"
