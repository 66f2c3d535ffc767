#!/usr/bin/env bash
# A cache directory that cannot be written (read-only, someone else's, a full disk) never fails a
# compile: ipucc and ipurun compile without caching, warn exactly once, exit 0, and leave no
# half-written files. A read-only cache still serves hits (docs/cache.md).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)

expect_one_warning() {
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings on stderr"
  expect_stderr_contains "$1"
}

# Every file of the cache with its size, and no temporary files among them.
cache_listing() { (cd "$IPUCC_CACHE_DIR" && find . -printf '%p %s\n' | sort); }

# Mounts a tmpfs of SIZE on $IPUCC_CACHE_DIR, unmounted when the test ends (tests run as root in
# CI; elsewhere the test is skipped). Mode 0755: a tmpfs is 1777 by default, which the cache
# refuses as a directory others can write.
mount_cache_tmpfs() {
  mkdir -p "$IPUCC_CACHE_DIR"
  mount -t tmpfs -o "size=$1,mode=0755" tmpfs "$IPUCC_CACHE_DIR" 2>/dev/null ||
    skip "cannot mount a tmpfs (needs root with CAP_SYS_ADMIN)"
  trap 'umount -l "$IPUCC_CACHE_DIR"' EXIT
}

test_read_only_filesystem_serves_hits_and_compiles_misses_uncached() {
  mount_cache_tmpfs 16m
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  mount -o remount,ro "$IPUCC_CACHE_DIR"
  local before
  before=$(cache_listing)
  # A hit: served, but not counted.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key' and d['entry'].endswith('$key.ipuexe')"
  expect_one_warning "the cache cannot be written: nothing is stored or counted"
  # A miss: compiled, not stored.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 8 -o out.ipuexe --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_one_warning "Read-only file system"
  expect_exit 0 "$IPURUN" predict out.ipuexe --data synthetic:8
  expect_exit 0 "$IPURUN" predict "$MLP" "${SMALL[@]}" --batch-size 4 --data synthetic:8 --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_one_warning "the cache cannot be written"
  expect_eq "$(cache_listing)" "$before" "cache contents after compiles into a read-only cache"
}

test_unwritable_directory_of_another_user() {
  command -v setpriv > /dev/null || skip "setpriv (util-linux) is not installed"
  [[ $(id -u) == 0 ]] || skip "needs root to run ipucc as user nobody"
  chmod 755 "$E2E_TMP"
  cp "$MLP" model.json
  expect_exit 0 "$IPUCC" compile model.json "${SMALL[@]}" --json
  chmod -R a-w "$IPUCC_CACHE_DIR"
  local before
  before=$(cache_listing)
  as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
  expect_exit 0 as_nobody "$IPUCC" compile model.json "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_one_warning "nothing is stored or counted"
  expect_exit 0 as_nobody "$IPUCC" compile model.json "${SMALL[@]}" --batch-size 8 --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_one_warning "Permission denied"
  expect_eq "$(cache_listing)" "$before" "cache contents after compiles by another user"
  # A cache directory that cannot even be created: one warning, compiled without the cache.
  expect_exit 0 as_nobody "$IPUCC" compile model.json "${SMALL[@]}" --cache-dir "$IPUCC_CACHE_DIR/sub" --json
  expect_json "$STDOUT" 'd["cache"] == "disabled"'
  expect_one_warning "compiling without the cache"
}

test_full_disk_compiles_without_caching() {
  mount_cache_tmpfs 24k
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" -o out.ipuexe --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["entry"] is None'
  expect_one_warning "nothing is stored or counted"
  (($(stat -c %s out.ipuexe) > 24 * 1024)) || fail "the executable fits the 24k tmpfs; the test needs a bigger one"
  # No entry, no temporary file left behind.
  expect_eq "$(find "$IPUCC_CACHE_DIR/entries" -type f | wc -l)" 0 "files under entries/"
  expect_eq "$(find "$IPUCC_CACHE_DIR" -name '*.tmp*' | wc -l)" 0 "temporary files"
  expect_exit 0 "$IPURUN" predict "$MLP" "${SMALL[@]}" --data synthetic:8 --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_one_warning "nothing is stored or counted"
  expect_eq "$(find "$IPUCC_CACHE_DIR/entries" -type f | wc -l)" 0 "files under entries/ after ipurun"
}

run_tests "$@"
