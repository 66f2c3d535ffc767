#!/usr/bin/env bash
# Writes fuzz_executable's seeds into OUT_DIR: the payloads (unframed, so libFuzzer's mutations
# reach the message; the harness frames them) of small executables of every layout ipucc
# compiles: train, evaluate and predict programs; gradient accumulation with replicas
# (AllReduce); a pipelined model under each schedule, with recompute (Parallel, Copy, stash);
# convolution, pooling and batch norm and their gradients; ONNX models with their own inputs and
# outputs. Given ONNX's node tests (CONFORMANCE_DIR, as scripts/conformance.sh runs them), also
# one inference seed for every codelet those models use that no seed uses yet.
#   tests/fuzz/make_executable_corpus.sh IPUCC HOSTILE_EXECUTABLE OUT_DIR [CONFORMANCE_DIR]
set -euo pipefail
ipucc=$1 hostile=$2 out=$3 conformance=${4:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
models=$root/models
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
export IPUCC_CACHE_DIR=$work/cache
small=(--tiles-per-ipu 16 --batch-size 2)
n=0
declare -A covered  # codelet ids the seeds so far use
keep() {  # writes $work/seed.ipuexe's payload as the next seed
  local id
  for id in $("$hostile" --codelets "$work/seed.ipuexe"); do covered[$id]=1; done
  "$hostile" --payload "$work/seed.ipuexe" "$out/seed_$n.pb"
  n=$((n + 1))
}
seed() {  # MODEL ARGS...: compiles MODEL and keeps its payload
  local model=$1
  shift
  "$ipucc" compile "$model" "${small[@]}" "$@" -o "$work/seed.ipuexe" > /dev/null
  keep
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
if [[ -n $conformance && -d $conformance ]]; then
  for model in "$conformance"/*/model.onnx; do
    timeout 20 "$ipucc" compile "$model" --mode infer --no-cache --tiles-per-ipu 16 -o "$work/seed.ipuexe" \
      > /dev/null 2>&1 || continue
    for id in $("$hostile" --codelets "$work/seed.ipuexe"); do
      if [[ -z ${covered[$id]:-} ]]; then keep; break; fi
    done
  done
fi
echo "$n seeds in $out, using ${#covered[@]} codelets"
