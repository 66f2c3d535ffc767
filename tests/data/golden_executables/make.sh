#!/usr/bin/env bash
# Writes the golden executables and what they predict, with the ipucc and ipurun of a build:
#   tests/data/golden_executables/make.sh [BUILD_DIR]     (default build/)
# tests/unit/runtime/format/test_golden_executables.cpp loads each, checks it and compares what it
# predicts on its input with the prediction written here, so a change that breaks the format (a
# codelet's parameters read differently, a field moved) fails a test instead of users' files.
# Rerun it only with a format version bump, whose test then checks old files are refused.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${1:-$root/build}
ipucc=$build/cli/ipucc ipurun=$build/cli/ipurun
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export IPUCC_CACHE_DIR=$work/cache

# A two-layer MLP trained with momentum, 2 replicas of 2 accumulated micro-batches (AllReduce),
# and the same net cut into two pipeline stages (Parallel, stage copies, stashes).
cat > "$work/mlp.json" <<'JSON'
{"type": "sequential", "input": {"name": "x", "shape": [6]},
 "layers": [{"name": "hidden", "type": "Dense", "units": 8, "activation": "relu"},
            {"name": "out", "type": "Dense", "units": 4}],
 "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
 "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9}}
JSON
sed 's/"optimizer"/"stage_assignment": [0, 1], "optimizer"/' "$work/mlp.json" > "$work/staged.json"
small=(--tiles-per-ipu 8 --batch-size 2)
# ipucc never replaces a file it did not write: these are this script's, so it removes them.
rm -f "$here"/*.ipuexe
"$ipucc" compile "$work/mlp.json" "${small[@]}" --gradient-accumulation 2 --replicas 2 --num-ipus 2 \
  --steps-per-execution 2 -o "$here/mlp_replicated.ipuexe" > /dev/null
"$ipucc" compile "$work/staged.json" "${small[@]}" --num-ipus 2 -o "$here/mlp_staged.ipuexe" > /dev/null 2>&1
# ONNX Gemm for inference: a model input and output of its own.
/usr/bin/python3 "$root/tests/e2e/e2e_data.py" gemm-onnx "$work/gemm.onnx" --in 6 --out 4 --seed 3 > /dev/null
"$ipucc" compile "$work/gemm.onnx" --mode infer --batch-size 2 -o "$here/gemm_infer.ipuexe" > /dev/null

# One input of 8 samples for all three, and what each predicts from it.
/usr/bin/python3 "$root/tests/e2e/e2e_data.py" npy "$here/input.npy" --shape 8,6 --fill random --seed 5
for name in mlp_replicated mlp_staged gemm_infer; do
  rm -f "$here/$name.predicted.npy"
  "$ipurun" predict "$here/$name.ipuexe" --input "$here/input.npy" --output "$here/$name.predicted.npy" > /dev/null
done
ls -l "$here"
