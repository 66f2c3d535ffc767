#!/usr/bin/env bash
# Regenerates the schedule pictures of docs/pipelining.md with `ipucc compile --report`: the
# Sequential tutorial MLP with stage assignment [0,0,1,1,1,1], 4 micro-batches per update, in
# each schedule.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/build.sh" >/dev/null
for schedule in grouped interleaved sequential; do
  # ipucc replaces only files it wrote itself, and a committed picture is not one.
  rm -f "$root/docs/images/schedule_$schedule.svg"
  "$root/build/cli/ipucc" compile "$root/models/mlp_sequential_staged.json" --gradient-accumulation 4 \
    --steps-per-execution 4 --schedule "$schedule" --no-cache --report "$root/docs/images/schedule_$schedule.svg" >/dev/null
  echo "docs/images/schedule_$schedule.svg"
done
