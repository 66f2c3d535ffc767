#!/usr/bin/env bash
# Inference throughput: ipurun vs ONNX Runtime (onnxruntime-node, 2 intra-op threads, all graph
# optimisations; ../shared/peers/ort_bench.js), for the shared models and torchvision's ResNet-18
# (scripts/make_resnet18.py: random weights, 224x224) at batch 1, 8 and 32.
# Prints samples/s of each (median of TRIALS) and the ratio ipurun / ORT. Each trial runs one
# ORT trial and then one ipurun trial of the same model and batch, so both sides of a ratio see
# the same load on a shared machine. Models ipucc cannot compile yet are listed as such.
#   scripts/bench/infer.sh [MODELS] [BATCHES]     default: mlp,cnn,transformer,resnet18 1,8,32
# Needs scripts/setup-peers.sh once (ONNX Runtime in build/peers).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ort_dir=${IPUCC_ORT_DIR:-$root/build/peers}
models=${1:-mlp,cnn,transformer,resnet18}
batches=${2:-1,8,32}
trials=${TRIALS:-3}
steps_per_execution=${STEPS_PER_EXECUTION:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -f $ort_dir/ort_bench.js ]] || { echo "infer.sh: run scripts/setup-peers.sh first" >&2; exit 2; }

"$root/scripts/build.sh" >/dev/null
source "$root/scripts/bench/blas_kernels.sh" # ORT picks its kernels from the CPU: so does ipurun
source "$root/scripts/bench/warm_memory.sh"
export IPUCC_CACHE_DIR=$work/cache

median() { sort -g | sed -n "$(((trials + 1) / 2))p"; }

# ort_bench.js reads MODEL.onnx and MODEL.input.npy beside it: a copy of it here sees the shared
# models and ResNet-18, made once into the work directory.
peers=$work/peers
mkdir -p "$peers/models"
cp "$ort_dir/ort_bench.js" "$peers/"
ln -s "$ort_dir/ort" "$peers/ort"
ln -s "$ort_dir"/models/* "$peers/models/"
if [[ ,$models, == *,resnet18,* ]]; then
  /usr/bin/python3 "$root/scripts/make_resnet18.py" "$peers/models" >/dev/null
fi

# One execution's steps (at most STEPS_PER_EXECUTION, and at most 64 MB of input), the most
# samples a trial's input may hold (256 MB, so ResNet-18 needs no gigabyte files) and a sample's
# shape.
plan_steps() {  # model batch -> "steps most_samples shape"
  /usr/bin/python3 - "$peers/models/$1.input.npy" "$2" "$steps_per_execution" <<'PYEOF'
import sys
import numpy as np
shape = np.load(sys.argv[1], mmap_mode="r").shape[1:]
batch, most_steps = int(sys.argv[2]), int(sys.argv[3])
sample_bytes = 4 * int(np.prod(shape))
steps = max(1, min(most_steps, (64 << 20) // (batch * sample_bytes)))
print(steps, max(3 * batch * steps, (256 << 20) // sample_bytes // (batch * steps) * batch * steps),
      ",".join(str(d) for d in shape))
PYEOF
}

# The samples of an ipurun trial: whole executions lasting about as long as ORT's trial (1 s), at
# the rate a short run of 3 executions measured, and at least 3. A fixed count timed a fast
# model's start (the first execution makes the oneDNN plans and first touches the device's memory)
# more than its steady state: the MLP at batch 32 ran a tenth of a second.
trial_samples() {  # batch steps most_samples shape -> samples
  local per_execution=$(($1 * $2))
  python3 "$root/tests/e2e/e2e_data.py" npy "$work/input.npy" --shape "$((3 * per_execution)),$4" --fill random
  local rate
  rate=$(ipurun_trial)
  python3 -c "print(min($3, $per_execution * max(3, round($rate / $per_execution))))"
}

ort_trial() {  # model batch -> samples/s of one ORT trial
  (cd "$peers" && node ort_bench.js --check '' --bench "$1" --batches "$2" --trials 1 --trial-seconds 1 \
     --json "$work/ort.json" >/dev/null)
  python3 -c "import json; print(json.load(open('$work/ort.json'))['infer'][0]['median'])"
}

ipurun_trial() {  # -> samples/s of one `ipurun predict --input` of the compiled model
  "$root/build/cli/ipurun" predict "$work/model.ipuexe" --input "$work/input.npy" --json 2>"$work/ipurun.err" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_second"])'
}

warm_memory
printf '%-12s %5s %12s %12s %8s\n' model batch ipurun ort ratio
for model in ${models//,/ }; do
  for batch in ${batches//,/ }; do
    : >"$work/ours" && : >"$work/theirs"
    read -r steps most_samples shape < <(plan_steps "$model" "$batch")
    compiled=1
    "$root/build/cli/ipucc" compile "$peers/models/$model.onnx" --mode infer --batch-size "$batch" \
      --steps-per-execution "$steps" -o "$work/model.ipuexe" >/dev/null 2>"$work/compile.err" || compiled=0
    if ((compiled)); then
      n=$(trial_samples "$batch" "$steps" "$most_samples" "$shape")
      python3 "$root/tests/e2e/e2e_data.py" npy "$work/input.npy" --shape "$n,$shape" --fill random
    fi
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
echo "(samples/s; ipurun predict with steps_per_execution up to $steps_per_execution; ORT and ipurun trials alternate; median of $trials;"
echo " ipurun's OpenBLAS kernels: $blas_kernels)"
