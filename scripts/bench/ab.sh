#!/usr/bin/env bash
# Before and after a change to the runtime, in one run: two ipurun binaries predict the same
# executable over the same input, alternating, and the medians of their samples/s give the ratio
# AFTER / BEFORE. On a shared machine a ratio of two separate runs swings by a third; alternating
# puts both sides under the same load. An A/A run (one binary against itself) tells how far to
# trust a ratio: on a 2-core machine, the CNN at batch 32 gave 0.91 to 1.05, a transformer whose
# predictions lasted a tenth of a second once 1.36, so give each side a second or more.
#   scripts/bench/ab.sh BEFORE_IPURUN AFTER_IPURUN EXECUTABLE INPUT.npy [TRIALS]   (default 5)
# Keep the old binary with `cp build/cli/ipurun /tmp/ipurun.before` before rebuilding.
set -euo pipefail
(($# >= 4)) || { sed -n '2,9s/^# \{0,1\}//p' "$0" >&2; exit 2; }
before=$1 after=$2 executable=$3 input=$4 trials=${5:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/bench/blas_kernels.sh" # both sides on the kernels ipurun picks

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
rate() {  # ipurun -> samples/s of one predict (ipurun's own message where it fails)
  local json
  json=$("$1" predict "$executable" --input "$input" --json 2>"$errors") || { cat "$errors" >&2; return 1; }
  python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_second"])' <<<"$json"
}

rates_before=() rates_after=()
for ((t = 0; t < trials; t++)); do
  rates_before+=("$(rate "$before")")
  rates_after+=("$(rate "$after")")
done
python3 - "${rates_before[*]}" "${rates_after[*]}" <<'PYEOF'
import statistics
import sys
before, after = ([float(x) for x in arg.split()] for arg in sys.argv[1:3])
b, a = statistics.median(before), statistics.median(after)
print("before %.1f  after %.1f samples/s  after/before %.3f  (median of %d, alternating)" % (b, a, a / b, len(before)))
PYEOF
