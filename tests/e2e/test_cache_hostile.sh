#!/usr/bin/env bash
# What someone who can write the local cache directory can make ipucc and ipurun do
# (docs/cache.md, "Who can write the cache"): an entry whose executable was compiled for another
# key is found on a hit (quarantined, recompiled), by `cache verify`, `cache show` and `ipurun KEY`.
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

run_tests "$@"
