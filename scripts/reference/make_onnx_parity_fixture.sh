#!/usr/bin/env bash
# Regenerates tests/data/torch_reference/mlp_onnx_sgd_b32.json, the PyTorch reference for training
# ../shared/peers/models/mlp.onnx (checked by tests/e2e/test_onnx.sh): the per-step losses of
# ../shared/peers/torch_parity.py over the first epoch (1875 steps of batch 32 on the synthetic
# set, in order, SGD lr 0.01 momentum 0.9) in float64 (the exact reference) and float32.
# Needs Debian's python3-torch at /usr/bin/python3 (scripts/setup-peers.sh); takes about 2 minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
peers=${IPUCC_SHARED_DIR:-$root/../shared}/peers
PY=${TORCH_PYTHON:-/usr/bin/python3}
out=$root/tests/data/torch_reference/mlp_onnx_sgd_b32.json
steps=1875
work=$(mktemp -d "${TMPDIR:-/tmp}/onnx-fixture.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$peers" && "$PY" torch_parity.py --steps $steps --batch 32 --threads 1 --double --json "$work/fp64.json" >/dev/null)
(cd "$peers" && "$PY" torch_parity.py --steps $steps --batch 32 --threads 1 --json "$work/fp32.json" >/dev/null)
"$PY" - "$work/fp64.json" "$work/fp32.json" "$out" <<'PYEOF'
import json, sys
fp64, fp32 = (json.load(open(p)) for p in sys.argv[1:3])
steps_kept = 300  # per-step losses beyond this are chaotic; the epoch means carry the rest
json.dump({
    "generator": "scripts/reference/make_onnx_parity_fixture.sh (../shared/peers/torch_parity.py)",
    "model": "../shared/peers/models/mlp.onnx",
    "batch": fp64["batch"], "lr": fp64["lr"], "momentum": fp64["momentum"], "steps": len(fp64["losses"]),
    "losses_fp64": fp64["losses"][:steps_kept],
    "losses_fp32": fp32["losses"][:steps_kept],
    "epoch_mean_fp64": sum(fp64["losses"]) / len(fp64["losses"]),
    "epoch_mean_fp32": sum(fp32["losses"]) / len(fp32["losses"]),
}, open(sys.argv[3], "w"), indent=0)
PYEOF
echo "wrote $out"
