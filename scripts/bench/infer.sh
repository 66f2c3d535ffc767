#!/usr/bin/env bash
# Inference throughput: ipurun vs ONNX Runtime (onnxruntime-node, 2 intra-op threads, all graph
# optimisations; ../shared/peers/ort_bench.js), for the shared models at batch 1 and 32.
# Prints samples/s of each (median of TRIALS) and the ratio ipurun / ORT. Each trial runs one
# ORT trial and then one ipurun trial of the same model and batch, so both sides of a ratio see
# the same load on a shared machine. Models ipucc cannot compile yet are listed as such.
#   scripts/bench/infer.sh [MODELS] [BATCHES]     default: mlp,cnn,transformer 1,32
# Needs scripts/setup-peers.sh once (ONNX Runtime in build/peers).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ort_dir=${IPUCC_ORT_DIR:-$root/build/peers}
models=${1:-mlp,cnn,transformer}
batches=${2:-1,32}
trials=${TRIALS:-3}
steps_per_execution=${STEPS_PER_EXECUTION:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -f $ort_dir/ort_bench.js ]] || { echo "infer.sh: run scripts/setup-peers.sh first" >&2; exit 2; }

"$root/scripts/build.sh" >/dev/null
export IPUCC_CACHE_DIR=$work/cache

median() { sort -g | sed -n "$(((trials + 1) / 2))p"; }

# Deterministic inputs of several executions per model and batch: [N, sample shape...].
sample_shape() { python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['models'][sys.argv[2]]; print(','.join(str(d) for d in m['ref_input_shape'][1:]))" "$ort_dir/models/MANIFEST.json" "$1"; }

ort_trial() {  # model batch -> samples/s of one ORT trial
  (cd "$ort_dir" && node ort_bench.js --check '' --bench "$1" --batches "$2" --trials 1 --trial-seconds 1 \
     --json "$work/ort.json" >/dev/null)
  python3 -c "import json; print(json.load(open('$work/ort.json'))['infer'][0]['median'])"
}

ipurun_trial() {  # -> samples/s of one `ipurun predict --input` of the compiled model
  "$root/build/cli/ipurun" predict "$work/model.ipuexe" --input "$work/input.npy" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_second"])'
}

printf '%-12s %5s %12s %12s %8s\n' model batch ipurun ort ratio
for model in ${models//,/ }; do
  for batch in ${batches//,/ }; do
    : >"$work/ours" && : >"$work/theirs"
    # Enough executions that a trial lasts about as long as ORT's (at least a second after three
    # warm-up runs): a short run would mostly time first touches of the device's memory.
    n=$((batch * steps_per_execution * (batch == 1 ? 256 : 32)))
    compiled=1
    "$root/build/cli/ipucc" compile "$ort_dir/models/$model.onnx" --mode infer --batch-size "$batch" \
      --steps-per-execution "$steps_per_execution" -o "$work/model.ipuexe" >/dev/null 2>"$work/compile.err" || compiled=0
    ((compiled)) && python3 "$root/tests/e2e/e2e_data.py" npy "$work/input.npy" --shape "$n,$(sample_shape "$model")" --fill random
    for ((t = 0; t < trials; t++)); do
      ort_trial "$model" "$batch" >>"$work/theirs"
      ((compiled)) && ipurun_trial >>"$work/ours"
    done
    theirs=$(median <"$work/theirs")
    if ((compiled)); then
      ours=$(median <"$work/ours")
      python3 -c "print('%-12s %5d %12.0f %12.0f %7.2fx' % ('$model', $batch, $ours, $theirs, $ours / $theirs))"
    else
      printf '%-12s %5d %12s %12.0f %8s\n' "$model" "$batch" "n/a" "$theirs" "-"
      sed -n '1s/^/  /p' "$work/compile.err"
    fi
  done
done
echo "(samples/s; ipurun predict with steps_per_execution=$steps_per_execution; ORT and ipurun trials alternate; median of $trials)"
