#!/usr/bin/env bash
# Training throughput of the tutorial MLP: ipurun vs PyTorch (the peer in ../shared/peers), in one
# run, at batch 32 and 256, with SGD + momentum (the peer's torch_train_bench.py) and with Adam
# (torch_train_adam.py beside this script: the peer's loop with torch.optim.Adam). Each side gets
# one warm-up epoch, then EPOCHS timed epochs; PyTorch runs in its best configuration here (1
# thread, or 2 threads with OPENBLAS_NUM_THREADS=1, the faster of the two). Prints samples/s of
# each and the ratio ipurun / PyTorch.
#   scripts/bench/train_mlp.sh [EPOCHS]      (needs scripts/setup-peers.sh once)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
peers=${IPUCC_PEERS_DIR:-$root/../shared/peers}
epochs=${1:-2}
steps_per_execution=${STEPS_PER_EXECUTION:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/build.sh" >/dev/null
source "$root/scripts/bench/blas_kernels.sh"
export IPUCC_CACHE_DIR=$work/cache

torch_rate() {  # optimizer batch -> best samples/s over the two thread settings
  local optimizer=$1 batch=$2 best=0 rate
  for setting in "1" "2 OPENBLAS_NUM_THREADS=1"; do
    set -- $setting
    if [ "$optimizer" = sgd ]; then
      rate=$(cd "$peers" && env ${2:-} /usr/bin/python3 torch_train_bench.py --what train --batch-sizes "$batch" \
               --epochs "$epochs" --threads "$1" --json "$work/torch.json" >/dev/null &&
             python3 -c "import json; print(json.load(open('$work/torch.json'))['train'][0]['samples_per_s'])")
    else
      rate=$(env ${2:-} /usr/bin/python3 "$root/scripts/bench/torch_train_adam.py" --peers "$peers" --batch "$batch" \
               --epochs "$epochs" --threads "$1" --json "$work/torch.json" &&
             python3 -c "import json; print(json.load(open('$work/torch.json'))['samples_per_s'])")
    fi
    best=$(python3 -c "print(max($best, $rate))")
  done
  echo "$best"
}

ipurun_rate() {  # optimizer batch -> samples/s over the timed epochs (the first epoch is the warm-up)
  local optimizer=$1 batch=$2
  local optimizer_flags=(--optimizer sgd --learning-rate 0.01 --momentum 0.9)
  [ "$optimizer" = sgd ] || optimizer_flags=(--optimizer adam --learning-rate 0.001)
  "$root/build/cli/ipucc" compile "$root/models/mlp_functional.json" --batch-size "$batch" \
    --steps-per-execution "$steps_per_execution" "${optimizer_flags[@]}" -o "$work/mlp.ipuexe" >/dev/null
  "$root/build/cli/ipurun" train "$work/mlp.ipuexe" --data synthetic --epochs $((epochs + 1)) --progress none --json >"$work/ipurun.json"
  python3 -c "
import json
e = json.load(open('$work/ipurun.json'))['epochs'][1:]
print(sum(x['samples'] for x in e) / sum(x['seconds'] for x in e))"
}

printf '%-9s %-6s %14s %14s %8s\n' optimizer batch ipurun pytorch ratio
for optimizer in ${OPTIMIZERS:-sgd adam}; do
  for batch in 32 256; do
    ours=$(ipurun_rate "$optimizer" "$batch")
    theirs=$(torch_rate "$optimizer" "$batch")
    python3 -c "print('%-9s %-6d %14.0f %14.0f %7.2fx' % ('$optimizer', $batch, $ours, $theirs, $ours / $theirs))"
  done
done
echo "(samples/s; ipurun with steps_per_execution=$steps_per_execution, $epochs timed epochs after one warm-up)"
