#!/usr/bin/env bash
# ipurun train's validation data and Keras callbacks (docs/training.md, "fit as Keras runs it"):
# val_loss is what evaluate gives for the same weights, early stopping follows Keras's rule on the
# values it saw and restores the best epoch's weights, checkpoints and the CSV log hold what the
# history holds, and every bad argument is a usage error before any training.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUIET=(--progress none)

compile_mlp() {
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional.json" --tiles-per-ipu 64 --batch-size 32 \
    --steps-per-execution 4 --optimizer adam --learning-rate 0.003 -o mlp.ipuexe
}

test_validation_loss_is_evaluate_of_the_epochs_weights() {
  compile_mlp
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:2048 --validation-data synthetic:500 --epochs 2 \
    --model-checkpoint 'filepath=epoch{epoch}' --history history.json --json "${QUIET[@]}"
  expect_json "$STDOUT" 'all({"val_loss", "val_accuracy", "val_samples"} <= set(e) for e in d["epochs"])'
  expect_json "$STDOUT" 'all(e["val_samples"] == 500 for e in d["epochs"]) and d["early_stopping"] is None'
  expect_json history.json 'len(d["val_loss"]) == 2 and len(d["val_accuracy"]) == 2'
  local epoch
  for epoch in 1 2; do
    expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:500 --weights "epoch$epoch" --json "${QUIET[@]}"
    expect_eq "$(json_get "$STDOUT" 'repr(d["loss"])')" "$(json_get history.json "repr(d['val_loss'][$epoch - 1])")" \
      "val_loss of epoch $epoch and evaluate of its checkpoint"
  done
}

test_validation_split_keeps_the_last_samples() {
  compile_mlp
  # Keras keeps floor(2048 · 0.75) = 1536 samples to train on (48 steps of 32) and validates on
  # the last 512: the same run as training on the first 1536 and validating on the last 512.
  /usr/bin/python3 - <<'PY' || fail "numpy could not write the data set"
import numpy as np
rng = np.random.default_rng(7)
x = rng.random((2048, 28, 28, 1), dtype=np.float32)
y = rng.integers(0, 10, 2048).astype(np.int32)
np.save("x.npy", x); np.save("y.npy", y)
np.save("x_train.npy", x[:1536]); np.save("y_train.npy", y[:1536])
np.save("x_val.npy", x[1536:]); np.save("y_val.npy", y[1536:])
PY
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data npy:x.npy,y.npy --validation-split 0.25 --epochs 2 \
    --history split.json "${QUIET[@]}"
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data npy:x_train.npy,y_train.npy \
    --validation-data npy:x_val.npy,y_val.npy --epochs 2 --history given.json --json "${QUIET[@]}"
  expect_json "$STDOUT" 'd["epochs"][0]["samples"] == 1536 and d["epochs"][0]["val_samples"] == 512'
  expect_eq "$(json_get split.json '[d[k] for k in ("loss", "val_loss", "val_accuracy")]')" \
    "$(json_get given.json '[d[k] for k in ("loss", "val_loss", "val_accuracy")]')" "split and given validation"
}

test_early_stopping_follows_keras_and_restores_the_best_weights() {
  compile_mlp
  # A learning rate this large makes val_loss wander, so patience decides.
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional.json" --tiles-per-ipu 64 --batch-size 32 \
    --steps-per-execution 4 --optimizer sgd --learning-rate 0.5 -o wild.ipuexe
  expect_exit 0 "$IPURUN" train wild.ipuexe --data synthetic:1024 --validation-data synthetic:256 --epochs 12 \
    --early-stopping patience=1,restore_best_weights --model-checkpoint 'filepath=ck{epoch:02d}' \
    --csv-logger filename=log.csv --save-weights final --history history.json --json --progress plain
  local out=$STDOUT
  # Keras's rule, replayed on the values ipurun saw: the epoch it stops at and the best epoch.
  "$PYTHON" - history.json "$out" <<'PY' || fail "early stopping differs from Keras's rule"
import json, math, sys
history, out = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
best, wait, best_epoch, stopped = math.inf, 0, None, None
for epoch, value in enumerate(history["val_loss"]):
    if best_epoch is None: best_epoch = epoch
    wait += 1
    if value < best:
        best, best_epoch, wait = value, epoch, 0
        continue
    if wait >= 1 and epoch > 0:
        stopped = epoch
        break
es = out["early_stopping"]
assert es["best_epoch"] == best_epoch + 1, (es, best_epoch)
assert es["stopped_epoch"] == (None if stopped is None else stopped + 1), (es, stopped)
assert len(history["val_loss"]) == (12 if stopped is None else stopped + 1)
assert es["restored_best_weights"] is True
PY
  local best
  best=$(json_get "$out" 'd["early_stopping"]["best_epoch"]')
  # The saved weights are the best epoch's checkpoint, tensor for tensor.
  "$PYTHON" - final "$(printf 'ck%02d' "$best")" <<'PY' || fail "the saved weights are not the best epoch's"
import json, os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
ia, ib = json.load(open(os.path.join(a, "index.json"))), json.load(open(os.path.join(b, "index.json")))
assert ia and set(ia) == set(ib)
for name in ia:
    assert np.array_equal(np.load(os.path.join(a, ia[name])), np.load(os.path.join(b, ib[name]))), name
PY
  # The CSV log has Keras's columns and the history's values, epochs counted from 0.
  "$PYTHON" - log.csv history.json <<'PY' || fail "CSV log differs from the history"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
h = json.load(open(sys.argv[2]))
assert list(rows[0]) == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"], list(rows[0])
assert [int(r["epoch"]) for r in rows] == list(range(len(h["loss"])))
for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
    assert [float(r[key]) for r in rows] == h[key], key
PY
}

# expect_keras_reductions HISTORY JSON LR FACTOR MIN_DELTA: Keras's ReduceLROnPlateau rule (patience
# 1) replayed on the monitored values ipurun saw gives the rate each epoch trained with, and at
# least one reduction.
expect_keras_reductions() {
  "$PYTHON" - "$@" <<'PY' || fail "the learning rates differ from Keras's rule"
import json, math, sys
h, out = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
lr, factor, min_delta = (float(a) for a in sys.argv[3:6])
monitor = "val_loss" if "val_loss" in h else "loss"
best, wait, want, reductions = math.inf, 0, [], []
for epoch, value in enumerate(h[monitor]):
    want.append(lr)
    if value < best - min_delta:
        best, wait = value, 0
        continue
    wait += 1
    if wait >= 1:
        lr, wait = lr * factor, 0
        reductions.append({"epoch": epoch + 1, "learning_rate": lr})
assert h["learning_rate"] == want, (h["learning_rate"], want)
assert out["learning_rate_reductions"] == reductions and reductions, out["learning_rate_reductions"]
PY
}

test_reduce_lr_on_plateau_follows_keras() {
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional.json" --tiles-per-ipu 64 --batch-size 32 \
    --steps-per-execution 4 --optimizer sgd --learning-rate 0.5 -o wild.ipuexe
  expect_exit 0 "$IPURUN" train wild.ipuexe --data synthetic:1024 --validation-data synthetic:256 --epochs 8 \
    --reduce-lr-on-plateau factor=0.5,patience=1 --history history.json --json "${QUIET[@]}"
  expect_keras_reductions history.json "$STDOUT" 0.5 0.5 1e-4
  # LAMB streams its learning rate as every optimizer does (a min_delta no epoch after the first
  # beats makes every second epoch a plateau). The rate is exact in float32, as Keras compares it.
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional.json" --tiles-per-ipu 64 --batch-size 32 --optimizer lamb \
    --learning-rate 0.0625 -o lamb.ipuexe
  expect_exit 0 "$IPURUN" train lamb.ipuexe --data synthetic:256 --epochs 4 \
    --reduce-lr-on-plateau monitor=loss,factor=0.5,patience=1,min_delta=10 --history lamb_history.json --json \
    "${QUIET[@]}"
  expect_keras_reductions lamb_history.json "$STDOUT" 0.0625 0.5 10
  # A schedule sets the rate itself: refused.
  expect_error 2 "--reduce-lr-on-plateau: a learning-rate schedule" -- "$IPURUN" train wild.ipuexe \
    --data synthetic:256 --reduce-lr-on-plateau monitor=loss --lr-schedule exponential:decay_steps=10,decay_rate=0.5
  expect_error 2 "factor must be in (0, 1)" -- "$IPURUN" train wild.ipuexe --data synthetic:256 \
    --reduce-lr-on-plateau monitor=loss,factor=2
}

test_resuming_at_the_initial_epoch_equals_one_run() {
  compile_mlp
  local common=(--data synthetic:1024 --shuffle --seed 5 "${QUIET[@]}")
  expect_exit 0 "$IPURUN" train mlp.ipuexe "${common[@]}" --epochs 3 --save-weights whole --history whole.json
  expect_exit 0 "$IPURUN" train mlp.ipuexe "${common[@]}" --epochs 1 --save-weights first
  expect_exit 0 "$IPURUN" train mlp.ipuexe "${common[@]}" --weights first --initial-epoch 1 --epochs 3 \
    --save-weights resumed --history resumed.json
  expect_json resumed.json '[e["epoch"] for e in d["epochs"]] == [2, 3]' "epochs numbered as one run numbers them"
  expect_eq "$(json_get resumed.json 'd["loss"]')" "$(json_get whole.json 'd["loss"][1:]')" "losses of epochs 2 and 3"
  "$PYTHON" - whole resumed <<'PY' || fail "the resumed run's weights and Adam state differ from one run's"
import json, os, sys
a, b = sys.argv[1], sys.argv[2]
ia, ib = json.load(open(os.path.join(a, "index.json"))), json.load(open(os.path.join(b, "index.json")))
assert set(ia) == set(ib) and any("adam" in n for n in ia)
for name in ia:
    assert open(os.path.join(a, ia[name]), "rb").read() == open(os.path.join(b, ib[name]), "rb").read(), name
PY
  expect_error 2 "--initial-epoch 3 leaves no epoch to train" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:256 --initial-epoch 3 --epochs 3
}

test_callback_flags_are_checked_before_training() {
  compile_mlp
  expect_error 2 "--early-stopping: monitor 'val_loss'" "--validation-data" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:256 --early-stopping patience=2
  expect_error 2 "'patience_' is not an argument" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:256 --early-stopping monitor=loss,patience_=2
  expect_error 2 "patience='two'" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:256 --early-stopping monitor=loss,patience=two
  expect_error 2 "{val_loss}" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:256 --model-checkpoint 'filepath=ck{val_loss}'
  expect_error 2 "needs filename" -- "$IPURUN" train mlp.ipuexe --data synthetic:256 --csv-logger separator=';'
  expect_exit 2 "$IPURUN" train mlp.ipuexe --data synthetic:256 --validation-split 0.5 --validation-data synthetic:64
  expect_error 2 "leaves nothing to train on" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:256 --validation-split 0.999
  # A user's file in the CSV log's place is never replaced, and nothing trains.
  echo "my notes" > notes.csv
  expect_error 6 "notes.csv" -- "$IPURUN" train mlp.ipuexe --data synthetic:256 --csv-logger filename=notes.csv
  expect_eq "$(cat notes.csv)" "my notes"
  # With the defaults (monitor val_loss, patience 0) a bare flag is enough.
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:256 --validation-split 0.25 --epochs 1 --early-stopping
}

run_tests "$@"
