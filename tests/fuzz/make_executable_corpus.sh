#!/usr/bin/env bash
# Writes fuzz_executable's seeds into OUT_DIR: the payloads (unframed, so libFuzzer's mutations
# reach the message; the harness frames them) of small executables of every layout ipucc
# compiles: train, evaluate and predict programs; gradient accumulation with replicas
# (AllReduce); a pipelined model under each schedule, with recompute (Parallel, Copy, stash);
# convolution, pooling and batch norm; ONNX models with their own inputs and outputs, Gather,
# LayerNorm, pools and ConvTranspose.
#   tests/fuzz/make_executable_corpus.sh IPUCC HOSTILE_EXECUTABLE OUT_DIR
set -euo pipefail
ipucc=$1 hostile=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
models=$root/models
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
export IPUCC_CACHE_DIR=$work/cache
small=(--tiles-per-ipu 16 --batch-size 2)
n=0
seed() {  # MODEL ARGS...: compiles MODEL and writes its payload as the next seed
  local model=$1
  shift
  "$ipucc" compile "$model" "${small[@]}" "$@" -o "$work/seed.ipuexe" > /dev/null
  "$hostile" --payload "$work/seed.ipuexe" "$out/seed_$n.pb"
  n=$((n + 1))
}
seed "$models/mlp_functional.json"
seed "$models/mlp_functional.json" --mode infer --steps-per-execution 2
seed "$models/mlp_functional.json" --gradient-accumulation 2 --replicas 2 --num-ipus 2
seed "$models/mlp_residual.json"
seed "$models/cnn_sequential.json"
for schedule in grouped interleaved sequential; do
  seed "$models/mlp_sequential_staged.json" --num-ipus 2 --schedule "$schedule"
done
seed "$models/mlp_sequential_staged.json" --num-ipus 2 --recompute
data() { /usr/bin/python3 "$root/tests/e2e/e2e_data.py" "$@"; }
data gemm-onnx "$work/gemm.onnx" --in 6 --out 4 > /dev/null
seed "$work/gemm.onnx" --mode infer
seed "$work/gemm.onnx" --loss sparse_categorical_crossentropy
echo "$n seeds in $out"
