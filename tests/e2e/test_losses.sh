#!/usr/bin/env bash
# The losses on float labels (docs/training.md): categorical and binary cross-entropy (from logits
# and from probabilities), mean squared and absolute error and Huber, chosen by a JSON spec's
# "loss" or `ipucc compile --loss`, each trained 20 steps (batch 16, SGD lr 0.05 momentum 0.9) on
# the committed data of tests/data/torch_reference/losses and compared with a float64 PyTorch run
# from the same initial weights (scripts/reference/make_loss_fixtures.sh); plus the flags, the
# cache key and the errors; and the metrics (--metrics, a spec's "metrics"), checked against the
# same metrics recomputed from the predictions. Needs only plain python3.
#
# Tolerances: every tensor's max |a-b| / max|b| <= 1e-6 and every step's loss |a-b|/|b| <= 1e-6.
# Measured when written: weights 2.3e-7 to 9.6e-7 (cce_logits' out/bias, the closest to the
# bound), losses 6.6e-8 or better; the largest errors are printed even when the tests pass.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

exec 3>&1

FIXTURES=$SRC/tests/data/torch_reference/losses
DATA=$FIXTURES/data
COMPARE=$SRC/scripts/reference/compare_to_reference.py
BATCH=16
STEPS=20
QUIET=(--progress none)

# Trains MODEL (a spec of $FIXTURES) on LABELS like fixture NAME and compares with it, weights to
# WEIGHT_TOL (1e-6 unless set) of their largest magnitude and losses to 1e-6; the rest are ipucc
# compile flags (the fixture's loss.ipucc_flags).
train_like_torch() {
  local name=$1 model=$FIXTURES/$2.json labels=$DATA/$3.npy weight_tol=${WEIGHT_TOL:-1e-6}
  shift 3
  local data="npy:$DATA/x.npy,$labels"
  expect_json "$FIXTURES/$name/reference.json" "d['steps'] == $STEPS and d['loss']['ipucc_flags'] == '$*'" \
    "fixture $name was made with the flags '$*'"
  rm -rf init trained
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH "$@" --no-cache -o model.ipuexe
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --learning-rate 1e-30 --momentum 0 "$@" \
    --no-cache -o trick.ipuexe
  expect_exit 0 "$IPURUN" train trick.ipuexe --data "$data" --steps-per-epoch 1 --save-weights init "${QUIET[@]}"
  expect_exit 0 "$IPURUN" train model.ipuexe --data "$data" --steps-per-epoch $STEPS --weights init \
    --step-log steps.json --save-weights trained "${QUIET[@]}"
  E2E_CMD="compare_to_reference.py trained vs $name"
  E2E_RC=0
  python3 "$COMPARE" --reference "$FIXTURES/$name" --checkpoint trained --step-log steps.json \
    --weight-tol "$weight_tol" --loss-tol 1e-6 > "$STDOUT" 2> "$STDERR" < /dev/null || E2E_RC=$?
  grep -E '^(max weight error|max loss error)' "$STDOUT" | sed "s/^/      $name: /" >&3 || true
  if ((E2E_RC != 0)); then
    cat "$STDOUT" "$STDERR"
    E2E_CMD=
    fail "compare_to_reference.py exited $E2E_RC: $name differs from PyTorch"
  fi
}

# Cross-entropy of softmax probabilities (not logits) is the worst conditioned of the losses: its
# out/bias ends 8 to 12 float32 ulps from float64 torch's after 20 steps, as OpenBLAS's kernels
# for the CPU order their sums (relative 6.96e-7 with Prescott's, 8.70e-7 with Haswell's,
# 1.044e-6 with SkylakeX's). 16 ulps of that weight (0.043) bound them all.
test_categorical_crossentropy_trains_like_torch() {
  train_like_torch cce_logits classifier_logits soft
  WEIGHT_TOL=1.4e-6 train_like_torch cce_softmax classifier_softmax soft
}

test_binary_crossentropy_trains_like_torch() {
  train_like_torch bce_logits classifier_logits binary --loss binary_crossentropy
  train_like_torch bce_sigmoid classifier_sigmoid binary
}

test_regression_losses_train_like_torch() {
  train_like_torch huber regression targets
  train_like_torch mse regression targets --loss mse
  train_like_torch mae regression targets --loss mae
}

# The cross-entropies report Keras's accuracy for them (History, progress line, --json); the
# regression losses report none.
test_accuracy_only_where_the_loss_has_one() {
  expect_exit 0 "$IPUCC" compile "$FIXTURES/classifier_logits.json" --batch-size $BATCH --no-cache -o cce.ipuexe
  expect_exit 0 "$IPURUN" train cce.ipuexe --data "npy:$DATA/x.npy,$DATA/soft.npy" --epochs 2 --history h.json \
    --json --progress plain
  expect_stderr_contains "accuracy: "
  expect_json "$STDOUT" "0 <= d['final']['accuracy'] <= 1 and all('accuracy' in e for e in d['epochs'])"
  expect_json h.json "len(d['accuracy']) == 2 and d['accuracy'][1] > 0.5" "accuracy rises above chance"
  expect_exit 0 "$IPURUN" evaluate cce.ipuexe --data "npy:$DATA/x.npy,$DATA/soft.npy" --json
  expect_json "$STDOUT" "0 <= d['accuracy'] <= 1 and d['samples'] == 320"

  expect_exit 0 "$IPUCC" compile "$FIXTURES/regression.json" --batch-size $BATCH --loss mse --no-cache -o mse.ipuexe
  expect_exit 0 "$IPURUN" train mse.ipuexe --data "npy:$DATA/x.npy,$DATA/targets.npy" --epochs 2 --history h.json \
    --json --progress plain
  expect_stderr_not_contains "accuracy"
  expect_json "$STDOUT" "'accuracy' not in d['final'] and d['final']['loss'] < d['epochs'][0]['loss']"
  expect_json h.json "'accuracy' not in d and len(d['loss']) == 2"
  expect_exit 0 "$IPURUN" evaluate mse.ipuexe --data "npy:$DATA/x.npy,$DATA/targets.npy"
  expect_stdout_contains "loss: "
  grep -q accuracy "$STDOUT" && fail "evaluate printed an accuracy for mse"
  true
}

# Evaluate pads the last step; the padded rows add nothing: the mean over 300 samples at batch 16
# (19 steps, the last with 12 padded rows) equals the mean over the same samples at batch 20.
test_evaluate_counts_only_real_rows() {
  e2e_data npy x300.npy --shape 300,8 --fill const:0.25
  python3 - "$DATA/targets.npy" <<'EOF'
import struct, sys
raw = open(sys.argv[1], "rb").read()
header_len = struct.unpack("<H", raw[8:10])[0]
body = raw[10 + header_len:][:300 * 3 * 4]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (300, 3), }"
header += " " * (63 - len(header)) + "\n"
open("t300.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body)
EOF
  for b in 16 20; do
    expect_exit 0 "$IPUCC" compile "$FIXTURES/regression.json" --batch-size $b --no-cache -o r$b.ipuexe
    expect_exit 0 "$IPURUN" evaluate r$b.ipuexe --data npy:x300.npy,t300.npy --json
    json_get "$STDOUT" "d['loss']" > loss$b
  done
  python3 -c 'import sys; a, b = (float(open(f).read()) for f in ("loss16", "loss20")); sys.exit(abs(a - b) > 1e-6 * abs(b))' ||
    fail "evaluate's loss depends on the padding: $(cat loss16) at batch 16, $(cat loss20) at batch 20"
}

# Integer labels feed a one-output model as numbers (binary 0/1 labels, integer targets).
test_integer_labels_feed_a_one_output_model() {
  python3 - "$FIXTURES/classifier_sigmoid.json" <<'EOF'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["layers"][-1]["units"] = 1
json.dump(spec, open("binary1.json", "w"))
EOF
  e2e_data npy x.npy --shape 64,8 --fill mod:7
  e2e_data npy y.npy --dtype i8 --shape 64 --fill mod:2
  expect_exit 0 "$IPUCC" compile binary1.json --batch-size 8 --no-cache -o b.ipuexe
  expect_exit 0 "$IPURUN" train b.ipuexe --data npy:x.npy,y.npy --json "${QUIET[@]}"
  expect_json "$STDOUT" "0 <= d['final']['accuracy'] <= 1"
}

# The loss and its arguments are part of the cache key: each --loss is its own entry, an alias
# ("mse") is the entry of the name it stands for, and the spec's own loss named again is a hit.
test_loss_is_in_the_cache_key() {
  local model=$FIXTURES/regression.json
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --json
  local huber
  huber=$(json_get "$STDOUT" "d['key']")
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --loss huber --json
  expect_eq "$(json_get "$STDOUT" "d['key']")" "$huber" "the key of the spec's own loss named"
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --loss mean_squared_error --json
  local mse
  mse=$(json_get "$STDOUT" "d['key']")
  expect_ne "$mse" "$huber" "the keys of huber and mse"
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --loss mse --json
  expect_eq "$(json_get "$STDOUT" "d['key']")" "$mse" "the keys of mse and mean_squared_error"
  # Huber's delta lives in the spec, whose text the key covers.
  sed 's/"delta": 0.5/"delta": 0.25/' "$model" > delta.json
  expect_exit 0 "$IPUCC" compile delta.json --batch-size $BATCH --json
  expect_ne "$(json_get "$STDOUT" "d['key']")" "$huber" "the keys of two deltas"
}

test_bad_loss_names_and_arguments() {
  local model=$FIXTURES/regression.json
  expect_error 2 "--loss must be sparse_categorical_crossentropy, categorical_crossentropy" "got 'hinge'" -- \
    "$IPUCC" compile "$model" --loss hinge --no-cache -o x.ipuexe
  sed 's/"type": "huber"/"type": "hinge"/' "$model" > hinge.json
  expect_error 4 "hinge.json" "unsupported loss \"hinge\"" "binary_crossentropy" -- \
    "$IPUCC" compile hinge.json --no-cache -o x.ipuexe
  sed 's/"delta": 0.5/"delta": -1/' "$model" > negative.json
  expect_error 3 "'delta' must be a positive number" -- "$IPUCC" compile negative.json --no-cache -o x.ipuexe
  sed 's/"delta": 0.5/"from_logits": true/' "$model" > logits.json
  expect_error 3 "unknown argument 'from_logits' for huber" -- "$IPUCC" compile logits.json --no-cache -o x.ipuexe
}

test_bad_label_shapes() {
  expect_exit 0 "$IPUCC" compile "$FIXTURES/classifier_logits.json" --batch-size $BATCH --no-cache -o cce.ipuexe
  # Three targets per sample for four outputs.
  expect_error 3 "targets.npy: labels have shape [3] per sample" "takes 4 per sample" -- \
    "$IPURUN" train cce.ipuexe --data "npy:$DATA/x.npy,$DATA/targets.npy" "${QUIET[@]}"
  expect_error 3 "takes 4 per sample" -- \
    "$IPURUN" evaluate cce.ipuexe --data "npy:$DATA/x.npy,$DATA/targets.npy" "${QUIET[@]}"
  # Class indices for a loss on one-hot rows.
  e2e_data npy y.npy --dtype i8 --shape 320 --fill mod:4
  expect_error 3 "has class indices" "one-hot rows for categorical_crossentropy" -- \
    "$IPURUN" train cce.ipuexe --data "npy:$DATA/x.npy,y.npy" "${QUIET[@]}"
  # Float labels for sparse categorical cross-entropy.
  sed 's/"categorical_crossentropy"/"sparse_categorical_crossentropy"/' "$FIXTURES/classifier_logits.json" > sparse.json
  expect_exit 0 "$IPUCC" compile sparse.json --batch-size $BATCH --no-cache -o sparse.ipuexe
  expect_error 3 "soft.npy" "has float labels" "takes integer class indices" -- \
    "$IPURUN" train sparse.ipuexe --data "npy:$DATA/x.npy,$DATA/soft.npy" "${QUIET[@]}"
}

# Recomputes evaluate's metrics from the predictions of the same weights (plain python, no numpy):
# metrics.py PREDICTIONS.npy LABELS.npy EVALUATE.json K checks accuracy, top-k (ties count), mse and
# mae, whichever EVALUATE.json has, to 1e-6.
write_metrics_checker() {
  cat > metrics.py <<'EOF'
import ast, json, struct, sys

def read_npy(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<H", raw[8:10])[0]
    header = ast.literal_eval(raw[10:10 + n].decode())
    shape, code = header["shape"], header["descr"]
    count = 1
    for d in shape:
        count *= d
    fmt = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i"}[code]
    values = struct.unpack("<%d%s" % (count, fmt), raw[10 + n:10 + n + count * struct.calcsize(fmt)])
    row = count // shape[0]
    return [list(values[i * row:(i + 1) * row]) for i in range(shape[0])]

preds, labels = read_npy(sys.argv[1]), read_npy(sys.argv[2])
got, k = json.load(open(sys.argv[3])), int(sys.argv[4])
want = {}
first_max = lambda row: row.index(max(row))
if len(labels[0]) == 1 and len(preds[0]) > 1:  # class indices
    t = [int(r[0]) for r in labels]
    want["accuracy"] = sum(first_max(p) == c for p, c in zip(preds, t)) / len(t)
    want["sparse_top_k_categorical_accuracy"] = sum(sum(x > p[c] for x in p) < k for p, c in zip(preds, t)) / len(t)
else:
    want["accuracy"] = sum(first_max(p) == first_max(y) for p, y in zip(preds, labels)) / len(labels)
    want["mse"] = sum(sum((a - b) ** 2 for a, b in zip(p, y)) / len(p) for p, y in zip(preds, labels)) / len(labels)
    want["mae"] = sum(sum(abs(a - b) for a, b in zip(p, y)) / len(p) for p, y in zip(preds, labels)) / len(labels)
checked = 0
for name, value in want.items():
    if name in got:
        checked += 1
        if abs(got[name] - value) > 1e-6 * max(1.0, abs(value)):
            sys.exit("%s: evaluate says %r, the predictions give %r" % (name, got[name], value))
print("checked %d metrics" % checked)
sys.exit(0 if checked else "no metric to check")
EOF
}

# --metrics (or the spec's "metrics") puts every metric in the progress line, History and --json
# of train and evaluate; evaluate's values equal those recomputed from the predictions.
test_metrics_everywhere_and_right() {
  write_metrics_checker
  # Class indices 0..3 for the sparse loss.
  e2e_data npy y.npy --dtype i8 --shape 320 --fill mod:4
  sed 's/"categorical_crossentropy"/"sparse_categorical_crossentropy"/' "$FIXTURES/classifier_logits.json" > sparse.json
  expect_exit 0 "$IPUCC" compile sparse.json --batch-size $BATCH --metrics accuracy,top_k:2 --no-cache -o sparse.ipuexe
  expect_exit 0 "$IPURUN" train sparse.ipuexe --data "npy:$DATA/x.npy,y.npy" --epochs 2 --history h.json \
    --save-weights w --json --progress plain
  expect_stderr_contains " - accuracy: "
  expect_stderr_contains " - sparse_top_k_categorical_accuracy: "
  expect_json "$STDOUT" "all({'accuracy', 'sparse_top_k_categorical_accuracy'} <= set(e) for e in d['epochs'] + [d['final']])"
  expect_json h.json "len(d['accuracy']) == 2 and len(d['sparse_top_k_categorical_accuracy']) == 2"
  expect_exit 0 "$IPURUN" evaluate sparse.ipuexe --weights w --data "npy:$DATA/x.npy,y.npy" --json
  cp "$STDOUT" eval.json
  expect_exit 0 "$IPURUN" evaluate sparse.ipuexe --weights w --data "npy:$DATA/x.npy,y.npy"
  expect_stdout_contains " - sparse_top_k_categorical_accuracy: "
  expect_exit 0 "$IPURUN" predict sparse.ipuexe --weights w --data "npy:$DATA/x.npy" --output p.npy "${QUIET[@]}"
  expect_exit 0 python3 metrics.py p.npy y.npy eval.json 2
  expect_stdout_contains "checked 2 metrics"

  # Float labels: accuracy, mse and mae of the logits against the soft labels (the spec's list).
  python3 - "$FIXTURES/classifier_logits.json" <<'EOF'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["metrics"] = ["accuracy", "mean_squared_error", {"type": "mae"}]
json.dump(spec, open("soft.json", "w"))
EOF
  expect_exit 0 "$IPUCC" compile soft.json --batch-size $BATCH --no-cache -o soft.ipuexe
  expect_exit 0 "$IPURUN" train soft.ipuexe --data "npy:$DATA/x.npy,$DATA/soft.npy" --history h.json \
    --save-weights w2 --progress plain
  expect_stderr_contains " - mse: "
  expect_json h.json "set(d) >= {'loss', 'accuracy', 'mse', 'mae'}"
  expect_exit 0 "$IPURUN" evaluate soft.ipuexe --weights w2 --data "npy:$DATA/x.npy,$DATA/soft.npy" --json
  cp "$STDOUT" eval.json
  expect_exit 0 "$IPURUN" predict soft.ipuexe --weights w2 --data "npy:$DATA/x.npy" --output p.npy "${QUIET[@]}"
  expect_exit 0 python3 metrics.py p.npy "$DATA/soft.npy" eval.json 1
  expect_stdout_contains "checked 3 metrics"
}

# --metrics is part of the cache key; a metric the loss's labels cannot give is refused.
test_bad_metrics() {
  local model=$FIXTURES/regression.json
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --json
  local plain
  plain=$(json_get "$STDOUT" "d['key']")
  expect_exit 0 "$IPUCC" compile "$model" --batch-size $BATCH --metrics mse --json
  expect_ne "$(json_get "$STDOUT" "d['key']")" "$plain" "the keys with and without --metrics"
  expect_error 2 "--metrics: unknown metric 'f1'" -- "$IPUCC" compile "$model" --metrics mse,f1 --no-cache -o x.ipuexe
  expect_error 3 "metric 'accuracy' is the accuracy of a cross-entropy; the loss is huber" -- \
    "$IPUCC" compile "$model" --metrics accuracy --no-cache -o x.ipuexe
  expect_error 3 "metric 'sparse_top_k_categorical_accuracy' needs class indices" -- \
    "$IPUCC" compile "$FIXTURES/classifier_logits.json" --metrics top_k:3 --no-cache -o x.ipuexe
}

run_tests "$@"
