#!/usr/bin/env bash
# Sets up, builds and runs every test: unit and end-to-end tests (ctest), then the runtime-only
# build that proves the runtime links without the compiler.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
IPUCC_BUILD_DIR=$root/build "$root/scripts/build.sh" -DIPUCC_WERROR=ON
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")

echo "== runtime-only build (IPUCC_BUILD_COMPILER=OFF)"
IPUCC_BUILD_DIR=$root/build-runtime-only "$root/scripts/build.sh" -DIPUCC_BUILD_COMPILER=OFF -DIPUCC_WERROR=ON
(cd "$root/build-runtime-only" && ctest --output-on-failure -j "$(nproc)")
