#!/usr/bin/env bash
# Regenerates the committed torch reference fixtures of the losses on float labels,
# tests/data/torch_reference/losses/ (checked by tests/e2e/test_losses.sh): the data sets
# data/*.npy, then per fixture the initial weights (the tiny-learning-rate trick of
# torch_reference.py, verified with check-init) and 20 float64 PyTorch steps of batch 16.
# Needs the built tools and /usr/bin/python3 with torch and numpy (scripts/setup-peers.sh).
#
#   bash scripts/reference/make_loss_fixtures.sh        IPUCC/IPURUN default to build/cli/*
#
# Fixtures: NAME MODEL LABELS [LOSS]: LOSS is the `ipucc compile --loss` the fixture trains with
# (the model's own loss without it), recorded in reference.json as loss.ipucc_flags.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
IPUCC=${IPUCC:-$root/build/cli/ipucc}
IPURUN=${IPURUN:-$root/build/cli/ipurun}
PY=${TORCH_PYTHON:-/usr/bin/python3}
dir=$root/tests/data/torch_reference/losses
batch=16
steps=20

# 320 samples of 8 features; soft class probabilities over 4 classes (the first half one-hot),
# 4 independent binary labels, and 3 regression targets, all float32 and seeded.
"$PY" - "$dir/data" <<'EOF'
import sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(15)
n = 320
x = rng.standard_normal((n, 8)).astype(np.float32)
z = 2.0 * x @ rng.standard_normal((8, 4))
soft = np.exp(z - z.max(axis=1, keepdims=True))
soft /= soft.sum(axis=1, keepdims=True)
soft[: n // 2] = np.eye(4)[soft[: n // 2].argmax(axis=1)]
binary = (x @ rng.standard_normal((8, 4)) > 0).astype(np.float32)
targets = 2.0 * np.sin(x @ rng.standard_normal((8, 3))) + 0.1 * rng.standard_normal((n, 3))
np.save(out + "/x.npy", x)
np.save(out + "/soft.npy", soft.astype(np.float32))
np.save(out + "/binary.npy", binary)
np.save(out + "/targets.npy", targets.astype(np.float32))
EOF

work=$(mktemp -d "${TMPDIR:-/tmp}/loss-fixtures.XXXXXX")
trap 'rm -rf "$work"' EXIT
make_fixture() {
  local name=$1 model=$dir/$2.json labels=$dir/data/$3.npy loss=${4:-}
  local data="$dir/data/x.npy,$labels" loss_flags=() torch_flags=()
  [[ -z $loss ]] || { loss_flags=(--loss "$loss"); torch_flags=(--loss "$loss"); }
  rm -rf "$work/init" "$dir/$name"
  "$IPUCC" compile "$model" --batch-size $batch --learning-rate 1e-30 --momentum 0 "${loss_flags[@]}" \
    --no-cache -o "$work/trick.ipuexe" >/dev/null
  "$IPURUN" train "$work/trick.ipuexe" --data "npy:$data" --steps-per-epoch 1 --save-weights "$work/init" --progress none
  "$PY" "$root/scripts/reference/torch_reference.py" check-init --model "$model" --init "$work/init" \
    --batch-size $batch --trick-lr 1e-30 --data-npy "$data" "${torch_flags[@]}"
  "$PY" "$root/scripts/reference/torch_reference.py" train --model "$model" --init "$work/init" \
    --batch-size $batch --steps $steps --out "$dir/$name" --data-npy "$data" "${torch_flags[@]}" \
    --init-description "ipucc's initial weights of ${model#"$root"/} (--batch-size $batch), obtained with the trick"
}
make_fixture cce_logits classifier_logits soft
make_fixture cce_softmax classifier_softmax soft
make_fixture bce_logits classifier_logits binary binary_crossentropy
make_fixture bce_sigmoid classifier_sigmoid binary
make_fixture huber regression targets
make_fixture mse regression targets mse
make_fixture mae regression targets mae
du -sh "$dir"
