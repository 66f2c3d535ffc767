#!/usr/bin/env bash
# ipucc cache: stats, list, show, verify, gc, evict, clear; corrupt entries found by compile are
# quarantined and recompiled; --cache-max-size keeps the cache under a limit (docs/cache.md).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_sequential.json
SMALL=(--tiles-per-ipu 64)

# Compiles MLP with extra flags; prints the entry path.
compile_entry() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" "$@" --json
  json_get "$STDOUT" 'd["entry"]'
}

test_stats_count_miss_then_hit() {
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["hits"] == 0 and d["misses"] == 0 and d["entries"] == 0 and d["bytes"] == 0'
  compile_entry > /dev/null
  compile_entry > /dev/null
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_exit 0 "$IPUCC" cache stats --json
  local out=$STDOUT
  expect_json "$out" 'd["schema_version"] == 1 and d["tool"] == "ipucc" and d["command"] == "cache stats"'
  expect_json "$out" 'd["hits"] == 1 and d["misses"] == 1 and d["compiles_avoided"] == 1'
  expect_json "$out" 'd["corrupt_found"] == 0 and d["evictions"] == 0 and d["entries"] == 1'
  expect_json "$out" 'd["dir"] == __import__("os").environ["IPUCC_CACHE_DIR"]'
  expect_json "$out" 'd["limit_bytes"] == 5 * 2**30' "default limit 5G"
  local entry
  entry=$("$IPUCC" cache list --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["entries"][0]["path"])')
  expect_json "$out" "d[\"bytes\"] == $(stat -c %s "$entry") + $(stat -c %s "${entry%.ipuexe}.manifest")" "bytes = exe + manifest"
  IPUCC_CACHE_MAX_SIZE=3M expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["limit_bytes"] == 3 * 2**20'
  expect_exit 0 "$IPUCC" cache stats
  expect_stdout_contains "compiles avoided  1"
}

test_list_and_show() {
  local key
  compile_entry --batch-size 16 > /dev/null
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" cache list --json
  expect_json "$STDOUT" 'd["command"] == "cache list" and len(d["entries"]) == 1'
  expect_json "$STDOUT" "d['entries'][0]['key'] == '$key'"
  expect_json "$STDOUT" 'd["entries"][0]["options"]["batch_size"] == "16" and len(d["entries"][0]["model_structure_sha256"]) == 64'
  expect_json "$STDOUT" 'd["entries"][0]["bytes"] > 0 and d["entries"][0]["path"].endswith(d["entries"][0]["key"] + ".ipuexe")'
  expect_json "$STDOUT" 'd["entries"][0]["last_use"].endswith("Z")'
  # The model file the entry was compiled for, as an absolute path (a relative one is resolved).
  expect_json "$STDOUT" "d['entries'][0]['model'] == '$MLP'"
  expect_exit 0 "$IPUCC" cache list
  expect_stdout_contains "${key:0:16}"
  expect_stdout_contains "batch=16 mode=train arch=mk2 precision=fp32 optimizer="
  expect_stdout_contains "  $MLP"
  # Entries that differ only in precision or optimizer read differently.
  compile_entry --batch-size 16 --precision fp16 --optimizer adam > /dev/null
  expect_exit 0 "$IPUCC" cache list
  expect_stdout_contains "batch=16 mode=train arch=mk2 precision=fp16 optimizer=adam"
  cp "$MLP" here.json
  expect_exit 0 "$IPUCC" compile here.json "${SMALL[@]}" --batch-size 8 --json
  expect_exit 0 "$IPUCC" cache list --json
  expect_json "$STDOUT" "'$E2E_TMP/here.json' in [e['model'] for e in d['entries']]"
  expect_exit 0 "$IPUCC" cache show "${key:0:8}"
  expect_stdout_contains "$key"
  expect_stdout_contains "option.batch_size = 16"
  expect_stdout_contains "model mlp_sequential, mode train"
  expect_exit 0 "$IPUCC" cache show "${key:0:10}" --json
  expect_json "$STDOUT" "d['key'] == '$key' and d['manifest']['option.batch_size'] == '16'"
  expect_json "$STDOUT" 'd["executable"]["batch_size"] == 16 and d["executable"]["model_name"] == "mlp_sequential"'
  expect_exit 2 "$IPUCC" cache show abc
  expect_stderr_starts_with "ipucc: error:"
  expect_exit 6 "$IPUCC" cache show 00000000
}

# A hit reports from the executable's summary what the compile that stored it reported: the
# estimates, the pipeline and its schedule, the target, the size. A pipelined, replicated layout
# fills every part (stages, a schedule, an all-reduce).
test_a_hit_reports_what_the_miss_did() {
  local layout=(--num-ipus 4 --replicas 2 --gradient-accumulation 4)
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional_staged.json" "${SMALL[@]}" "${layout[@]}" --json
  cp "$STDOUT" miss.json
  expect_json miss.json 'd["cache"] == "miss" and d["pipeline"]["stages"] == 2 and d["estimates"]["all_reduce"] is not None'
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional_staged.json" "${SMALL[@]}" "${layout[@]}" --json
  cp "$STDOUT" hit.json
  "$PYTHON" - miss.json hit.json <<'PY' || fail "the hit's report differs from the miss's"
import json, sys
miss, hit = (json.load(open(f)) for f in sys.argv[1:])
assert hit["cache"] == "hit", hit["cache"]
for d in (miss, hit):
    for varying in ("cache", "timings", "passes"):
        del d[varying]
assert miss == hit, [k for k in miss if miss[k] != hit.get(k)]
PY
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional_staged.json" "${SMALL[@]}" "${layout[@]}"
  cp "$STDOUT" hit.txt
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional_staged.json" "${SMALL[@]}" "${layout[@]}" --force
  diff <(sed 1d hit.txt) <(sed 1d "$STDOUT") || fail "the hit's summary differs from a compile's"
}

test_corrupt_entry_is_quarantined_and_recompiled() {
  local entry key
  entry=$(compile_entry)
  key=$(json_get "$STDOUT" 'd["key"]')
  e2e_data flip "$entry" -1000
  # The payload is not read by a plain compile's hit (its summary serves it), but by a run.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "a hit reads the summary alone"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json -o "$E2E_TMP/written.ipuexe"
  expect_json "$STDOUT" 'd["cache"] == "miss"' "a corrupt entry is recompiled"
  expect_stderr_contains "ipucc: warning: $entry:"
  expect_stderr_contains "moved to $IPUCC_CACHE_DIR/corrupt; recompiling"
  [[ $(grep -c "warning" "$STDERR") == 1 ]] || fail "expected exactly one warning: $(cat "$STDERR")"
  expect_file "$IPUCC_CACHE_DIR/corrupt/$key.ipuexe"
  expect_file "$IPUCC_CACHE_DIR/corrupt/$key.manifest"
  expect_file "$entry"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "the recompiled entry is good"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["corrupt_found"] == 1 and d["misses"] == 2 and d["hits"] == 2 and d["entries"] == 1'

  expect_exit 0 "$IPUCC" cache verify
  expect_stdout_contains "1 ok, 0 corrupt"
  e2e_data flip "$entry" -5
  expect_exit 6 "$IPUCC" cache verify
  expect_stdout_contains "0 ok, 1 corrupt"
  expect_no_file "$entry"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["corrupt_found"] == 2 and d["entries"] == 0 and d["bytes"] == 0'
  expect_exit 0 "$IPUCC" cache verify --json
  expect_json "$STDOUT" 'd["command"] == "cache verify" and d["ok"] == 0 and d["corrupt"] == 0'
}

# The lookup runs again after taking the key's lock; a stored manifest that does not match is
# still said once.
test_manifest_mismatch_warns_once() {
  local entry key manifest
  entry=$(compile_entry)
  key=$(json_get "$STDOUT" 'd["key"]')
  manifest=${entry%.ipuexe}.manifest
  sed -i 's/^option.batch_size=32$/option.batch_size=64/' "$manifest"
  grep -q '^option.batch_size=64$' "$manifest" || fail "the manifest has no option.batch_size=32 line to edit"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_stderr_contains "$manifest: stored manifest does not match key $key, first differing field 'option.batch_size'"
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "the recompiled entry replaced the edited one"
}

# Three entries last used 3, 2 and 1 days ago (their .ipuexe mtimes).
make_three_aged() {
  A=$(compile_entry --batch-size 8)
  B=$(compile_entry --batch-size 16)
  C=$(compile_entry --batch-size 24)
  touch -d '3 days ago' "$A"
  touch -d '2 days ago' "$B"
  touch -d '1 day ago' "$C"
}

test_gc_evicts_least_recently_used_first() {
  make_three_aged
  local total
  expect_exit 0 "$IPUCC" cache stats --json
  total=$(json_get "$STDOUT" 'd["bytes"]')
  expect_exit 0 "$IPUCC" cache gc --max-size "$((total - 1))" --json
  expect_json "$STDOUT" 'd["command"] == "cache gc" and len(d["removed"]) == 1'
  expect_no_file "$A"
  expect_file "$B"
  expect_file "$C"
  # Without --max-size, gc keeps the limit compiles keep: $IPUCC_CACHE_MAX_SIZE, else 5G.
  expect_exit 0 "$IPUCC" cache gc
  expect_stdout_contains "removed 0 entries"
  expect_file "$B"
  IPUCC_CACHE_MAX_SIZE=1K expect_exit 0 "$IPUCC" cache gc
  expect_stdout_contains "removed 2 entries"
  expect_no_file "$B"
  expect_no_file "$C"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["evictions"] == 3 and d["entries"] == 0 and d["bytes"] == 0'
  expect_eq "$(cat "$IPUCC_CACHE_DIR/size")" "0" "size file"
}

test_evict_older_than() {
  make_three_aged
  expect_exit 0 "$IPUCC" cache evict --older-than 36h
  expect_stdout_contains "removed 2 entries"
  expect_no_file "$A"
  expect_no_file "$B"
  expect_file "$C"
  expect_exit 0 "$IPUCC" cache evict --older-than 30d --json
  expect_json "$STDOUT" 'd["command"] == "cache evict" and d["removed"] == []'
  expect_file "$C"
}

test_clear_keeps_stats() {
  make_three_aged
  expect_exit 0 "$IPUCC" cache clear
  expect_stdout_contains "removed 3 entries"
  expect_no_file "$C"
  expect_eq "$(find "$IPUCC_CACHE_DIR/entries" -type f | wc -l)" 0 "files left in entries/ (a model note outliving its entry)"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["entries"] == 0 and d["bytes"] == 0 and d["misses"] == 3'
  expect_exit 0 "$IPUCC" cache list --json
  expect_json "$STDOUT" 'd["entries"] == []'
}

test_bad_size_and_age_are_usage_errors() {
  local bad
  for bad in 12X -5 "" 5GG 1.5G; do
    expect_exit 2 "$IPUCC" cache gc --max-size "$bad"
    expect_stderr_starts_with "ipucc: error:"
  done
  for bad in 30 3y d -1d; do
    expect_exit 2 "$IPUCC" cache evict --older-than "$bad"
    expect_stderr_starts_with "ipucc: error:"
  done
  expect_exit 2 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-max-size lots
  expect_stderr_starts_with "ipucc: error: --cache-max-size"
  IPUCC_CACHE_MAX_SIZE=lots expect_exit 2 "$IPUCC" cache gc
  expect_stderr_starts_with "ipucc: error: \$IPUCC_CACHE_MAX_SIZE: invalid size 'lots'"
  IPUCC_CACHE_MAX_SIZE=lots expect_exit 2 "$IPUCC" compile "$MLP" "${SMALL[@]}"
  expect_stderr_contains "IPUCC_CACHE_MAX_SIZE"
  expect_exit 2 "$IPUCC" cache
  expect_exit 2 "$IPUCC" cache frobnicate
}

test_compile_cache_max_size_keeps_newest() {
  local a b bytes
  a=$(compile_entry --batch-size 8)
  touch -d '1 hour ago' "$a"
  bytes=$(($(stat -c %s "$a") + $(stat -c %s "${a%.ipuexe}.manifest")))
  # Room for one entry and a half: storing the second evicts the first.
  b=$(compile_entry --batch-size 16 --cache-max-size "$((bytes * 3 / 2))")
  expect_no_file "$a"
  expect_file "$b"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["evictions"] == 1 and d["entries"] == 1'
  # The same limit from the environment.
  touch -d '1 hour ago' "$b"
  IPUCC_CACHE_MAX_SIZE=$((bytes * 3 / 2)) expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 24
  expect_no_file "$b"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["evictions"] == 2 and d["entries"] == 1'
}

# Weight values are not part of the key (docs/cache.md): two ONNX models differing only in their
# initializers' values share one entry, and each run uses its own model's weights.
test_models_differing_only_in_weights_share_an_entry() {
  e2e_data gemm-onnx a.onnx --in 6 --out 4 --seed 1 > a.json
  e2e_data gemm-onnx b.onnx --in 6 --out 4 --seed 2 > b.json
  expect_ne "$(sha256sum < a.onnx)" "$(sha256sum < b.onnx)" "model files"
  e2e_data npy x.npy --shape 8,6 --seed 7
  e2e_data gemm-ref x.npy a.json want_a.npy
  e2e_data gemm-ref x.npy b.json want_b.npy
  local run
  for run in a b a; do
    expect_exit 0 "$IPURUN" predict $run.onnx --batch-size 8 --tiles-per-ipu 64 --input x.npy --output got_$run.npy --json
    expect_json "$STDOUT" "d['cache'] == ('miss' if '$run' == 'a' and not __import__('os').path.exists('seen') else 'hit')"
    touch seen
    e2e_data compare got_$run.npy want_$run.npy > cmp.json
    expect_json cmp.json 'd["shape_equal"] and d["max_rel"] < 1e-5' "predictions of $run.onnx vs its own weights"
  done
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["misses"] == 1 and d["hits"] == 2 and d["entries"] == 1'
  # ipucc compile -o writes the model's own weights too: a's and b's executables differ, keys do not.
  expect_exit 0 "$IPUCC" compile a.onnx --mode infer --batch-size 8 --tiles-per-ipu 64 -o a.ipuexe --json
  local key_a
  key_a=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" compile b.onnx --mode infer --batch-size 8 --tiles-per-ipu 64 -o b.ipuexe --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key_a'"
  expect_ne "$(sha256sum < a.ipuexe)" "$(sha256sum < b.ipuexe)" "executables of a and b"
  expect_exit 0 "$IPURUN" predict b.ipuexe --input x.npy --output file_b.npy
  e2e_data compare file_b.npy want_b.npy > cmp.json
  expect_json cmp.json 'd["max_rel"] < 1e-5' "predictions of b.ipuexe"
  # A structural change (another output width) is another key.
  e2e_data gemm-onnx c.onnx --in 6 --out 5 --seed 1 > c.json
  expect_exit 0 "$IPUCC" compile c.onnx --mode infer --batch-size 8 --tiles-per-ipu 64 --json
  expect_json "$STDOUT" "d['cache'] == 'miss' and d['key'] != '$key_a'"
}

# JSON specs are keyed by their parsed content: whitespace and key order do not matter.
test_reformatted_spec_shares_an_entry() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  "$PYTHON" -c 'import json,sys; json.dump(json.load(open(sys.argv[1])), open("spaced.json", "w"), indent=7, sort_keys=False)' "$MLP"
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump(dict(reversed(list(d.items()))), open("reordered.json", "w"))' "$MLP"
  expect_exit 0 "$IPUCC" compile spaced.json "${SMALL[@]}" --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key'"
  expect_exit 0 "$IPUCC" compile reordered.json "${SMALL[@]}" --json
  expect_json "$STDOUT" "d['cache'] == 'hit' and d['key'] == '$key'"
}

test_explain_names_the_fields_that_differ() {
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["command"] == "cache explain" and d["hit"] is False and d["nearest"] is None'
  expect_json "$STDOUT" 'd["manifest"]["option.tiles_per_ipu"] == "64"'
  compile_entry --batch-size 16 > /dev/null
  local key16
  key16=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 16 --json
  expect_json "$STDOUT" "d['hit'] is True and d['key'] == '$key16' and d['nearest'] is None"
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 16
  expect_stdout_contains "exact hit"
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 8 --arch mk1 --json
  expect_json "$STDOUT" "d['hit'] is False and d['nearest']['key'] == '$key16'"
  expect_json "$STDOUT" 'd["nearest"]["differences"] == [
      {"field": "option.arch", "stored": "mk2", "requested": "mk1"},
      {"field": "option.batch_size", "stored": "16", "requested": "8"}]'
  # Inference does not use the training options: they read "unused" against a training entry.
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 16 --mode infer --json
  expect_json "$STDOUT" '[x["field"] for x in d["nearest"]["differences"]] == ["option.hyper_parameters_read",
      "option.loss", "option.mode", "option.optimizer"]'
  expect_json "$STDOUT" 'd["nearest"]["differences"][0]["requested"] == "unused"'
  # Hyper-parameter values are run-time values: another learning rate is the same entry, while
  # momentum 0 is another program (no velocity), which explain names.
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 16 --learning-rate 0.03
  expect_stdout_contains "exact hit"
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 16 --momentum 0
  expect_stdout_contains "option.hyper_parameters_read"
  expect_stdout_contains "stored learning_rate,momentum, requested learning_rate"
  expect_exit 0 "$IPUCC" cache explain "$MLP" "${SMALL[@]}" --batch-size 8 --arch mk1
  expect_stdout_contains "miss; nearest entry ${key16:0:16} differs in 2 fields"
  expect_stdout_contains "option.batch_size"
  # An entry's key: compared with the nearest other entry.
  compile_entry --batch-size 8 > /dev/null
  local key8
  key8=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" cache explain "${key16:0:10}" --json
  expect_json "$STDOUT" "d['key'] == '$key16' and d['hit'] is False and d['nearest']['key'] == '$key8'"
  expect_json "$STDOUT" 'd["nearest"]["differences"] == [{"field": "option.batch_size", "stored": "8", "requested": "16"}]'
  expect_exit 2 "$IPUCC" cache explain zz
  expect_error 6 "no cache entry" -- "$IPUCC" cache explain 0123456789abcdef
  expect_error 6 "missing.json" -- "$IPUCC" cache explain missing.json
}

run_tests "$@"
