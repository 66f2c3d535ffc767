#!/usr/bin/env bash
# What someone who can write the local cache directory can make ipucc and ipurun do
# (docs/cache.md): an entry whose executable was compiled for another key is found on a hit
# (quarantined, recompiled), by `cache verify`, `cache show` and `ipurun KEY`; a symbolic link
# planted where the cache keeps a directory or a lock is never followed, so nothing outside the
# cache is read, written, created or deleted; a cache directory that another user owns or that
# group or others can write is not used at all.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

A=$MODELS/mlp_sequential.json
B=$MODELS/mlp_residual.json  # the same input and output shapes as A, so B's executable runs on A's data
SMALL=(--tiles-per-ipu 64 --mode infer)

# Compiles MODEL into the cache; sets KEY and ENTRY.
compile_into_cache() {
  expect_exit 0 "$IPUCC" compile "$1" "${SMALL[@]}" --json
  KEY=$(json_get "$STDOUT" 'd["key"]')
  ENTRY=$(json_get "$STDOUT" 'd["entry"]')
}

# Compiles A and B and copies B's executable over A's: KEY_A, ENTRY_A, KEY_B, ENTRY_B.
swap_b_into_a() {
  compile_into_cache "$B"
  KEY_B=$KEY ENTRY_B=$ENTRY
  compile_into_cache "$A"
  KEY_A=$KEY ENTRY_A=$ENTRY
  cp "$ENTRY_B" "$ENTRY_A"
}

test_swapped_entry_is_quarantined_and_recompiled_on_a_hit() {
  expect_exit 0 "$IPURUN" predict "$A" "${SMALL[@]}" --data synthetic:64 --output a.npy
  expect_exit 0 "$IPURUN" predict "$B" "${SMALL[@]}" --data synthetic:64 --output b.npy
  ! cmp -s a.npy b.npy || fail "models A and B predict the same: the test cannot tell them apart"
  swap_b_into_a
  expect_exit 0 "$IPURUN" predict "$A" "${SMALL[@]}" --data synthetic:64 --output swapped.npy --json
  expect_json "$STDOUT" 'd["cache"] == "miss"' "an entry holding another key's executable is not a hit"
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "ipurun: warning: $ENTRY_A: the executable was compiled for cache key $KEY_B, not $KEY_A"
  expect_stderr_contains "moved to $IPUCC_CACHE_DIR/corrupt; recompiling"
  cmp a.npy swapped.npy || fail "ipurun predict A did not compute model A"
  cmp "$ENTRY_B" "$IPUCC_CACHE_DIR/corrupt/$KEY_A.ipuexe" || fail "the swapped executable was not quarantined"
  expect_file "$IPUCC_CACHE_DIR/corrupt/$KEY_A.manifest"
  # The recompiled entry is A's and sound; B's entry was never touched.
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_exit 0 "$IPUCC" compile "$B" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["corrupt_found"] == 1 and d["entries"] == 2'
}

test_swapped_entry_is_found_by_verify_show_and_ipurun_key() {
  swap_b_into_a
  expect_error 6 "$ENTRY_A: the executable was compiled for cache key $KEY_B, not $KEY_A" "ipucc cache verify" -- \
    "$IPUCC" cache show "$KEY_A"
  expect_error 7 "$ENTRY_A: the executable was compiled for cache key $KEY_B, not $KEY_A" -- \
    "$IPURUN" predict "${KEY_A:0:12}" --data synthetic:64
  expect_exit 6 "$IPUCC" cache verify
  expect_stdout_contains "1 ok, 1 corrupt"
  expect_stderr_contains "ipucc: warning: $ENTRY_A: the executable was compiled for cache key $KEY_B, not $KEY_A"
  expect_stderr_contains "moved to $IPUCC_CACHE_DIR/corrupt"
  expect_no_file "$ENTRY_A"
  expect_file "$IPUCC_CACHE_DIR/corrupt/$KEY_A.ipuexe"
  expect_file "$ENTRY_B"
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["ok"] == 1 and d["corrupt"] == 0'
  expect_exit 0 "$IPURUN" predict "$KEY_B" --data synthetic:64
}

# Every file below DIR with its size and modification time: what a link must not change.
snapshot() { (cd "$1" && find . -printf '%p %s %T@\n' | sort); }

test_linked_shard_is_neither_used_nor_written_and_clear_removes_only_the_link() {
  compile_into_cache "$A"
  local shard=${ENTRY%/*}
  # A sound entry for A where the link points: following the link would hit, store and delete there.
  cp -a "$shard" outside
  rm -r "$shard"
  ln -s "$E2E_TMP/outside" "$shard"
  local before
  before=$(snapshot outside)
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_stderr_contains "ipucc: warning: $shard: is a symbolic link; the cache does not follow links inside its directory"
  expect_eq "$(snapshot outside)" "$before" "the link's target after a compile"
  expect_exit 0 "$IPUCC" cache clear
  [[ ! -e $shard && ! -L $shard ]] || fail "cache clear left the link $shard"
  expect_eq "$(snapshot outside)" "$before" "the link's target after cache clear"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" "d['cache'] == 'miss' and d['entry'] == '$ENTRY'"
}

test_linked_corrupt_directory_is_not_written() {
  compile_into_cache "$A"
  mkdir outside
  ln -s "$E2E_TMP/outside" "$IPUCC_CACHE_DIR/corrupt"
  e2e_data flip "$ENTRY" 1000
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_stderr_contains "recompiling ($IPUCC_CACHE_DIR/corrupt: is a symbolic link"
  expect_eq "$(ls -A outside)" "" "files moved through the link"
  # The recompiled entry replaced the corrupt one.
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  e2e_data flip "$ENTRY" 1000
  expect_exit 6 "$IPUCC" cache verify
  expect_stderr_contains "$IPUCC_CACHE_DIR/corrupt: is a symbolic link"
  expect_eq "$(ls -A outside)" "" "files moved through the link by cache verify"
}

test_linked_lock_files_create_nothing() {
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --cache-dir probe --json
  KEY=$(json_get "$STDOUT" 'd["key"]')
  mkdir -p outside "$IPUCC_CACHE_DIR/locks"
  ln -s "$E2E_TMP/outside/key.lock" "$IPUCC_CACHE_DIR/locks/$KEY.lock"
  ln -s "$E2E_TMP/outside/stats.lock" "$IPUCC_CACHE_DIR/stats.lock"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "$IPUCC_CACHE_DIR/locks/$KEY.lock: is a symbolic link"
  expect_stderr_contains "the cache cannot be written: nothing is stored or counted"
  expect_eq "$(ls -A outside)" "" "files created through the links"
  # The stats lock alone: the entry is stored, the counters are not.
  rm "$IPUCC_CACHE_DIR/locks/$KEY.lock"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_stderr_contains "$IPUCC_CACHE_DIR/stats.lock: is a symbolic link"
  expect_eq "$(ls -A outside)" "" "files created through the stats lock link"
  expect_exit 6 "$IPUCC" cache stats
  expect_stderr_contains "$IPUCC_CACHE_DIR/stats.lock: is a symbolic link"
  expect_eq "$(ls -A outside)" "" "files created through the stats lock link by cache stats"
}

# A compile with a cache directory that is refused: compiled without the cache, one warning
# naming the directory and what is wrong, nothing in the cache touched.
expect_refused_by_compile() {
  local before
  before=$(snapshot "$IPUCC_CACHE_DIR")
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "disabled" and d["entry"] is None'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "ipucc: warning: $IPUCC_CACHE_DIR: cannot open cache directory: $1"
  expect_stderr_contains "; compiling without the cache"
  expect_eq "$(snapshot "$IPUCC_CACHE_DIR")" "$before" "the refused cache after a compile"
}

test_cache_directory_others_can_write_is_refused() {
  compile_into_cache "$A"
  chmod g+w "$IPUCC_CACHE_DIR"
  expect_refused_by_compile "$IPUCC_CACHE_DIR: writable by its group (mode 0775); refusing a cache directory others can write"
  expect_error 6 "$IPUCC_CACHE_DIR: writable by its group (mode 0775)" -- "$IPUCC" cache list
  expect_error 6 "$IPUCC_CACHE_DIR: writable by its group (mode 0775)" -- "$IPURUN" predict "$KEY" --data synthetic:8
  expect_exit 0 "$IPURUN" predict "$A" "${SMALL[@]}" --data synthetic:8 --json
  expect_json "$STDOUT" 'd["cache"] == "disabled"'
  chmod g-w,o+w "$IPUCC_CACHE_DIR"
  expect_refused_by_compile "$IPUCC_CACHE_DIR: writable by others (mode 0757)"
  chmod 1777 "$IPUCC_CACHE_DIR"
  expect_refused_by_compile "$IPUCC_CACHE_DIR: writable by its group and others (mode 1777)"
  # A directory inside the cache that others can write is refused the same way.
  chmod 755 "$IPUCC_CACHE_DIR"
  chmod g+w "$IPUCC_CACHE_DIR/entries"
  expect_refused_by_compile "$IPUCC_CACHE_DIR/entries: writable by its group (mode 0775)"
  chmod g-w "$IPUCC_CACHE_DIR/entries"
  chmod o+w "${ENTRY%/*}"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_stderr_contains "${ENTRY%/*}: writable by others (mode 0757)"
  chmod o-w "${ENTRY%/*}"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
}

test_cache_directory_of_another_user_is_refused() {
  [[ $(id -u) == 0 ]] || skip "needs root to give the cache directory to another user"
  compile_into_cache "$A"
  chown 65534 "$IPUCC_CACHE_DIR"
  expect_refused_by_compile "$IPUCC_CACHE_DIR: owned by uid 65534"
  expect_stderr_contains ", not by the current user, uid 0 (root); refusing a cache directory another user can write"
  expect_error 6 "$IPUCC_CACHE_DIR: owned by uid 65534" -- "$IPUCC" cache verify
  expect_error 6 "$IPUCC_CACHE_DIR: owned by uid 65534" -- "$IPURUN" predict "$KEY" --data synthetic:8
  chown 0 "$IPUCC_CACHE_DIR"
  chown 65534 "${ENTRY%/*}"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_stderr_contains "${ENTRY%/*}: owned by uid 65534"
  chown 0 "${ENTRY%/*}"
  expect_exit 0 "$IPUCC" compile "$A" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
}

run_tests "$@"
