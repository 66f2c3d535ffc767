#!/usr/bin/env bash
# Host instances (docs/distributed.md): training samples/s of the tutorial MLP (synthetic MNIST)
# compiled with 4 replicas, run as 1 process and as 1, 2 and 4 instances through mpirun on this
# host, and each rate's ratio to the one-process run. On a host with fewer cores than instances
# the instances are oversubscribed (the output says so): the figures then measure the cost of the
# collectives, not what several hosts would gain. One warm-up epoch, then EPOCHS timed epochs.
#   scripts/bench/scaling.sh [EPOCHS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/scripts/build.sh" >/dev/null
export IPUCC_CACHE_DIR=$work/cache
mpirun=(mpirun --oversubscribe --bind-to none)
[[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)

"$root/build/cli/ipucc" compile "$root/models/mlp_sequential.json" --batch-size 16 --replicas 4 \
  --steps-per-execution 16 -o "$work/m.ipuexe" >/dev/null
rate() {  # [mpirun -np I] -> samples/s over the timed epochs
  "$@" "$root/build/cli/ipurun" train "$work/m.ipuexe" --data synthetic --epochs $((epochs + 1)) \
    --progress none --json >"$work/t.json"
  python3 -c "
import json
e = json.load(open('$work/t.json'))['epochs'][1:]
print(sum(x['samples'] for x in e) / sum(x['seconds'] for x in e))"
}

one=$(rate)
i1=$(rate "${mpirun[@]}" -np 1)
i2=$(rate "${mpirun[@]}" -np 2)
i4=$(rate "${mpirun[@]}" -np 4)
python3 - "$(nproc)" "$one" "$i1" "$i2" "$i4" <<'PY'
import sys
cores = int(sys.argv[1])
one, *rates = map(float, sys.argv[2:])
print(f"tutorial MLP, 4 replicas x micro-batch 16, {cores} cores")
print(f"  one process      {one:10.0f} samples/s  1.00x")
for instances, rate in zip((1, 2, 4), rates):
    note = " (oversubscribed: more instances than cores)" if instances > cores else ""
    print(f"  {instances} instance(s)    {rate:10.0f} samples/s  {rate / one:.2f}x{note}")
PY
