#!/usr/bin/env bash
# Writes what a build produces into OUT_DIR, so that two builds (before and after a refactoring)
# can be compared with `diff -r`: the executables ipucc compiles for every model under models/,
# in several layouts (the automatic split among them), and for every ONNX node test (their
# payloads, with the compiler's build identity blanked: it names the commit and the digest of the
# compiler libraries, which change with any edit), and ipurun's outputs (predictions, a trained checkpoint, the history less its
# timings) for a few runs.
#   scripts/snapshot.sh BUILD_DIR OUT_DIR
#   diff -r OUT_BEFORE OUT_AFTER   # nothing printed: the bytes are unchanged
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
ipucc=$build/cli/ipucc ipurun=$build/cli/ipurun hostile=$build/tests/tools/hostile_executable
conformance=${IPUCC_CONFORMANCE_DIR:-$root/../shared/conformance/onnx-node-tests}
peers=${IPUCC_PEER_MODELS:-$root/../shared/peers/models}
if [[ -x /usr/bin/python3 ]]; then python=/usr/bin/python3; else python=python3; fi
mkdir -p "$out/executables" "$out/outputs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# snap NAME MODEL ARGS...: OUT_DIR/executables/NAME.pb, or NAME.refused with ipucc's message.
snap() {
  local name=$1 model=$2
  shift 2
  if "$ipucc" compile "$model" --no-cache -o "$work/exe" "$@" > /dev/null 2> "$work/err"; then
    "$hostile" --payload "$work/exe" "$work/payload"
    "$python" -c '
import re, sys
payload = open(sys.argv[1], "rb").read()
identity = re.compile(rb"[0-9]+\.[0-9]+\.[0-9]+\+[0-9a-z]+\+[0-9a-f]{16,}")
open(sys.argv[2], "wb").write(identity.sub(lambda m: b"X" * len(m.group()), payload))' \
      "$work/payload" "$out/executables/$name.pb"
  else
    sed "s|$root/||g; s|$conformance/||g" "$work/err" > "$out/executables/$name.refused"
  fi
}

for model in "$root"/models/*.json; do
  name=$(basename "$model" .json)
  snap "$name.train" "$model" --tiles-per-ipu 64
  snap "$name.infer" "$model" --tiles-per-ipu 64 --mode infer --steps-per-execution 4
  snap "$name.replicas" "$model" --tiles-per-ipu 64 --replicas 2 --num-ipus 2 --gradient-accumulation 2
  snap "$name.mixed" "$model" --tiles-per-ipu 64 --precision mixed --optimizer adam
done
for model in "$root"/models/*_staged.json; do
  name=$(basename "$model" .json)
  for schedule in grouped interleaved sequential; do
    snap "$name.$schedule" "$model" --tiles-per-ipu 64 --num-ipus 2 --schedule "$schedule" --recompute
  done
done
for model in "$peers"/*.onnx; do
  snap "peer_$(basename "$model" .onnx)" "$model" --mode infer
done
# The automatic split: its measuring compile chooses the stages.
for model in "$root"/models/*.json; do
  snap "$(basename "$model" .json).auto2" "$model" --tiles-per-ipu 64 --num-ipus 2 --pipeline-stages 2
done
snap peer_transformer.auto2 "$peers/transformer.onnx" --mode infer --num-ipus 2 --pipeline-stages 2
if [[ -d $conformance ]]; then
  for dir in "$conformance"/*/; do
    snap "node_$(basename "$dir")" "$dir/model.onnx" --mode infer
  done
fi

# ipurun's outputs: predictions of the peers' models, and a short training run.
for model in "$peers"/*.onnx; do
  name=$(basename "$model" .onnx)
  [[ -f $peers/$name.input.npy ]] || continue
  "$ipurun" predict "$model" --no-cache --input "$peers/$name.input.npy" --output "$out/outputs/$name.npy" \
    > /dev/null 2>&1 || echo "predict failed" > "$out/outputs/$name.failed"
done
"$ipurun" train "$root/models/mlp_sequential.json" --no-cache --tiles-per-ipu 64 --data synthetic:512 \
  --epochs 2 --shuffle --seed 3 --history "$work/history.json" --save-weights "$out/outputs/mlp_weights" \
  --progress none > /dev/null
"$python" -c '
import json, sys
history = json.load(open(sys.argv[1]))
for epoch in history["epochs"]:
    for timing in ("seconds", "samples_per_second", "val_seconds"):
        epoch.pop(timing, None)
json.dump(history, open(sys.argv[2], "w"), indent=1, sort_keys=True)' "$work/history.json" "$out/outputs/history.json"
echo "snapshot: $(ls "$out/executables" | wc -l) executables, $(ls "$out/outputs" | wc -l) outputs in $out"
