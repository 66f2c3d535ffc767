#!/usr/bin/env bash
# Every ratio of the performance bars in one run, each against its peer measured in the same run
# (the scripts below say how; run this on a quiet machine):
#   inference vs ONNX Runtime     infer.sh: mlp, cnn, transformer and ResNet-18 at batch 1, 8, 32
#   the zoo vs torch              zoo_predict.py: torchvision models at batch 1
#   2048³ MatMul vs OpenBLAS      matmul.sh
#   training vs PyTorch           train_mlp.sh: the tutorial MLP at batch 32 and 256
#   fp16 training vs fp32         fp16_train.sh
#   cache hit vs --version        cache.sh
#   first prediction vs ORT       load.sh: ResNet-18 at batch 1, a fresh process from file, key, model
#   compile time and memory       compile_scale.sh: BERT-base in 4 automatic stages, micro-batch 8
# About 25 minutes on 2 cores. Each part's output is printed under its name; a part that fails is
# reported and the rest still run, and the exit status is 1 if any failed.
#   scripts/bench/all.sh          (needs scripts/setup-peers.sh once)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
failed=()

part() {  # NAME COMMAND...
  local name=$1
  shift
  printf '\n== %s (%s)\n' "$name" "$(date -u +%H:%M:%S)"
  "$@" || { echo "== $name FAILED (exit $?)"; failed+=("$name"); }
}

part "inference vs ONNX Runtime" "$here/infer.sh"
part "torchvision zoo vs torch" /usr/bin/python3 "$here/zoo_predict.py"
part "2048^3 MatMul vs numpy/OpenBLAS" "$here/matmul.sh"
part "training vs PyTorch" "$here/train_mlp.sh"
part "fp16 training vs fp32" "$here/fp16_train.sh"
part "cache hit vs ipucc --version" "$here/cache.sh"
part "first prediction vs ONNX Runtime" "$here/load.sh"
part "compile scale: BERT-base" env COMPILES=bert_base/8 "$here/compile_scale.sh"

echo
if ((${#failed[@]})); then
  echo "all.sh: failed: ${failed[*]}"
  exit 1
fi
echo "all.sh: every part ran ($(date -u +%H:%M:%S))"
