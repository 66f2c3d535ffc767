#!/usr/bin/env bash
# Precompile models into an executable cache in one CI job, and prove in a later one that every
# executable is found without compiling (docs/cache.md, "CI").
#
#   scripts/ci-precompile.sh [--cache-dir DIR] [--ipucc BIN] precompile|check|all LIST [EXTRA...]
#
# LIST has one configuration per line: a model path (relative to the LIST file's directory, or
# absolute) followed by `ipucc compile` options; blank lines and '#' comments are skipped. EXTRA
# options are appended to every line (e.g. --tiles-per-ipu 64). Runs of ipurun with the same
# model and options find the same entries (`ipurun predict MODEL OPTIONS`, with --mode given).
#
#   precompile  compile every configuration into the cache (hits are fine: nothing recompiles)
#   check       look every configuration up again; fail unless each is a hit and the cache's
#               miss counter (`ipucc cache stats --json`) did not move while hits grew by one
#               per configuration
#   all         both, in order
#
# The cache is --cache-dir, else $IPUCC_CACHE_DIR, else ipucc's default. Exit status: 0 when
# the phase succeeded, 1 when a configuration failed to compile or missed in `check`, 2 on usage.
set -euo pipefail

ipucc=${IPUCC:-ipucc}
cache_args=()
while (($#)); do
  case $1 in
    --cache-dir) cache_args=(--cache-dir "$2"); shift 2 ;;
    --ipucc) ipucc=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
if (($# < 2)) || [[ ! $1 =~ ^(precompile|check|all)$ ]]; then
  echo "usage: $0 [--cache-dir DIR] [--ipucc BIN] precompile|check|all LIST [EXTRA...]" >&2
  exit 2
fi
phase=$1 list=$2
shift 2
extra=("$@")
[[ -r $list ]] || { echo "ci-precompile: $list: cannot read the list" >&2; exit 2; }
list_dir=$(cd "$(dirname "$list")" && pwd)

# One JSON field of a document on stdin (python3 is part of Debian's base CI images).
json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# compile_all EXPECT: compiles every configuration of the list (EXPECT=hit: each must be a hit);
# sets `count` and `failed`.
compile_all() {
  local expect=$1 line model json outcome
  local -a words
  count=0 failed=0
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%%#*}
    read -r -a words <<< "$line"
    ((${#words[@]})) || continue
    model=${words[0]}
    [[ $model == /* ]] || model=$list_dir/$model
    local -a args=("$model" "${words[@]:1}" "${extra[@]}")
    count=$((count + 1))
    if ! json=$("$ipucc" compile "${args[@]}" "${cache_args[@]}" --json); then
      echo "ci-precompile: FAILED: ipucc compile ${args[*]}" >&2
      failed=$((failed + 1))
      continue
    fi
    outcome=$(json_field cache <<< "$json")
    echo "ci-precompile: $outcome: ${args[*]}"
    if [[ $expect == hit && $outcome != hit ]]; then
      echo "ci-precompile: not precompiled ($outcome): ${args[*]}" >&2
      failed=$((failed + 1))
    fi
  done < "$list"
  ((failed == 0))
}

stat_field() { "$ipucc" cache stats "${cache_args[@]}" --json | json_field "$1"; }

precompile() {
  compile_all any || return 1
  echo "ci-precompile: precompiled $count configuration(s)"
}

check() {
  local misses_before hits_before misses hits
  misses_before=$(stat_field misses)
  hits_before=$(stat_field hits)
  compile_all hit || return 1
  misses=$(stat_field misses)
  hits=$(stat_field hits)
  if ((misses != misses_before || hits != hits_before + count)); then
    echo "ci-precompile: cache stats moved unexpectedly: misses $misses_before -> $misses, hits $hits_before -> $hits" \
         "for $count configuration(s)" >&2
    return 1
  fi
  echo "ci-precompile: all $count configuration(s) found without compiling (misses stay $misses, hits $hits_before -> $hits)"
}

case $phase in
  precompile) precompile ;;
  check) check ;;
  all) precompile && check ;;
esac
