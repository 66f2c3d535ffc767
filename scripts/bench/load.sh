#!/usr/bin/env bash
# Time to a first prediction in a fresh process, as a job that pre-compiled its executable sees it:
# `ipurun predict` of one sample of torchvision's ResNet-18 (random weights, 224x224,
# scripts/make_resnet18.py) from the executable file, from its cache key and from the .onnx model
# the cache holds compiled (a hit: ipurun reads and fingerprints the model), against ONNX Runtime
# (onnxruntime-node, 2 intra-op threads, all graph optimisations) creating its session for the same
# .onnx and running it once, in a fresh node process. Wall time of whole processes, median of RUNS
# (default 9), runs alternating; ipurun's own predict seconds (--json) split its load from its
# predict. The ratio is ORT's time over ipurun's (above 1: ipurun is first).
#   scripts/bench/load.sh            (needs scripts/setup-peers.sh once)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ort_dir=${IPUCC_ORT_DIR:-$root/build/peers}
runs=${RUNS:-9}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -d $ort_dir/ort/node_modules/onnxruntime-node ]] || { echo "load.sh: run scripts/setup-peers.sh first" >&2; exit 2; }

"$root/scripts/build.sh" >/dev/null
source "$root/scripts/bench/blas_kernels.sh" # ORT picks its kernels from the CPU: so does ipurun
export IPUCC_CACHE_DIR=$work/cache
/usr/bin/python3 "$root/scripts/make_resnet18.py" "$work" >/dev/null
"$root/build/cli/ipucc" compile "$work/resnet18.onnx" --mode infer --batch-size 1 -o "$work/resnet18.ipuexe" >/dev/null
key=$("$root/build/cli/ipucc" compile "$work/resnet18.onnx" --mode infer --batch-size 1 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')

cat >"$work/ort_first.js" <<'JSEOF'
const ort = require(process.argv[2]);
(async () => {
  const session = await ort.InferenceSession.create(process.argv[3], {
    intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
  const input = new ort.Tensor('float32', new Float32Array(3 * 224 * 224).fill(0.5), [1, 3, 224, 224]);
  await session.run({ [session.inputNames[0]]: input });
})();
JSEOF

python3 - "$runs" "$root/build/cli/ipurun" "$work" "$key" "$ort_dir/ort/node_modules/onnxruntime-node" <<'PYEOF'
import json, statistics, subprocess, sys, time
runs, ipurun, work, key, ort = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
commands = {
    "ipurun predict FILE": [ipurun, "predict", work + "/resnet18.ipuexe", "--input", work + "/resnet18.input.npy", "--json"],
    "ipurun predict KEY": [ipurun, "predict", key, "--input", work + "/resnet18.input.npy", "--json"],
    "ipurun predict MODEL": [ipurun, "predict", work + "/resnet18.onnx", "--batch-size", "1", "--input",
                             work + "/resnet18.input.npy", "--json"],
    "ORT create + run": ["node", work + "/ort_first.js", ort, work + "/resnet18.onnx"],
}
walls = {name: [] for name in commands}
predicts = {name: [] for name in commands}
for _ in range(runs):
    for name, argv in commands.items():
        start = time.perf_counter()
        out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        walls[name].append(1000 * (time.perf_counter() - start))
        if name.startswith("ipurun"):
            result = json.loads(out)
            if result.get("cache") not in (None, "hit"):
                sys.exit("load.sh: %s was a cache %s, not a hit" % (name, result["cache"]))
            predicts[name].append(1000 * result["seconds"])
ort_ms = statistics.median(walls["ORT create + run"])
print("%-22s %10s %10s %10s %8s" % ("ResNet-18, batch 1", "wall ms", "predict ms", "rest ms", "ORT/this"))
for name in commands:
    wall = statistics.median(walls[name])
    if predicts[name]:
        predict = statistics.median(predicts[name])
        print("%-22s %10.0f %10.0f %10.0f %7.2fx" % (name, wall, predict, wall - predict, ort_ms / wall))
    else:
        print("%-22s %10.0f %10s %10s" % (name, wall, "", ""))
print("(median of %d; runs alternate; load %s)" % (runs, " ".join(open("/proc/loadavg").read().split()[:3])))
PYEOF
