#!/usr/bin/env bash
# Installs the benchmark peers used by scripts/bench/ and scripts/reference/: PyTorch and numpy
# from Debian, and ONNX Runtime for Node.js from the npm registry (its CPU binary ships in the
# package tarball, so the download step is skipped). The shared peers directory is read-only, so
# ONNX Runtime goes into build/peers/ (ort_bench.js and the models are linked beside it).
# Not needed to build or test ipucc. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
peers=${IPUCC_PEERS_DIR:-$root/../shared/peers}
ort_dir=${IPUCC_ORT_DIR:-$root/build/peers}

"$here/apt-install.sh" python3-torch python3-torchvision python3-onnx python3-numpy libopenblas0-pthread
echo "setup-peers: python3-torch and numpy present (peers at $peers)"

command -v npm >/dev/null || { echo "setup-peers: npm not found (Node.js is needed for ONNX Runtime)" >&2; exit 1; }
mkdir -p "$ort_dir/ort"
cp "$peers/ort/package.json" "$ort_dir/ort/package.json"
cp "$peers/ort_bench.js" "$ort_dir/ort_bench.js"  # node resolves a linked script's own directory
ln -sfn "$peers/models" "$ort_dir/models"
if [[ ! -d $ort_dir/ort/node_modules/onnxruntime-node ]]; then
  (cd "$ort_dir/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund >/dev/null)
fi
echo "setup-peers: onnxruntime-node in $ort_dir/ort"
