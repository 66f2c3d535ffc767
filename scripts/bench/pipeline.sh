#!/usr/bin/env bash
# Host cost of the layouts: training samples/s of the tutorial MLP (synthetic MNIST) with the
# same global batch per update (128) as 1 IPU, 2 pipeline stages (grouped) and 2 replicas, and
# the wall-time ratio of each to the 1-IPU run. One warm-up epoch, then EPOCHS timed epochs.
#   scripts/bench/pipeline.sh [EPOCHS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/scripts/build.sh" >/dev/null
export IPUCC_CACHE_DIR=$work/cache

rate() {  # name model flags... -> samples/s over the timed epochs
  local model=$1
  shift
  "$root/build/cli/ipucc" compile "$root/models/$model" --steps-per-execution 16 "$@" -o "$work/m.ipuexe" >/dev/null
  "$root/build/cli/ipurun" train "$work/m.ipuexe" --data synthetic --epochs $((epochs + 1)) --progress none --json >"$work/t.json"
  python3 -c "
import json
e = json.load(open('$work/t.json'))['epochs'][1:]
print(sum(x['samples'] for x in e) / sum(x['seconds'] for x in e))"
}

base=$(rate mlp_sequential.json --batch-size 32 --gradient-accumulation 4)
piped=$(rate mlp_sequential_staged.json --batch-size 32 --gradient-accumulation 4 --schedule grouped)
replicated=$(rate mlp_sequential.json --batch-size 16 --gradient-accumulation 4 --replicas 2)
python3 - "$base" "$piped" "$replicated" <<'PY'
import sys
base, piped, replicated = map(float, sys.argv[1:])
print("%-34s %12s %18s" % ("layout (global batch 128/update)", "samples/s", "wall time vs 1 IPU"))
for name, rate in (("1 IPU", base), ("2 stages, grouped", piped), ("2 replicas", replicated)):
    print("%-34s %12.0f %17.2fx" % (name, rate, base / rate))
PY
