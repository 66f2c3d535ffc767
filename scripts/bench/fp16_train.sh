#!/usr/bin/env bash
# Host time of fp16 and mixed-precision training against fp32's in the same run: the tutorial MLP
# (models/mlp_functional.json, batch 32, SGD with momentum, steps_per_execution 16) trained on
# synthetic data with each --precision. The three alternate, RUNS times each (default 3); each
# run times EPOCHS epochs after a warm-up epoch. Prints the median samples/s of each and its host
# time as a multiple of fp32's (the issue's bar: fp16 at most 1.3×). The rounding of every value
# written to an fp16 tensor is what fp16 adds on the host; --trace shows it per compute set.
#   scripts/bench/fp16_train.sh [EPOCHS]      default 2
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=${1:-2}
runs=${RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/build.sh" >/dev/null
export IPUCC_CACHE_DIR=$work/cache
precisions=(fp32 fp16 mixed)
for precision in "${precisions[@]}"; do
  "$root/build/cli/ipucc" compile "$root/models/mlp_functional.json" --batch-size 32 --steps-per-execution 16 \
    --optimizer sgd --learning-rate 0.01 --momentum 0.9 --precision "$precision" -o "$work/$precision.ipuexe" >/dev/null
done

for run in $(seq "$runs"); do
  for precision in "${precisions[@]}"; do
    "$root/build/cli/ipurun" train "$work/$precision.ipuexe" --data synthetic --epochs $((epochs + 1)) \
      --progress none --json >"$work/$precision.$run.json" 2>/dev/null
  done
done

python3 - "$work" "$runs" "${precisions[@]}" <<'PYEOF'
import json, statistics, sys
work, runs, precisions = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def rate(path):  # samples/s over the timed epochs (the first is the warm-up)
    epochs = json.load(open(path))['epochs'][1:]
    return sum(e['samples'] for e in epochs) / sum(e['seconds'] for e in epochs)

median = {p: statistics.median(rate(f'{work}/{p}.{r}.json') for r in range(1, runs + 1)) for p in precisions}
print('%-9s %12s %18s' % ('precision', 'samples/s', 'host time vs fp32'))
for p in precisions:
    print('%-9s %12.0f %17.2fx' % (p, median[p], median['fp32'] / median[p]))
print(f'(median of {runs} runs each, alternating; tutorial MLP, batch 32, SGD with momentum)')
PYEOF
