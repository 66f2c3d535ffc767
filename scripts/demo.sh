#!/usr/bin/env bash
# Sets up, builds, compiles the tutorial MLP and trains it on the synthetic MNIST set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
export IPUCC_CACHE_DIR=${IPUCC_CACHE_DIR:-$root/build/demo-cache}
bin=$root/build/cli
model=$root/models/mlp_functional.json

echo "== ipucc compile $model (batch 32, 16 steps per execution)"
"$bin/ipucc" compile "$model" --batch-size 32 --steps-per-execution 16 -o "$root/build/mlp.ipuexe"
echo "== ipurun train: 3 epochs of synthetic MNIST"
"$bin/ipurun" train "$root/build/mlp.ipuexe" --data synthetic --epochs 3 --history "$root/build/history.json" \
  --save-weights "$root/build/mlp-weights"
echo "== ipurun evaluate with the trained weights"
"$bin/ipurun" evaluate "$root/build/mlp.ipuexe" --data synthetic:10000 --weights "$root/build/mlp-weights"
