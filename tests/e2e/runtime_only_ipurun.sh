#!/usr/bin/env bash
# Runtime-only build (-DIPUCC_BUILD_COMPILER=OFF): ipurun cannot compile a model and says so with
# exit 4 (unsupported), naming the model and what to do instead. Usage: runtime_only_ipurun.sh IPURUN MODEL
set -u
ipurun=$1 model=$2
stderr=$(mktemp)
trap 'rm -f "$stderr"' EXIT
IPUCC_CACHE_DIR=$(dirname "$stderr")/ipucc-runtime-only-cache "$ipurun" predict "$model" --batch-size 4 --data synthetic:8 2>"$stderr" >/dev/null
code=$?
if [[ $code -ne 4 ]] || ! grep -q "built without the compiler (-DIPUCC_BUILD_COMPILER=OFF)" "$stderr"; then
  echo "expected exit 4 and a message about the missing compiler, got exit $code:" >&2
  cat "$stderr" >&2
  exit 1
fi
