#!/usr/bin/env bash
# The Graphcore TF2 tutorial's configurations, compiled and trained with ipucc/ipurun, in one
# table: the functional MLP on 1 IPU, the Sequential one on 1 IPU, the functional one with two
# pipeline stages on 2 IPUs, the Sequential one with stage assignment [0,0,1,1,1,1], and that
# with the interleaved schedule.
#   scripts/experiments/tutorial.sh [EPOCHS] [DATA]     (defaults: 2, synthetic)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=${1:-2}
data=${2:-synthetic}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/scripts/build.sh" >/dev/null
export IPUCC_CACHE_DIR=$work/cache
bin=$root/build/cli
models=$root/models

configs=(
  "functional, 1 IPU|mlp_functional.json|"
  "sequential, 1 IPU|mlp_sequential.json|"
  "functional, 2 PipelineStages|mlp_functional_staged.json|--schedule grouped"
  "sequential, [0,0,1,1,1,1]|mlp_sequential_staged.json|--schedule grouped"
  "sequential, [0,0,1,1,1,1], interleaved|mlp_sequential_staged.json|--schedule interleaved"
)

printf '%-40s %4s %9s %8s %8s %10s %12s %7s\n' configuration IPUs schedule loss accuracy samples/s est.cycles/step bubble
for config in "${configs[@]}"; do
  IFS='|' read -r name model flags <<<"$config"
  # batch 32, 8 micro-batches per update, 64 steps per execution: as in the tutorial.
  # shellcheck disable=SC2086
  "$bin/ipucc" compile "$models/$model" --batch-size 32 --gradient-accumulation 8 --steps-per-execution 64 $flags \
    --json -o "$work/model.ipuexe" >"$work/compile.json"
  "$bin/ipurun" train "$work/model.ipuexe" --data "$data" --epochs "$epochs" --progress none --json >"$work/train.json"
  python3 - "$name" "$work/compile.json" "$work/train.json" <<'PY'
import json, sys
name, compiled, trained = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
p = compiled["pipeline"]
print("%-40s %4d %9s %8.4f %8.4f %10.0f %12.0f %6.1f%%" % (
    name, compiled["target"]["num_ipus"], p["schedule"], trained["final"]["loss"], trained["final"]["accuracy"],
    trained["samples_per_second"], p["cycles_per_step"], 100 * p["bubble_fraction"]))
PY
done
