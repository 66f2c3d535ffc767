#!/usr/bin/env bash
# The cache under stress, with real processes: many concurrent compiles of one key, compiles
# killed at random moments, bit flips in stored entries, and LRU eviction order.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)

test_eight_parallel_compiles_of_one_key_compile_once() {
  local i pids=()
  for i in 1 2 3 4 5 6 7 8; do
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --json > "c$i.json" 2> "c$i.err" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || fail "compile $((i + 1)) failed: $(cat "c$((i + 1)).err")"; done
  expect_eq "$(cat c*.json | grep -c '"cache": "miss"')" 1 "misses among eight concurrent compiles"
  expect_eq "$(cat c*.json | grep -c '"cache": "hit"')" 7 "hits among eight concurrent compiles"
  expect_eq "$(cat c*.err)" "" "stderr of the concurrent compiles"
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["ok"] == 1 and d["corrupt"] == 0'
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["misses"] == 1 and d["hits"] == 7'
}

test_compiles_killed_at_random_moments_leave_no_corrupt_entry() {
  local round pid batch
  RANDOM=42
  for round in 1 2 3 4 5 6 7 8; do
    batch=$((round % 3 + 4))  # a few keys, so kills hit both fresh compiles and hits
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size "$batch" > /dev/null 2>&1 &
    pid=$!
    sleep "0.0$((RANDOM % 10))"
    kill -9 "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["corrupt"] == 0'
  # Every listed entry is whole: a manifest and an executable that parses (verify), and temporary
  # files of killed writes are never entries.
  expect_exit 0 "$IPUCC" cache list --json
  expect_json "$STDOUT" 'all(not e["path"].count(".tmp") for e in d["entries"])'
  local entries manifests
  entries=$(json_get "$STDOUT" 'len(d["entries"])')
  manifests=$(find "$IPUCC_CACHE_DIR/entries" -name '*.manifest' | wc -l)
  expect_eq "$entries" "$manifests" "entries listed vs committed manifests"
  # The survivors still work, and the killed keys compile again.
  for batch in 4 5 6; do
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size "$batch" --json
    expect_json "$STDOUT" 'd["cache"] in ("hit", "miss")'
  done
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["ok"] == 3 and d["corrupt"] == 0'
}

# flip_and_recompile FILE_SUFFIX OFFSET WHAT [ARGS...]: flips one byte of the entry, then a compile
# (with ARGS) must detect it, not use it, and store a sound entry again.
flip_and_recompile() {
  local suffix=$1 offset=$2 what=$3 key entry corrupt_before
  shift 3
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  key=$(json_get "$STDOUT" 'd["key"]')
  entry=$(json_get "$STDOUT" 'd["entry"]')
  expect_exit 0 "$IPUCC" cache stats --json
  corrupt_before=$(json_get "$STDOUT" 'd["corrupt_found"]')
  e2e_data flip "${entry%.ipuexe}.$suffix" "$offset"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json "$@"
  expect_json "$STDOUT" "d['cache'] == 'miss' and d['key'] == '$key'" "compile after a flip in the $what"
  expect_stderr_contains "ipucc: warning:"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "the recompiled entry after a flip in the $what"
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["corrupt"] == 0'
  if [[ $suffix == ipuexe ]]; then
    expect_exit 0 "$IPUCC" cache stats --json
    expect_json "$STDOUT" "d['corrupt_found'] == $corrupt_before + 1" "quarantined after a flip in the $what"
    expect_file "$IPUCC_CACHE_DIR/corrupt/$key.ipuexe"
  fi
}

# A plain compile's hit reads the header and the summary (docs/executable_format.md): a flip there
# is found by any compile.
test_bit_flips_in_header_or_summary_are_found_by_a_hit() {
  flip_and_recompile ipuexe 3 "magic"
  flip_and_recompile ipuexe 65 "summary size"
  flip_and_recompile ipuexe 80 "summary checksum"
  flip_and_recompile ipuexe 110 "reserved header bytes"
  flip_and_recompile ipuexe 140 "summary"
  flip_and_recompile manifest 5 "manifest"
}

# The payload is read where the executable is used: written out (-o), run, verified.
test_bit_flips_in_the_payload_are_found_where_it_is_read() {
  flip_and_recompile ipuexe 17 "payload size" -o "$E2E_TMP/size.ipuexe"
  flip_and_recompile ipuexe 40 "payload checksum" -o "$E2E_TMP/checksum.ipuexe"
  flip_and_recompile ipuexe -100 "compressed payload" -o "$E2E_TMP/payload.ipuexe"
  flip_and_recompile ipuexe -1 "last byte" --trace "$E2E_TMP/trace.json"
}

test_manifest_flip_is_found_by_verify() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local entry
  entry=$(json_get "$STDOUT" 'd["entry"]')
  e2e_data flip "${entry%.ipuexe}.manifest" 10
  expect_exit 6 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["corrupt"] == 1'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_exit 0 "$IPUCC" cache verify
}

test_eviction_removes_the_least_recently_used() {
  local a b c d size
  a=$(compile_key --batch-size 4)
  expect_exit 0 "$IPUCC" cache stats --json
  size=$(json_get "$STDOUT" 'd["bytes"]')
  b=$(compile_key --batch-size 5)
  c=$(compile_key --batch-size 6)
  touch -d '-3 min' "$(entry_of "$a")"; touch -d '-2 min' "$(entry_of "$b")"; touch -d '-1 min' "$(entry_of "$c")"
  # A hit makes a the most recently used: b is now the oldest.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 4 --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  # Room for about three entries: storing d evicts exactly b.
  d=$(compile_key --batch-size 7 --cache-max-size $((size * 7 / 2)))
  expect_eq "$(remaining)" "$(printf '%s\n' "$a" "$c" "$d" | sort | tr '\n' ' ')" "entries after one eviction"
  # Then c, then a.
  compile_key --batch-size 8 --cache-max-size $((size * 7 / 2)) > /dev/null
  expect_no_file "$(entry_of "$c")"
  expect_file "$(entry_of "$a")"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["evictions"] == 2'
}

compile_key() {
  "$IPUCC" compile "$MLP" "${SMALL[@]}" "$@" --json > k.json || fail "compile $* failed"
  json_get k.json 'd["key"]'
}
entry_of() { echo "$IPUCC_CACHE_DIR/entries/${1:0:2}/$1.ipuexe"; }
remaining() { find "$IPUCC_CACHE_DIR/entries" -name '*.ipuexe' -printf '%f\n' | sed 's/\.ipuexe$//' | sort | tr '\n' ' '; }

run_tests "$@"
