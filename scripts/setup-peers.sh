#!/usr/bin/env bash
# Installs the benchmark peers (PyTorch, numpy) used by scripts/bench/ and scripts/reference/.
# Not needed to build or test ipucc. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=${IPUCC_PEERS_DIR:-$here/../../shared/peers}

"$here/apt-install.sh" python3-torch python3-torchvision python3-onnx python3-numpy libopenblas0-pthread
echo "setup-peers: python3-torch and numpy present (peers at $peers)"
