#!/usr/bin/env bash
# Sets up, builds, compiles the tutorial MLP, trains it on Fashion-MNIST (Debian's
# dataset-fashion-mnist, installed by setup.sh) and evaluates it on the test images.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
export IPUCC_CACHE_DIR=${IPUCC_CACHE_DIR:-$root/build/demo-cache}
bin=$root/build/cli
model=$root/models/mlp_functional.json
data=/usr/share/datasets/fashion-mnist
out=$root/build/demo
rm -rf "$out"  # the demo's own outputs of an earlier run: the tools replace only theirs (docs/outputs.md)
mkdir -p "$out"

echo "== ipucc compile $model (batch 32, 16 steps per execution)"
"$bin/ipucc" compile "$model" --batch-size 32 --steps-per-execution 16 -o "$out/mlp.ipuexe"
echo "== ipurun train: 3 epochs of Fashion-MNIST's 60,000 training images"
"$bin/ipurun" train "$out/mlp.ipuexe" --data "mnist:$data" --shuffle --seed 1 --epochs 3 \
  --history "$out/history.json" --save-weights "$out/mlp-weights"
echo "== ipurun evaluate on Fashion-MNIST's test images"
"$bin/ipurun" evaluate "$out/mlp.ipuexe" --data "mnist:$data:test" --weights "$out/mlp-weights" \
  --json >"$out/evaluate.json"
python3 - "$out/evaluate.json" <<'EOF'
import json, sys
result = json.load(open(sys.argv[1]))
print(f"test accuracy: {100 * result['accuracy']:.2f}% on {result['samples']:,} images "
      f"(loss {result['loss']:.4f})")
EOF
