#!/usr/bin/env bash
# Training parity with an independent float64 PyTorch reference: models/mlp_functional.json at
# batch 16 (softmax output, from_logits false, SGD lr 0.01 momentum 0.9), 20 steps on synthetic
# data in order, from ipucc's initial weights; the same for models/mlp_residual.json (Add and
# Concatenate merge layers, logits). The committed fixtures tests/data/torch_reference/<model>_b16
# hold torch's per-step losses and final weights (regenerate: scripts/reference/make_fixture.sh
# [MODEL]); this suite needs only plain python3.
#
# The initial weights are regenerated with the trick of scripts/reference/torch_reference.py:
# compile with --learning-rate 1e-30 --momentum 0, train one step, save -- every weight rounds
# back to its initial value (zero-initialised biases become ~1e-31 instead of 0).
#
# The same MLP with `--optimizer adam` (Keras's defaults) against float64 torch.optim.Adam:
# tests/data/torch_reference/mlp_functional_b16_adam (make_fixture.sh mlp_functional adam).
#
# Tolerances: every tensor's max |a-b| / max|b| <= 1e-5, every step's loss |a-b|/|b| <= 1e-5.
# Observed when written: 4.7e-7 (weights) and 6.6e-8 to 7.6e-8 (losses; the value moved between
# two builds of the runtime). The max errors are printed even when the tests pass. If this
# fails suddenly from some step on (errors of 1e-4 or more after agreeing to 1e-7), check
# "relu_margin" in the fixture's reference.json: a ReLU pre-activation within float32 noise of 0
# makes float32 and float64 take different branches (the closest is 1.4e-6 at step 6, about 10x
# the float32 noise of pre-activations).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# fd 3: the suite's own stdout, so passing tests can still report their errors (lib.sh only shows
# a test's output when it fails).
exec 3>&1

MODEL=$MODELS/mlp_functional.json
FIXTURE=$SRC/tests/data/torch_reference/mlp_functional_b16
RESIDUAL_MODEL=$MODELS/mlp_residual.json
RESIDUAL_FIXTURE=$SRC/tests/data/torch_reference/mlp_residual_b16
FIXTURE_DIR=$SRC/tests/data/torch_reference
COMPARE=$SRC/scripts/reference/compare_to_reference.py
BATCH=16
STEPS=20
DATA=synthetic:$((BATCH * STEPS))

# Compiles the model (mlp.ipuexe) and writes its initial weights to init/ with the trick.
# Arguments: MODEL FIXTURE (default: the tutorial MLP).
compile_and_init() {
  local MODEL=${1:-$MODEL} FIXTURE=${2:-$FIXTURE}
  expect_file "$FIXTURE/index.json"
  expect_file "$FIXTURE/reference.json"
  expect_json "$FIXTURE/reference.json" "d['batch_size'] == $BATCH and d['steps'] == $STEPS and len(d['losses']) == $STEPS" \
    "fixture configuration"
  expect_exit 0 "$IPUCC" compile "$MODEL" --batch-size $BATCH --no-cache -o mlp.ipuexe
  expect_exit 0 "$IPUCC" compile "$MODEL" --batch-size $BATCH --learning-rate 1e-30 --momentum 0 --no-cache -o trick.ipuexe
  expect_exit 0 "$IPURUN" train trick.ipuexe --data synthetic:$BATCH --steps-per-epoch 1 --save-weights init --progress none
  expect_file init/index.json
}

# Compares checkpoint $1 (and step log $2) with reference $3; extra arguments go to the comparer.
# Prints the summary lines to fd 3; fails with the whole table on a mismatch.
compare() {
  local checkpoint=$1 log=$2 reference=$3
  shift 3
  E2E_CMD="compare_to_reference.py $checkpoint vs $reference"
  E2E_RC=0
  python3 "$COMPARE" --reference "$reference" --checkpoint "$checkpoint" --step-log "$log" "$@" \
    > "$STDOUT" 2> "$STDERR" < /dev/null || E2E_RC=$?
  grep -E '^(max weight error|max loss error)' "$STDOUT" | sed "s/^/      ${FUNCNAME[1]}: /" >&3 || true
  if ((E2E_RC != 0)); then
    cat "$STDOUT" "$STDERR"
    E2E_CMD=  # the table is above; fail() need not repeat it
    fail "compare_to_reference.py exited $E2E_RC: $checkpoint differs from the reference $reference"
  fi
}

# train_like_fixture NAME: trains the tutorial MLP as fixture mlp_functional_b16_NAME records it
# (the ipucc flags in its reference.json), STEPS steps from its initial weights, into trained/ and
# steps.json; sets FIXTURE_OF_RUN and FLAGS_OF_RUN.
train_like_fixture() {
  FIXTURE_OF_RUN=$FIXTURE_DIR/mlp_functional_b16_$1
  compile_and_init "$MODEL" "$FIXTURE_OF_RUN"
  FLAGS_OF_RUN=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["optimizer"]["ipucc_flags"])' \
    "$FIXTURE_OF_RUN/reference.json")
  # shellcheck disable=SC2086 # the recorded flags, one word each
  expect_exit 0 "$IPUCC" compile "$MODEL" --batch-size $BATCH $FLAGS_OF_RUN --no-cache -o fixture.ipuexe
  rm -rf trained
  expect_exit 0 "$IPURUN" train fixture.ipuexe --data "$DATA" --steps-per-epoch $STEPS --weights init \
    --step-log steps.json --save-weights trained --progress none
  echo "      $1 ($FLAGS_OF_RUN):" >&3
}

test_training_matches_torch_reference() {
  compile_and_init
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data "$DATA" --steps-per-epoch $STEPS --weights init \
    --step-log steps.json --save-weights trained --progress none
  expect_json steps.json "len(d['losses']) == $STEPS" "one loss per step"
  compare trained steps.json "$FIXTURE" --weight-tol 1e-5 --loss-tol 1e-5
}

test_merge_layers_train_like_torch() {
  compile_and_init "$RESIDUAL_MODEL" "$RESIDUAL_FIXTURE"
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data "$DATA" --steps-per-epoch $STEPS --weights init \
    --step-log steps.json --save-weights trained --progress none
  compare trained steps.json "$RESIDUAL_FIXTURE" --weight-tol 1e-5 --loss-tol 1e-5
}

# Adam normalises each gradient by its running size, so a weight whose gradient is near epsilon
# (1e-7) steps by up to ±lr from a value float32 rounds heavily: the losses agree to 1e-7, but the
# weights only to 6.6e-5 of their largest magnitude (observed when written; computing the update in
# double changed nothing, with epsilon 1e-4 they agree to 2e-6; docs/training.md).
test_adam_trains_like_torch() {
  local fixture=$FIXTURE_DIR/mlp_functional_b16_adam
  compile_and_init "$MODEL" "$fixture"
  expect_exit 0 "$IPUCC" compile "$MODEL" --batch-size $BATCH --optimizer adam --no-cache -o adam.ipuexe
  expect_exit 0 "$IPURUN" train adam.ipuexe --data "$DATA" --steps-per-epoch $STEPS --weights init \
    --step-log steps.json --save-weights trained --progress none
  compare trained steps.json "$fixture" --weight-tol 2e-4 --loss-tol 1e-6
}

# Every other optimizer's fixture, trained with the ipucc flags its reference.json records
# (make_fixture.sh mlp_functional OPTIMIZER [VARIANT FLAG...]). Tolerances on the weights, from
# what was measured when written (docs/training.md, "Parity with PyTorch"):
#   SGD with Nesterov momentum or dampening (and weight decay), Adagrad: 4.7e-7 to 4.9e-7, as plain
#   SGD, checked at 1e-6;
#   AdamW, AdaMax, RMSProp: 6.6e-5, 6.8e-5 and 2.3e-4 (centered, momentum 0.5): each divides by a
#   running gradient size that can be near epsilon, as Adam does, checked at 5e-4.
# The losses agree to 9.1e-7 or better, checked at 2e-6.
test_other_optimizers_train_like_torch() {
  local entry
  for entry in sgd_nesterov:1e-6 sgd_dampening:1e-6 adagrad:1e-6 adamw:5e-4 adamax:5e-4 rmsprop_centered:5e-4; do
    train_like_fixture "${entry%%:*}"
    compare trained steps.json "$FIXTURE_OF_RUN" --weight-tol "${entry#*:}" --loss-tol 2e-6
  done
}

# Clipping by global norm and LAMB against float64 torch (torch.nn.utils.clip_grad_norm_; LAMB by
# hand from the paper's equations, as torch.optim has none): fixtures
# mlp_functional_b16_{sgd_clip,lamb_wd,lamb_clip} (make_fixture.sh mlp_functional sgd clip
# --global-clipnorm 1; ... lamb wd --weight-decay 0.01; ... lamb clip --weight-decay 0.01
# --global-clipnorm 1), trained with the flags each records. The clip is active at every step
# (the gradients' norm is 1.5 to 3.0), as the fixtures record. Measured when written
# (docs/training.md): SGD with clipping 4.8e-7 (checked at 1e-6); LAMB 6.1e-6 and 1.5e-5, both on
# a bias, its kernels within 1.1e-6 (checked at 5e-5: LAMB divides each gradient by its running
# size, as Adam does). Losses agree to 9.2e-8 or better (checked at 2e-6).
test_clipping_and_lamb_train_like_torch() {
  local entry
  for entry in sgd_clip:1e-6 lamb_wd:5e-5 lamb_clip:5e-5; do
    train_like_fixture "${entry%%:*}"
    [[ $FLAGS_OF_RUN != *clipnorm* ]] ||
      expect_json "$FIXTURE_OF_RUN/reference.json" "d['clipping']['clipped_steps'] == $STEPS" "clipped at every step"
    compare trained steps.json "$FIXTURE_OF_RUN" --weight-tol "${entry#*:}" --loss-tol 2e-6
  done
}

# Learning-rate schedules, streamed per update (docs/training.md), against float64 references with
# Keras's schedule formulas: SGD with momentum under step decay (Keras's ExponentialDecay with
# staircase; the Keras-form velocity by hand, since torch.optim.SGD scales its buffer by the current
# rate where Keras and ipucc scale each gradient), and Adam and LAMB (weight decay 0.01) with a
# cosine decay after a linear warm-up (torch.optim.Adam, and the reference's float64 Lamb, given
# each step's rate, as LambdaLR would). The schedule starts at 0: init/, written by a run without a
# schedule, holds no schedule position. Tolerances as the constant-rate runs of the same optimizers
# (measured when written: see the printed errors; LAMB's 5.6e-6, on a bias as lamb_wd's 6.1e-6).
test_schedules_train_like_torch() {
  local entry
  for entry in sgd_step_decay:1e-6 adam_cosine_warmup:2e-4 lamb_cosine_warmup:5e-5; do
    train_like_fixture "${entry%%:*}"
    python3 -c '
import json, sys
want = json.load(open(sys.argv[1]))["optimizer"]["learning_rates"]
got = json.load(open("steps.json"))["learning_rates"]
assert got == want, (got, want)' "$FIXTURE_OF_RUN/reference.json" || fail "${entry%%:*}: the streamed rates are not the reference's"
    compare trained steps.json "$FIXTURE_OF_RUN" --weight-tol "${entry#*:}" --loss-tol 2e-6
  done
}

# The trick is sound: starting from init/ trains exactly like starting from the executable's own
# initial weights (so the fixture, made from init/, describes what `ipurun train` does).
test_init_trick_matches_builtin_init() {
  compile_and_init
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data "$DATA" --steps-per-epoch $STEPS \
    --step-log builtin_steps.json --save-weights builtin --progress none
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data "$DATA" --steps-per-epoch $STEPS --weights init \
    --step-log trick_steps.json --save-weights trick --progress none
  compare trick trick_steps.json builtin --reference-step-log builtin_steps.json --weight-tol 1e-7 --loss-tol 1e-7
}

run_tests "$@"
