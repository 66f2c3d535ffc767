#!/usr/bin/env bash
# Installs the benchmark peers (PyTorch, numpy, ONNX Runtime) used by scripts/bench/ and by
# scripts/reference/. Not needed to build or test ipucc. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=${IPUCC_PEERS_DIR:-$here/../../shared/peers}

packages=(python3-torch python3-torchvision python3-onnx python3-numpy libopenblas0-pthread)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
command -v node >/dev/null || echo "setup-peers: warning: node not found; scripts/bench/infer.sh needs Node.js and npm" >&2
echo "setup-peers: python3-torch and numpy present (peers at $peers)"
