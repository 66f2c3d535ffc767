#!/usr/bin/env bash
# Writes fuzz_remote_cache's seeds into OUT_DIR: a server's answers to the GET of a manifest and of
# an executable (tests/fuzz/fuzz_remote_cache.cpp gives the layout), built around a real cache
# entry that IPUCC compiles from a tiny model: a hit, a hit sent in chunks, a miss on either file,
# a manifest of another key, an executable of another key, a Content-Length beyond the cap, a
# truncated body, and a redirect.
#   tests/fuzz/make_remote_cache_corpus.sh IPUCC OUT_DIR
set -euo pipefail
ipucc=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# entry NAME ARGS...: compiles the tiny model into a cache of its own; sets manifest and
# executable to the paths of the entry's files.
entry() {
  local cache=$work/$1
  shift
  IPUCC_CACHE_DIR=$cache "$ipucc" compile "$root/tests/fuzz/corpus/graph_spec/tiny_sequential.json" \
    --tiles-per-ipu 4 --batch-size 2 "$@" > /dev/null
  manifest=$(find "$cache/entries" -name '*.manifest')
  executable=$(find "$cache/entries" -name '*.ipuexe')
}
entry infer --mode infer
infer_manifest=$manifest infer_executable=$executable
entry train
train_executable=$executable

ok() {  # FILE: a plain 200 answer with FILE as its body
  printf 'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n' \
    "$(stat -c %s "$1")"
  cat "$1"
}
chunked() {  # FILE: a 200 answer with FILE's bytes in two chunks
  local size half
  size=$(stat -c %s "$1")
  half=$((size / 2))
  printf 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n' "$half"
  head -c "$half" "$1"
  printf '\r\n%x\r\n' "$((size - half))"
  tail -c "+$((half + 1))" "$1"
  printf '\r\n0\r\n\r\n'
}
not_found() { printf 'HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found'; }
# seed NAME MANIFEST_ANSWER_FILE EXECUTABLE_ANSWER_FILE: the length prefix, then the answers.
seed() {
  local size
  size=$(stat -c %s "$2")
  {
    printf "$(printf '\\x%02x\\x%02x' $((size & 255)) $((size >> 8)))"
    cat "$2" "$3"
  } > "$out/$1"
}

ok "$infer_manifest" > "$work/manifest_ok"
ok "$infer_executable" > "$work/executable_ok"
chunked "$infer_executable" > "$work/executable_chunked"
ok "$train_executable" > "$work/executable_other_key"
not_found > "$work/not_found"
printf 'HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\nkey_schema=1\n' > "$work/manifest_truncated"
printf 'HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n' > "$work/executable_over_cap"
printf 'HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n' > "$work/redirect"
printf 'HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nkey_schema=0\n' > "$work/manifest_other_key"

seed hit "$work/manifest_ok" "$work/executable_ok"
seed hit_chunked "$work/manifest_ok" "$work/executable_chunked"
seed manifest_missing "$work/not_found" "$work/executable_ok"
seed executable_missing "$work/manifest_ok" "$work/not_found"
seed manifest_of_another_key "$work/manifest_other_key" "$work/executable_ok"
seed executable_of_another_key "$work/manifest_ok" "$work/executable_other_key"
seed executable_over_cap "$work/manifest_ok" "$work/executable_over_cap"
seed manifest_truncated "$work/manifest_truncated" "$work/executable_ok"
seed redirect "$work/redirect" "$work/executable_ok"
