#!/usr/bin/env bash
# The largest micro-batch of torchvision's ResNet-18 and ResNet-50 (224×224, eval-mode export with
# folded batch norm: scripts/make_resnet18.py, make_resnet50.py) that trains with SGD and momentum
# on one mk2 IPU, with and without --recompute, in fp32 and fp16, with its fullest tile and train
# cycles per step, and what the fullest tile of the next micro-batch holds (docs/training.md,
# "Recomputation on one IPU"). Usage: scripts/experiments/memory_options.sh [WORK_DIR] [EXTRA FLAGS...]
# (IPUCC: the compiler, default build/cli/ipucc). Each compile takes 10-30 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
IPUCC=${IPUCC:-$root/build/cli/ipucc}
work=${1:-/tmp/memory_options}
shift || true
mkdir -p "$work"
[[ -f $work/r18/resnet18.onnx ]] || /usr/bin/python3 "$root/scripts/make_resnet18.py" "$work/r18" > /dev/null
[[ -f $work/r50/resnet50.onnx ]] || /usr/bin/python3 "$root/scripts/make_resnet50.py" "$work/r50" > /dev/null

# try MODEL BATCH FLAGS...: prints "fits PEAK CYCLES" or "oom WHAT_FILLS_THE_FULLEST_TILE".
try() {
  local model=$1 batch=$2
  shift 2
  if "$IPUCC" compile "$model" --loss sparse_categorical_crossentropy --optimizer sgd --momentum 0.9 \
    --batch-size "$batch" --no-cache -o "$work/x.ipuexe" --json "$@" > "$work/out.json" 2> "$work/err.txt"; then
    /usr/bin/python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["estimates"]
print("fits", e["peak_tile_bytes"], e["cycles_per_step"]["train"])' "$work/out.json"
  else
    echo "oom $(sed -n 2p "$work/err.txt" | sed 's/^ *//')"
  fi
}

# largest MODEL FLAGS...: doubles the micro-batch from 1 while it fits, then bisects.
largest() {
  local model=$1
  shift
  local good=0 bad=0 batch=1 result fit="" miss=""
  while [[ $bad -eq 0 ]]; do
    result=$(try "$model" "$batch" "$@")
    if [[ $result == fits* ]]; then good=$batch fit=$result batch=$((batch * 2)); else bad=$batch miss=$result; fi
  done
  while [[ $((bad - good)) -gt 1 ]]; do
    batch=$(((good + bad) / 2))
    result=$(try "$model" "$batch" "$@")
    if [[ $result == fits* ]]; then good=$batch fit=$result; else bad=$batch miss=$result; fi
  done
  echo "$(basename "$model") $* | largest micro-batch $good: ${fit:-none} | micro-batch $bad: $miss"
}

for model in "$work/r18/resnet18.onnx" "$work/r50/resnet50.onnx"; do
  for precision in fp32 fp16; do
    largest "$model" --precision "$precision" "$@"
    largest "$model" --precision "$precision" --recompute "$@"
  done
done
