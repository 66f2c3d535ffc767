#!/usr/bin/env bash
# Regenerates a committed torch reference fixture tests/data/torch_reference/<MODEL>_b16 for
# models/<MODEL>.json (checked by tests/e2e/test_torch_parity.sh). Needs the built tools and the
# peers (Debian's python3-torch and numpy at /usr/bin/python3: scripts/setup-peers.sh).
#
#   bash scripts/reference/make_fixture.sh [MODEL [OPTIMIZER [VARIANT FLAG...]]]
#       MODEL: default mlp_functional; mlp_residual. OPTIMIZER: the spec's (SGD, the default), or
#       sgd, adam, adamw, rmsprop, adagrad, adamax, lamb at Keras's defaults (ipucc --optimizer; fixture
#       <MODEL>_b16_<OPTIMIZER>). VARIANT FLAG...: the fixture <MODEL>_b16_<OPTIMIZER>_<VARIANT>
#       trained with those ipucc compile flags (which torch_reference.py takes under the same
#       names), recorded in its reference.json as optimizer.ipucc_flags, e.g.
#       `make_fixture.sh mlp_functional sgd nesterov --nesterov --weight-decay 0.001`.
#       IPUCC/IPURUN default to build/cli/*
#
# The initial weights come from the tiny-learning-rate trick (see torch_reference.py): compile the
# model with --learning-rate 1e-30 --momentum 0, train one step of the same batch size on the first
# batch and save; check-init verifies that this checkpoint holds the executable's initial weights.
# They are not stored: the e2e test regenerates them the same way.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
IPUCC=${IPUCC:-$root/build/cli/ipucc}
IPURUN=${IPURUN:-$root/build/cli/ipurun}
PY=${TORCH_PYTHON:-/usr/bin/python3}
name=${1:-mlp_functional}
optimizer=${2:-}
variant=${3:-}
flags=("${@:4}")
model=$root/models/$name.json
batch=16
steps=20
out=$root/tests/data/torch_reference/${name}_b16${optimizer:+_$optimizer}${variant:+_$variant}
update_args=()
[[ -z $optimizer ]] || update_args=(--update "$optimizer" --ipucc-flags "--optimizer $optimizer${flags[*]:+ ${flags[*]}}")
update_args+=("${flags[@]}")

work=$(mktemp -d "${TMPDIR:-/tmp}/torch-fixture.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$IPUCC" compile "$model" --batch-size $batch --learning-rate 1e-30 --momentum 0 --no-cache -o "$work/trick.ipuexe" >/dev/null
"$IPURUN" train "$work/trick.ipuexe" --data synthetic:$batch --steps-per-epoch 1 --save-weights "$work/init" --progress none
"$PY" "$root/scripts/reference/torch_reference.py" check-init --model "$model" --init "$work/init" --batch-size $batch --trick-lr 1e-30

rm -rf "$out"
"$PY" "$root/scripts/reference/torch_reference.py" train --model "$model" --init "$work/init" \
  --batch-size $batch --steps $steps --out "$out" "${update_args[@]}" \
  --init-description "ipucc's initial weights of models/$name.json (--batch-size $batch), obtained with the trick: compile with --learning-rate 1e-30 --momentum 0, ipurun train --data synthetic:$batch --steps-per-epoch 1 --save-weights init"
du -sh "$out"
