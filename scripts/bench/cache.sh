#!/usr/bin/env bash
# Wall time of `ipucc compile` as a whole process on a cache hit and on a miss (the bar: a hit of
# the tutorial MLP within 5 ms of the process floor below), and of `ipurun predict MODEL` finding its
# executable.
# The peer in the same run is the process floor: `ipucc --version` (start-up and dynamic loading,
# nothing else), so the hit's own work is hit − floor. Floor and hit runs alternate, so both see
# the same load (run one after the other, a drift of the machine's load between the two series
# moved the difference by several ms). Medians of RUNS runs (default 30).
#   scripts/bench/cache.sh [MODEL]        default models/mlp_functional.json
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-$root/models/mlp_functional.json}
runs=${RUNS:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/build.sh" >/dev/null
ipucc=$root/build/cli/ipucc
ipurun=$root/build/cli/ipurun
export IPUCC_CACHE_DIR=$work/cache
"$ipucc" compile "$model" >/dev/null  # the entry the hits find

python3 - "$runs" "$ipucc" "$ipurun" "$model" "$work" <<'PYEOF'
import os, shutil, statistics, subprocess, sys, time
runs, ipucc, ipurun, model, work = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]

def wall_ms(argv):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return 1000 * (time.perf_counter() - start)

def median_ms(argv, before=None):
    times = []
    for _ in range(runs):
        if before:
            before()
        times.append(wall_ms(argv))
    return statistics.median(times)

def alternating_medians_ms(first, second):
    times = ([], [])
    for _ in range(runs):
        times[0].append(wall_ms(first))
        times[1].append(wall_ms(second))
    return statistics.median(times[0]), statistics.median(times[1])

def fresh_cache():
    shutil.rmtree(os.path.join(work, "miss"), ignore_errors=True)

floor, hit = alternating_medians_ms([ipucc, "--version"], [ipucc, "compile", model])
miss = median_ms([ipucc, "compile", model, "--cache-dir", os.path.join(work, "miss")], before=fresh_cache)
run_hit = median_ms([ipurun, "predict", model, "--data", "synthetic:32", "--progress", "none"])
print("%-34s %9s" % ("", "median ms"))
print("%-34s %9.1f" % ("ipucc --version (process floor)", floor))
print("%-34s %9.1f   (own work %.1f ms; bar: <= 5 ms)" % ("ipucc compile, cache hit", hit, hit - floor))
print("%-34s %9.1f   (%.1fx the hit)" % ("ipucc compile, cache miss", miss, miss / hit))
print("%-34s %9.1f" % ("ipurun predict MODEL, cache hit", run_hit))
PYEOF
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
