#!/usr/bin/env bash
# kill -9 at random moments of the commands that write what a user keeps: `ipucc compile` into the
# cache, `ipurun train --save-weights`, `ipucc cache gc`. Whatever the moment, nothing is torn
# (`cache verify` finds no corrupt entry, the checkpoint loads) and nothing reported written is
# lost (a checkpoint written once is there after every later kill).
#
# KILL_ROUNDS rounds per command (default 10: 30 kills in CI); the long run, outside CI:
#   KILL_ROUNDS=70 IPUCC=build/cli/ipucc IPURUN=build/cli/ipurun bash tests/e2e/test_crash_consistency.sh
# Each round kills after a random delay within 1.2 times the command's own measured run, so most
# kills land while it works (training: every other round within the last quarter of the run, where
# it writes its checkpoint). A kill the command outran narrows the window and does not count: each
# test makes up to 3 × KILL_ROUNDS attempts to land KILL_ROUNDS kills, and fails if fewer than a
# quarter of them landed (a machine whose load swings makes the first measured run a poor guide).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${KILL_ROUNDS:-10}
MLP=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)

# duration_ms CMD...: runs CMD to completion (it must succeed) and prints its wall time in ms.
duration_ms() {
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null 2>&1 || fail "$* failed when run to completion"
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

# kill_at_random FROM_MS TO_MS CMD...: starts CMD, SIGKILLs it after a random delay in
# [FROM_MS, TO_MS) and reaps it. Returns 0 if the kill landed (CMD had not finished); if CMD
# finished first, returns 1 and leaves in FINISHED_MS how long it took, so the caller can narrow
# its window (a loaded machine makes the first measured run a poor guide).
kill_at_random() {
  local from=$1 to=$2 pid status=0 delay start
  shift 2
  delay=$((from + (RANDOM * 32768 + RANDOM) % (to - from)))
  start=$(date +%s%N)
  "$@" > /dev/null 2>&1 &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || status=$?
  [[ $status -eq 137 ]] && return 0
  FINISHED_MS=$((($(date +%s%N) - start) / 1000000))
  return 1
}

# narrowed WINDOW_MS: the window for the next round after CMD outran a kill in this one.
narrowed() {
  local next=$((FINISHED_MS * 9 / 10 + 5))
  echo $((next < $1 ? next : $1))
}

# expect_landed LANDED ATTEMPTS: at least a quarter of KILL_ROUNDS kills landed mid-run.
expect_landed() {
  (($1 * 4 >= ROUNDS)) || fail "only $1 of $2 kills landed before the command finished"
  echo "      $1 of $2 kills landed mid-run"
}

expect_cache_whole() {
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["corrupt"] == 0' "$1"
  expect_exit 0 "$IPUCC" cache list --json
  expect_json "$STDOUT" 'all(".tmp" not in e["path"] for e in d["entries"])' "$1: no temporary file is an entry"
}

test_compiles_killed_at_random_leave_every_entry_whole() {
  local round window landed=0
  window=$(duration_ms "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 9 --no-cache -o probe.ipuexe)
  window=$((window * 6 / 5 + 10))
  for ((round = 0; landed < ROUNDS && round < 3 * ROUNDS; ++round)); do
    # Five keys: later rounds hit entries earlier ones stored, or were killed storing.
    if kill_at_random 0 "$window" "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size $((round % 5 + 2)); then
      landed=$((landed + 1))
    else
      window=$(narrowed "$window")
    fi
  done
  expect_landed "$landed" "$round"
  expect_cache_whole "after $ROUNDS killed compiles"
  # Every key compiles again, from its entry or afresh, and the cache stays whole.
  for ((round = 0; round < 5; ++round)); do
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size $((round + 2)) --json
    expect_json "$STDOUT" 'd["cache"] in ("hit", "miss")'
  done
  expect_cache_whole "after compiling every key again"
}

test_training_killed_at_random_never_loses_its_checkpoint() {
  local round run from landed=0
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 8 --no-cache -o mlp.ipuexe
  local train=("$IPURUN" train mlp.ipuexe --data synthetic:256 --epochs 2 --progress none --save-weights ckpt)
  run=$(duration_ms "${train[@]}") # writes ckpt: from here on it must always load
  for ((round = 0; landed < ROUNDS && round < 3 * ROUNDS; ++round)); do
    from=$((round % 2 * run * 3 / 4))
    if kill_at_random "$from" $((run * 6 / 5 + 10)) "${train[@]}"; then
      landed=$((landed + 1))
    else
      run=$(narrowed "$run")
    fi
    expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights ckpt --progress none
  done
  expect_landed "$landed" "$round"
  # What the killed writes left beside it are their own temporaries, never a second checkpoint.
  expect_eq "$(find . -maxdepth 1 -name 'ckpt*' ! -name 'ckpt' ! -name 'ckpt.tmp-*' | wc -l)" 0 \
    "checkpoints beside ckpt"
}

test_gc_killed_at_random_leaves_the_cache_whole() {
  local round batch window landed=0 size
  for batch in 2 3 4 5 6; do expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size $batch; done
  expect_exit 0 "$IPUCC" cache stats --json
  size=$(json_get "$STDOUT" 'd["bytes"]')
  window=$(duration_ms "$IPUCC" cache gc --max-size $((size / 3)))
  window=$((window * 6 / 5 + 10))
  for ((round = 0; landed < ROUNDS && round < 3 * ROUNDS; ++round)); do
    for batch in 2 3 4 5 6; do "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size $batch > /dev/null 2>&1; done
    if kill_at_random 0 "$window" "$IPUCC" cache gc --max-size $((size / 3)); then
      landed=$((landed + 1))
    else
      window=$(narrowed "$window")
    fi
    expect_cache_whole "after killed gc $round"
  done
  expect_landed "$landed" "$round"
}

run_tests "$@"
