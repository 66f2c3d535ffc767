#!/usr/bin/env bash
# Host instances (docs/distributed.md): training samples/s of the tutorial MLP (synthetic MNIST)
# compiled with 4 replicas, run as 1 process and as 1, 2 and 4 instances through mpirun on this
# host, and each rate's ratio to the one-process run. On a host with fewer cores than instances
# the instances are oversubscribed (the output says so): the figures then measure the cost of the
# collectives, not what several hosts would gain. One warm-up epoch, then EPOCHS timed epochs.
#
# Then the cycle model's projection of data-parallel training on IPU-PODs (docs/cycle_model.md):
# the tutorial MLP (micro-batch 16) and torchvision's ResNet-18 (micro-batch 4, 224x224, made by
# scripts/make_resnet18.py into the temporary directory) compiled for R = 1, 16 (an IPU-POD16) and
# 64 replicas (a POD64), one IPU each, with
#   samples/s = R x B / (cycles_per_step(train) / clock)
# where cycles_per_step includes the gradient all-reduce (an IPU-Link ring within a POD64; a
# GW-Link ring across POD64s, reached here only by more than 64 IPUs), whose terms are printed,
# and efficiency = samples/s / (R x samples/s at R = 1).
#   scripts/bench/scaling.sh [EPOCHS]       (PROJECT_ONLY=1: the projection alone)
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

project() {  # NAME MODEL BATCH COMPILE_FLAGS... -> one line per R
  local name=$1 model=$2 batch=$3 replicas
  shift 3
  for replicas in 1 16 64; do
    "$root/build/cli/ipucc" compile "$model" --batch-size "$batch" --replicas "$replicas" \
      --num-ipus $((replicas > 16 ? replicas : 16)) --json "$@" >"$work/c$replicas.json"
  done
  python3 - "$name" "$batch" "$work" <<'PY'
import json, sys
name, batch, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = None
print(f"{name}, micro-batch {batch}, data parallel, one IPU per replica (cycle model, mk2 at 1.33 GHz)")
print(f"  {'system':8} {'R':>4} {'cycles/step':>12} {'samples/s':>11} {'efficiency':>10} "
      f"{'all-reduce: IPU-Link':>21} {'GW-Link':>9} {'bytes':>11}")
for replicas, system in ((1, "1 IPU"), (16, "POD16"), (64, "POD64")):
    e = json.load(open(f"{work}/c{replicas}.json"))["estimates"]
    rate = replicas * batch / e["seconds_per_step"]
    base = base or rate
    a = e["all_reduce"] or {"ipu_link_cycles": 0, "gw_link_cycles": 0, "bytes": 0}
    print(f"  {system:8} {replicas:4d} {e['cycles_per_step']['train']:12,d} {rate:11,.0f} "
          f"{rate / (replicas * base):10.2f} {a['ipu_link_cycles']:21,.0f} {a['gw_link_cycles']:9,.0f} "
          f"{a['bytes']:11,.0f}")
PY
}

if [[ ${PROJECT_ONLY:-0} != 1 ]]; then
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
fi

echo
echo "formula: samples/s = R x B x 1.33e9 / cycles_per_step(train); the all-reduce per update:"
echo "  IPU-Link ring within a POD64: sync(r) + 2(r-1)/r x bytes / 10.23 B/cycle (r replicas per POD)"
echo "  GW-Link ring across G PODs: 2(G-1)/G x (bytes/m) / (2 x 7.99 B/cycle) + 2(G-1) x sync(R)"
echo "  (m M2000s per POD; sync(N) = ceil(15 ns x 1.33 GHz x (1 + N/4) x 2); docs/cycle_model.md)"
project "tutorial MLP" "$root/models/mlp_sequential.json" 16
/usr/bin/python3 "$root/scripts/make_resnet18.py" "$work/resnet" >/dev/null
project "ResNet-18" "$work/resnet/resnet18.onnx" 4 --mode train --loss sparse_categorical_crossentropy \
  --optimizer sgd --learning-rate 0.01 --momentum 0.9
