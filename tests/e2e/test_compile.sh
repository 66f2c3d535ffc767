#!/usr/bin/env bash
# ipucc compile: every model compiles, --json output, the content-addressed cache (miss, hit,
# --force, --no-cache, default location), -o files, and which flags change the key.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_sequential.json
STAGED=$MODELS/mlp_sequential_staged.json
SMALL=(--tiles-per-ipu 64)

# Prints the key of a compile of MLP with the given flags (and checks it succeeded).
key_of() {
  expect_exit 0 "$IPUCC" compile "$@" --json
  json_get "$STDOUT" 'd["key"]'
}

# Models without pipeline stages; staged ones are covered by test_staged_models_compile.
unstaged_models() {
  "$PYTHON" - "$MODELS" <<'EOF'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    m = json.load(open(path))
    layers = m.get("layers", m.get("nodes", []))
    if "stage_assignment" not in m and not any("stage" in l for l in layers):
        print(path)
EOF
}

test_every_unstaged_model_compiles() {
  local model count=0
  for model in $(unstaged_models); do
    expect_exit 0 "$IPUCC" compile "$model" "${SMALL[@]}" --json
    expect_json "$STDOUT" 'd["schema_version"] == 1 and d["cache"] == "miss"' "$model"
    expect_json "$STDOUT" 'd["estimates"]["tiles_used"] > 0 and d["estimates"]["peak_tile_bytes"] <= d["target"]["bytes_per_tile"]'
    expect_file "$(json_get "$STDOUT" 'd["entry"]')"
    count=$((count + 1))
  done
  ((count >= 2)) || fail "expected at least 2 unstaged models in $MODELS, found $count"
}

# Stage s runs on IPU s; a pipeline needs at least as many micro-batches as stages to fill.
test_staged_models_compile() {
  local model
  for model in "$MODELS"/*staged*.json; do
    expect_exit 0 "$IPUCC" compile "$model" "${SMALL[@]}" --gradient-accumulation 2 --steps-per-execution 2 --json \
      -o staged.ipuexe
    expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["target"]["num_ipus"] == 2' "$model: two stages, two IPUs"
    expect_exit 0 "$IPURUN" train staged.ipuexe --data synthetic:2048 --steps-per-epoch 8 --progress none
  done
}

test_stage_assignment_flag_compiles() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-assignment 0,0,1,1,1,1 --gradient-accumulation 2 \
    --steps-per-execution 2 --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["target"]["num_ipus"] == 2'
}

test_single_stage_assignment_compiles() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --stage-assignment 0,0,0,0,0,0 --json
  expect_json "$STDOUT" 'd["target"]["num_ipus"] == 1 and d["pipeline"]["stages"] == 1'
}

test_json_output_fields() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 16 --steps-per-execution 4 --json
  local out=$STDOUT
  expect_json "$out" 'd["schema_version"] == 1 and d["tool"] == "ipucc" and d["command"] == "compile"'
  expect_json "$out" 'd["model"].endswith("/models/mlp_sequential.json")'
  expect_json "$out" 'len(d["key"]) == 64 and all(c in "0123456789abcdef" for c in d["key"])' "key is 64 hex"
  expect_json "$out" 'd["cache"] == "miss" and d["output"] is None'
  expect_json "$out" 'd["entry"].startswith(__import__("os").environ["IPUCC_CACHE_DIR"] + "/")' "entry inside the cache"
  expect_json "$out" 'd["entry"].endswith(d["key"] + ".ipuexe")'
  expect_json "$out" 'd["mode"] == "train" and d["batch_size"] == 16 and d["steps_per_execution"] == 4'
  expect_json "$out" 'd["target"]["arch"] == "mk2" and d["target"]["tiles_per_ipu"] == 64 and d["target"]["num_ipus"] == 1'
  expect_json "$out" 'all(isinstance(d["timings"][k], (int, float)) and d["timings"][k] >= 0 for k in ("total_s", "frontend_s", "passes_s", "lowering_s"))'
  expect_json "$out" 'd["timings"]["lowering_s"] > 0' "a miss compiles"
  expect_json "$out" 'sorted(d["estimates"]["cycles_per_step"]) == ["evaluate", "predict", "train"]'
  expect_json "$out" 'all(v > 0 for v in d["estimates"]["cycles_per_step"].values()) and d["estimates"]["seconds_per_step"] > 0'
  expect_json "$out" 'd["estimates"]["vertices"] > 0 and d["estimates"]["compute_sets"] > 0'
  local entry bytes
  entry=$(json_get "$out" 'd["entry"]')
  bytes=$(json_get "$out" 'd["bytes"]')
  expect_eq "$(stat -c %s "$entry")" "$bytes" "entry size vs \"bytes\""
}

test_infer_mode_has_only_predict() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --mode infer --json
  expect_json "$STDOUT" 'd["mode"] == "infer" and list(d["estimates"]["cycles_per_step"]) == ["predict"]'
}

test_second_compile_is_a_hit_that_does_not_compile() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  cp "$STDOUT" first.json
  local entry inode
  entry=$(json_get first.json 'd["entry"]')
  inode=$(stat -c %i "$entry")
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  cp "$STDOUT" second.json
  expect_json second.json 'd["cache"] == "hit"'
  expect_json second.json 'd["timings"]["lowering_s"] == 0 and d["timings"]["frontend_s"] == 0 and d["timings"]["passes_s"] == 0' "a hit must not compile"
  expect_eq "$(json_get first.json 'd["key"]')" "$(json_get second.json 'd["key"]')" "key"
  expect_eq "$(json_get second.json 'd["entry"]')" "$entry" "entry"
  expect_eq "$(json_get second.json 'd["estimates"]')" "$(json_get first.json 'd["estimates"]')" "estimates"
  expect_eq "$(stat -c %i "$entry")" "$inode" "entry inode (a hit must not rewrite the entry)"
  expect_stderr_not_contains "warning"
}

test_human_readable_output() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}"
  expect_stdout_contains "mlp_sequential.json: "
  expect_stdout_contains "(miss, "
  expect_stdout_contains "64 tiles used"
  expect_stdout_contains "train: "
  expect_stdout_contains "cycles/step"
  expect_stdout_contains "entry $IPUCC_CACHE_DIR/entries/"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}"
  expect_stdout_contains "(hit, "
}

test_dump_plan_names_each_compute_sets_ops() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --dump-plan
  expect_stdout_contains "exchange_B  ops"
  grep -qE '^0 +forward/0/1 .* dense1/matmul$' "$STDOUT" || fail "the first compute set does not name dense1/matmul"
}

# ir_after PASS FILE: the IR a --dump-ir-after output FILE holds under PASS's heading.
ir_after() {
  awk -v heading="// IR after $1" '/^\/\/ IR after / { on = ($0 == heading); next } on' "$2"
}

test_dump_ir_after_prints_the_ir_after_each_pass_named() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" # stored: a dump compiles even on a hit
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --dump-ir-after add-loss,fuse-epilogues
  expect_eq "$(grep '^// IR after' "$STDOUT" | tr '\n' ' ')" "// IR after add-loss // IR after fuse-epilogues " \
    "the headings, in the passes' order"
  ir_after add-loss "$STDOUT" > after_loss
  ir_after fuse-epilogues "$STDOUT" > after_fusion
  grep -q ' = SparseCrossEntropy(dense5/softmax, labels)$' after_loss || fail "add-loss added no loss"
  ! grep -q '^backward' after_loss || fail "the IR after add-loss already has a backward pass"
  grep -q ' = BiasAdd(dense1/matmul, dense1/bias)$' after_loss || fail "the IR after add-loss is fused"
  grep -q '^backward' after_fusion || fail "the IR after fuse-epilogues has no backward pass"
  grep -q 'dense1/relu:f32\[32,256\] = MatMul+Relu(flatten, dense1/kernel, dense1/bias)$' after_fusion ||
    fail "fuse-epilogues did not fuse dense1"
}

test_the_ir_after_the_last_pass_is_what_dump_ir_prints() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --dump-ir
  cp "$STDOUT" dump_ir
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --dump-ir-after all
  # Every pass that ran, in order: recompute runs only with --recompute.
  expect_eq "$(grep -c "^// IR after" "$STDOUT")" 7 "passes dumped"
  # The compile's summary follows either IR: its lines name no stage.
  ir_after fuse-layer-norm "$STDOUT" | grep ' stage [0-9]*: ' > last
  grep ' stage [0-9]*: ' dump_ir | diff - last > /dev/null || fail "the IR after fuse-layer-norm differs from --dump-ir's"
}

test_dump_ir_after_a_pass_that_does_not_run_says_so() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --mode infer --no-cache --dump-ir-after autodiff,fuse-gelu
  expect_stderr_contains "ipucc: note: --dump-ir-after autodiff: the pass did not run in this compile (it runs when training)"
  expect_eq "$(grep '^// IR after' "$STDOUT")" "// IR after fuse-gelu" "headings"
}

test_dump_ir_after_an_unknown_pass_is_a_usage_error() {
  expect_error 2 "--dump-ir-after: no graph pass is named 'fusion'; the passes, in order: 'bind-graph-loss'," \
    -- "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --dump-ir-after fuse-gelu,fusion -o x.ipuexe
  [[ ! -e x.ipuexe ]] || fail "a refused compile wrote its output"
}

test_json_lists_the_graph_passes_in_order() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" '[p["name"] for p in d["passes"]] == ["bind-graph-loss", "half-weight-copies", "bind-interface", "add-loss", "autodiff", "fp32-output-softmax", "fuse-epilogues", "fuse-gelu", "fuse-silu", "fuse-layer-norm", "recompute"]'
  expect_json "$STDOUT" '[p["name"] for p in d["passes"] if p["ran"]] == ["bind-interface", "add-loss", "autodiff", "fuse-epilogues", "fuse-gelu", "fuse-silu", "fuse-layer-norm"]'
  expect_json "$STDOUT" 'all(p["seconds"] >= 0 and (p["ran"] or p["seconds"] == 0) for p in d["passes"])'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json --precision mixed --recompute
  expect_json "$STDOUT" '[p["name"] for p in d["passes"] if not p["ran"]] == ["bind-graph-loss"]' "mixed precision with recompute"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit" and d["passes"] == []' "a hit runs no pass"
}

test_force_recompiles() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local key entry inode
  key=$(json_get "$STDOUT" 'd["key"]')
  entry=$(json_get "$STDOUT" 'd["entry"]')
  inode=$(stat -c %i "$entry")
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json --force
  expect_json "$STDOUT" 'd["cache"] == "forced" and d["timings"]["lowering_s"] > 0'
  expect_eq "$(json_get "$STDOUT" 'd["key"]')" "$key" "key under --force"
  expect_ne "$(stat -c %i "$entry")" "$inode" "entry inode after --force (the entry is rewritten)"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
}

test_output_file_is_runnable() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 8 -o mlp.ipuexe --json
  expect_json "$STDOUT" 'd["output"] == "mlp.ipuexe"'
  expect_file mlp.ipuexe
  expect_eq "$(head -c 8 mlp.ipuexe | od -An -c | tr -s ' ')" " I P U C C E X 032" "magic"
  cmp -s mlp.ipuexe "$(json_get "$STDOUT" 'd["entry"]')" || fail "-o file differs from the cache entry"
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data synthetic:20 --progress none
  expect_stdout_contains "predicted 20 samples"
  # A hit writes -o too, with the same bytes.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 8 -o again.ipuexe
  expect_stdout_contains "(hit, "
  expect_stdout_contains "wrote again.ipuexe"
  cmp -s mlp.ipuexe again.ipuexe || fail "-o on a hit wrote different bytes"
  # -o replaces an executable an earlier compile wrote (a user's file is refused: test_outputs.sh).
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --batch-size 16 -o again.ipuexe
  cmp -s mlp.ipuexe again.ipuexe && fail "-o did not replace the earlier output"
  expect_exit 0 "$IPURUN" predict again.ipuexe --data synthetic:32 --progress none --json
  expect_json "$STDOUT" 'd["shape"][0] == 32'
}

test_compile_is_deterministic() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache -o a.ipuexe
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache -o b.ipuexe
  cmp -s a.ipuexe b.ipuexe || fail "two compiles of the same inputs gave different executables"
}

test_keys_differ_when_codegen_options_differ() {
  local -a keys=()
  keys+=("$(key_of "$MLP" "${SMALL[@]}")")
  keys+=("$(key_of "$MLP" "${SMALL[@]}" --batch-size 16)")
  keys+=("$(key_of "$MLP" "${SMALL[@]}" --arch mk1)")
  keys+=("$(key_of "$MLP" "${SMALL[@]}" --mode infer)")
  keys+=("$(key_of "$MLP" "${SMALL[@]}" --momentum 0)")
  keys+=("$(key_of "$MLP" "${SMALL[@]}" --steps-per-execution 4)")
  keys+=("$(key_of "$MLP" --tiles-per-ipu 128)")
  keys+=("$(key_of "$MLP" "${SMALL[@]}" --bytes-per-tile 500000)")
  keys+=("$(key_of "$MODELS/mlp_functional.json" "${SMALL[@]}")")
  sed 's/"units": 32/"units": 48/' "$MLP" > wider.json
  keys+=("$(key_of wider.json "${SMALL[@]}")")
  local distinct
  distinct=$(printf '%s\n' "${keys[@]}" | sort -u | wc -l)
  expect_eq "$distinct" "${#keys[@]}" "number of distinct keys"
}

test_keys_equal_across_flag_order_and_cache_dirs() {
  local a b c d e
  a=$(key_of "$MLP" --tiles-per-ipu 64 --batch-size 16 --mode infer --learning-rate 0.05)
  b=$(key_of --learning-rate 0.05 --mode infer "$MLP" --batch-size 16 --tiles-per-ipu 64)
  expect_eq "$a" "$b" "key across flag orders"
  expect_exit 0 "$IPUCC" compile "$MLP" --tiles-per-ipu 64 --batch-size 16 --mode infer --learning-rate 0.05 --cache-dir other --json
  expect_json "$STDOUT" 'd["cache"] == "miss"' "a fresh cache dir"
  expect_eq "$(json_get "$STDOUT" 'd["key"]')" "$a" "key across cache dirs"
  expect_json "$STDOUT" 'd["entry"].startswith("other/")'
  # Output and reporting flags are not part of the key.
  c=$(key_of "$MLP" --tiles-per-ipu 64 --batch-size 16 --mode infer --learning-rate 0.05 -o x.ipuexe --force)
  expect_eq "$c" "$a" "key with -o and --force"
  # The key is of the model's content, not its path.
  mkdir elsewhere
  cp "$MLP" elsewhere/renamed.json
  expect_exit 0 "$IPUCC" compile elsewhere/renamed.json --tiles-per-ipu 64 --batch-size 16 --mode infer --learning-rate 0.05 --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "same content under another path"
  d=$(json_get "$STDOUT" 'd["key"]')
  expect_eq "$d" "$a" "key of a copied model"
  # Defaults spelled out: --batch-size 32 and --mode train are the defaults.
  e=$(key_of "$MLP" "${SMALL[@]}")
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --batch-size 32 --mode train --arch mk2 --steps-per-execution 1)" "$e" "key with defaults spelled out"
}

# Training options are keyed by the values the compile uses: spelling out the spec's own loss,
# optimizer, learning rate (0.01) and momentum (0.9) is the same program, and inference ignores them.
test_options_equal_to_the_models_values_share_the_key() {
  local plain
  plain=$(key_of "$MLP" "${SMALL[@]}")
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --learning-rate 0.01 --momentum 0.9 --loss sparse_categorical_crossentropy \
                 --optimizer sgd)" "$plain" "key with the spec's own training values"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --learning-rate 0.01 --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "the spec's learning rate given explicitly"
  plain=$(key_of "$MLP" "${SMALL[@]}" --mode infer)
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --mode infer --learning-rate 0.5 --momentum 0.1)" "$plain" \
    "inference key with training options"
  # An ONNX model trains at learning rate 0.01 without momentum unless told otherwise.
  e2e_data gemm-onnx model.onnx --in 8 --out 4 >/dev/null
  plain=$(key_of model.onnx "${SMALL[@]}" --loss sparse_categorical_crossentropy)
  expect_eq "$(key_of model.onnx "${SMALL[@]}" --loss sparse_categorical_crossentropy --learning-rate 0.01 --momentum 0)" \
    "$plain" "ONNX key with the default training values"
}

# The optimizer is keyed, its hyper-parameter values are not (docs/cache.md): they are run-time
# values, the executable's defaults, so Adam with any learning rate, betas, epsilon or weight decay
# is one program.
test_adam_options_are_keyed() {
  local adam
  adam=$(key_of "$MLP" "${SMALL[@]}" --optimizer adam)
  expect_ne "$adam" "$(key_of "$MLP" "${SMALL[@]}")" "adam against the spec's sgd"
  expect_ne "$adam" "$(key_of "$MLP" "${SMALL[@]}" --optimizer adamw)" "adam against adamw"
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --optimizer adam --learning-rate 0.001 --beta1 0.9 --beta2 0.999 \
                 --epsilon 1e-7 --weight-decay 0)" "$adam" "adam with Keras's defaults spelled out"
  local -a changes=("--learning-rate 0.01" "--beta1 0.8" "--beta2 0.99" "--epsilon 1e-8" "--weight-decay 0.01"
                    "--lr-schedule cosine:warmup_target=0.01,warmup_steps=10,decay_steps=100")
  local change
  for change in "${changes[@]}"; do
    # shellcheck disable=SC2086 # a flag and its value
    expect_eq "$(key_of "$MLP" "${SMALL[@]}" --optimizer adam $change)" "$adam" "adam with $change"
  done
  # A spec saying adam is keyed like the flag (its text differs, so compare what the key holds).
  "$PYTHON" -c 'import json, sys; m = json.load(open(sys.argv[1])); m["optimizer"] = {"type": "adam"}; json.dump(m, open("adam.json", "w"))' "$MLP"
  expect_exit 0 "$IPUCC" compile adam.json "${SMALL[@]}" --optimizer adam --beta2 0.999 --json
  expect_exit 0 "$IPUCC" compile adam.json "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "an adam spec with its own beta_2 given as a flag"
}

# LAMB reads its hyper-parameters from the streamed tensor as every optimizer does: two compiles
# differing only in its values or learning-rate schedule are one cache entry.
test_lamb_values_are_one_cache_entry() {
  local flags
  for flags in "--learning-rate 0.001" "--learning-rate 0.003" "--beta1 0.8 --weight-decay 0.01" \
    "--lr-schedule cosine:initial_learning_rate=0,warmup_target=0.01,warmup_steps=10,decay_steps=100"; do
    # shellcheck disable=SC2086 # flags and their values
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --optimizer lamb $flags --json
  done
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["entries"] == 1 and d["misses"] == 1 and d["hits"] == 3'
}

# Every other optimizer keys what changes its program: which hyper-parameters the update reads (a
# momentum or a dampening that is zero or not, plain SGD or not), Nesterov, centered, Adagrad's
# initial accumulator; hyper-parameter values (after ':' in each list's second half) share the key.
test_other_optimizer_options_are_keyed() {
  local plain variant base change optimizer defaults changes
  local -a change_list
  plain=$(key_of "$MLP" "${SMALL[@]}")
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --optimizer sgd --no-nesterov --dampening 0 --weight-decay 0)" "$plain" \
    "sgd with its defaults spelled out"
  for change in "--nesterov" "--dampening 0.5" "--weight-decay 0.001"; do
    # shellcheck disable=SC2086 # a flag and its value
    expect_ne "$(key_of "$MLP" "${SMALL[@]}" $change)" "$plain" "sgd with $change"
  done
  local same
  for variant in "rmsprop:--rho 0.9 --momentum 0 --epsilon 1e-7 --no-centered --weight-decay 0:--momentum 0.5|--centered:--rho 0.8|--epsilon 1e-6" \
    "adagrad:--initial-accumulator-value 0.1 --epsilon 1e-7:--initial-accumulator-value 0:--weight-decay 0.01" \
    "adamax:--beta1 0.9 --beta2 0.999 --epsilon 1e-7::--beta2 0.99|--learning-rate 0.002" \
    "lamb:--beta1 0.9 --beta2 0.999 --epsilon 1e-6::--learning-rate 0.002|--beta1 0.8|--beta2 0.99|--epsilon 1e-7|--weight-decay 0.01"; do
    IFS=: read -r optimizer defaults changes same <<<"$variant"
    base=$(key_of "$MLP" "${SMALL[@]}" --optimizer "$optimizer")
    expect_ne "$base" "$plain" "$optimizer against the spec's sgd"
    # shellcheck disable=SC2086 # flags and their values
    expect_eq "$(key_of "$MLP" "${SMALL[@]}" --optimizer "$optimizer" $defaults)" "$base" \
      "$optimizer with Keras's defaults spelled out"
    IFS='|' read -r -a change_list <<<"$changes"
    for change in "${change_list[@]}"; do
      # shellcheck disable=SC2086
      expect_ne "$(key_of "$MLP" "${SMALL[@]}" --optimizer "$optimizer" $change)" "$base" "$optimizer with $change"
    done
    IFS='|' read -r -a change_list <<<"$same"
    for change in "${change_list[@]}"; do
      # shellcheck disable=SC2086
      expect_eq "$(key_of "$MLP" "${SMALL[@]}" --optimizer "$optimizer" $change)" "$base" "$optimizer with $change"
    done
  done
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --optimizer adamax)" "$(key_of "$MLP" "${SMALL[@]}" --optimizer adam)" \
    "adamax against adam"
  # Clipping is keyed with any optimizer, and --global-clipnorm 0 (no clipping) is the plain key.
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --global-clipnorm 0)" "$plain" "sgd with no clipping spelled out"
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --global-clipnorm 1)" "$plain" "sgd with clipping"
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --global-clipnorm 1)" "$(key_of "$MLP" "${SMALL[@]}" --global-clipnorm 2)" \
    "two clip norms"
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --optimizer adam --global-clipnorm 1)" \
    "$(key_of "$MLP" "${SMALL[@]}" --optimizer adam)" "adam with clipping"
}

# Options that cannot change a program (a schedule for a model without stages, --recompute in
# inference, --available-memory-proportion at poplibs' default) are not part of the key: they
# make no second entry.
test_options_that_change_nothing_share_the_key() {
  local plain staged
  plain=$(key_of "$MLP" "${SMALL[@]}")
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --schedule interleaved)" "$plain" "one stage: schedule"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --schedule sequential --available-memory-proportion 0.6 --json
  expect_json "$STDOUT" 'd["cache"] == "hit" and d["pipeline"]["schedule"] == "none"'
  # Recomputation on one IPU and another share of a tile for MatMuls are other programs.
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --recompute)" "$plain" "one stage: recompute"
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --recompute --recompute-checkpoints dense1)" \
    "$(key_of "$MLP" "${SMALL[@]}" --recompute)" "one stage: recompute checkpoints"
  expect_ne "$(key_of "$MLP" "${SMALL[@]}" --available-memory-proportion 0.3)" "$plain" "proportion 0.3"
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --available-memory-proportion 0.30)" \
    "$(key_of "$MLP" "${SMALL[@]}" --available-memory-proportion 0.3)" "0.30 and 0.3"
  expect_eq "$(key_of "$MLP" "${SMALL[@]}" --mode infer --recompute)" "$(key_of "$MLP" "${SMALL[@]}" --mode infer)" \
    "one stage, inference: recompute"
  staged=$(key_of "$STAGED" "${SMALL[@]}" --mode infer)
  expect_eq "$(key_of "$STAGED" "${SMALL[@]}" --mode infer --recompute)" "$staged" "inference: recompute"
  # With stages, both change the program.
  staged=$(key_of "$STAGED" "${SMALL[@]}")
  expect_ne "$(key_of "$STAGED" "${SMALL[@]}" --recompute)" "$staged" "training with stages: recompute"
  expect_ne "$(key_of "$STAGED" "${SMALL[@]}" --schedule interleaved)" "$staged" "training with stages: schedule"
}

# --gradient-accumulation defaults to the fewest micro-batches that fill the pipeline (the stage
# count, grouped and interleaved schedules, training), --steps-per-execution to one update; a
# pipelined model compiles without flags and says what it chose.
test_defaults_follow_the_model() {
  expect_exit 0 "$IPUCC" compile "$STAGED" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["pipeline"]["gradient_accumulation"] == 2 and d["steps_per_execution"] == 2'
  expect_stderr_contains "ipucc: note: $STAGED: 2 pipeline stages: --gradient-accumulation defaults to 2, the fewest micro-batches that fill the grouped pipeline, and --steps-per-execution to 2, one update"
  # The same values given explicitly are the same entry, and say nothing of defaults (only the
  # stage imbalance every pipelined compile reports).
  expect_exit 0 "$IPUCC" compile "$STAGED" "${SMALL[@]}" --gradient-accumulation 2 --steps-per-execution 2 --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_stderr_not_contains "defaults to"
  expect_stderr_contains "stage imbalance: slowest stage"
  # --gradient-accumulation alone: one update per execution.
  expect_exit 0 "$IPUCC" compile "$STAGED" "${SMALL[@]}" --gradient-accumulation 4 --json
  expect_json "$STDOUT" 'd["pipeline"]["gradient_accumulation"] == 4 and d["steps_per_execution"] == 4'
  # The sequential schedule needs no filling; inference has no updates; one stage needs none.
  expect_exit 0 "$IPUCC" compile "$STAGED" "${SMALL[@]}" --schedule sequential --json
  expect_json "$STDOUT" 'd["pipeline"]["gradient_accumulation"] == 1 and d["steps_per_execution"] == 1'
  expect_exit 0 "$IPUCC" compile "$STAGED" "${SMALL[@]}" --mode infer --json
  expect_json "$STDOUT" 'd["steps_per_execution"] == 1'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["pipeline"]["gradient_accumulation"] == 1 and d["steps_per_execution"] == 1'
  expect_stderr_not_contains "note:"
  # Too few micro-batches given explicitly is still an error: a flag the model cannot take.
  expect_error 2 "the grouped schedule needs --gradient-accumulation >= 2" -- \
    "$IPUCC" compile "$STAGED" "${SMALL[@]}" --gradient-accumulation 1
  # ipurun MODEL takes the same defaults and trains.
  expect_exit 0 "$IPURUN" train "$STAGED" "${SMALL[@]}" --data synthetic:64 --progress none --json
  expect_json "$STDOUT" 'd["steps_per_execution"] == 2'
  expect_stderr_contains "ipurun: note: $STAGED: 2 pipeline stages"
}

# One estimate per step: the summary's, estimates.cycles_per_step and pipeline.cycles_per_step agree,
# and the pipeline's compute and transfer parts add up to it.
test_summary_and_json_agree_on_cycles_per_step() {
  local args program
  for args in "" "--gradient-accumulation 4 --replicas 2" "--mode infer" "--stage-assignment 0,0,0,1,1,1"; do
    program=train
    [[ $args == *infer* ]] && program=predict
    # shellcheck disable=SC2086
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" $args --json
    expect_json "$STDOUT" "d['pipeline']['cycles_per_step'] == d['estimates']['cycles_per_step']['$program']" "$args: json"
    expect_json "$STDOUT" "abs(d['pipeline']['compute_cycles_per_step'] + d['pipeline']['transfer_cycles_per_step'] - d['pipeline']['cycles_per_step']) < 1" "$args: parts"
    cp "$STDOUT" c.json
    # shellcheck disable=SC2086
    expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" $args
    expect_stdout_contains "$program: $(json_get c.json "format(d['pipeline']['cycles_per_step'], ',.0f')") cycles/step"
  done
  # Without stages the schedule holds the compute only: each step's infeed and outfeed are transfers.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["pipeline"]["transfer_cycles_per_step"] > 0'
}

test_no_cache_neither_reads_nor_writes() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --json
  expect_json "$STDOUT" 'd["cache"] == "disabled" and d["entry"] is None and d["timings"]["lowering_s"] > 0'
  expect_no_file "$IPUCC_CACHE_DIR"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"' "--no-cache wrote nothing"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --json -o nc.ipuexe
  expect_json "$STDOUT" 'd["cache"] == "disabled" and d["timings"]["lowering_s"] > 0' "--no-cache does not read either"
  expect_file nc.ipuexe
  expect_exit 0 "$IPURUN" predict nc.ipuexe --data synthetic:10 --progress none
}

test_default_cache_location() {
  unset IPUCC_CACHE_DIR
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["entry"].startswith(__import__("os").environ["XDG_CACHE_HOME"] + "/ipucc/entries/")' "XDG_CACHE_HOME/ipucc"
  unset XDG_CACHE_HOME
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["entry"].startswith(__import__("os").environ["HOME"] + "/.cache/ipucc/entries/") and d["cache"] == "miss"' "HOME/.cache/ipucc"
  # An empty IPUCC_CACHE_DIR counts as unset; a set one wins; --cache-dir wins over both.
  IPUCC_CACHE_DIR= expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "empty IPUCC_CACHE_DIR"
  IPUCC_CACHE_DIR=$E2E_TMP/envcache expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["entry"].startswith(__import__("os").environ["E2E_TMP"] + "/envcache/") and d["cache"] == "miss"'
  IPUCC_CACHE_DIR=$E2E_TMP/envcache expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir flagcache --json
  expect_json "$STDOUT" 'd["entry"].startswith("flagcache/") and d["cache"] == "miss"'
}

test_corrupt_cache_entry_is_recompiled() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local entry key
  entry=$(json_get "$STDOUT" 'd["entry"]')
  key=$(json_get "$STDOUT" 'd["key"]')
  e2e_data flip "$entry" 200
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_stderr_starts_with "ipucc: warning:"
  expect_stderr_contains "checksum mismatch"
  expect_stderr_contains "recompiling"
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["timings"]["lowering_s"] > 0'
  expect_exit 0 "$IPURUN" predict "$key" --data synthetic:10 --progress none
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "the repaired entry"
}

test_concurrent_compiles_share_one_entry() {
  local i pids=()
  for i in 1 2 3 4 5 6; do
    "$IPUCC" compile "$MLP" "${SMALL[@]}" --json > "c$i.json" 2> "c$i.err" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || fail "concurrent compile $((i + 1)) failed: $(cat "c$((i + 1)).err")"; done
  for i in 1 2 3 4 5 6; do
    expect_json "c$i.json" 'd["cache"] in ("miss", "hit")'
    [ ! -s "c$i.err" ] || fail "concurrent compile $i: unexpected stderr: $(cat "c$i.err")"
  done
  # One process compiled; the others waited for its entry (the per-key lock).
  expect_eq "$(cat c*.json | grep -c '"cache": "miss"')" 1 "compiles among six concurrent ones"
  expect_exit 0 "$IPUCC" cache stats --json
  expect_json "$STDOUT" 'd["misses"] == 1 and d["hits"] == 5 and d["compiles_avoided"] == 5'

  local key
  key=$(json_get c1.json 'd["key"]')
  # Exactly one committed entry, no temporary files left behind (besides the bookkeeping files).
  expect_eq "$(find "$IPUCC_CACHE_DIR/entries" -type f | sed 's|.*/||' | sort | tr '\n' ' ')" "$key.ipuexe $key.manifest $key.model " "cache contents"
  expect_eq "$(find "$IPUCC_CACHE_DIR" -maxdepth 1 -type f | sed 's|.*/||' | sort | tr '\n' ' ')" "size stats.json stats.lock " "cache bookkeeping files"
  expect_eq "$(ls "$IPUCC_CACHE_DIR/locks")" "$key.lock" "per-key lock files"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_exit 0 "$IPURUN" predict "$key" --data synthetic:4 --progress none
}

# The kernel drops a killed process's flock: its lock never blocks later compiles.
test_lock_of_a_killed_compile_is_not_stale() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --no-cache --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  mkdir -p "$IPUCC_CACHE_DIR/locks"
  # One process holding the key's lock, as a compile would (flock(1) would hand it to a child).
  "$PYTHON" -c "
import fcntl, sys, time
f = open(sys.argv[1], 'w')
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[1] + '.held', 'w').close()
time.sleep(600)" "$IPUCC_CACHE_DIR/locks/$key.lock" &
  local holder=$!
  while [ ! -e "$IPUCC_CACHE_DIR/locks/$key.lock.held" ]; do sleep 0.05; done
  kill -9 "$holder"
  wait "$holder" 2>/dev/null || true
  rm "$IPUCC_CACHE_DIR/locks/$key.lock.held"
  expect_exit 0 timeout 20 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["key"] == "'"$key"'"'
}

test_edited_manifest_is_a_miss() {
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  local key manifest
  key=$(json_get "$STDOUT" 'd["key"]')
  manifest=$IPUCC_CACHE_DIR/entries/${key:0:2}/$key.manifest
  expect_file "$manifest"
  sed -i 's/^option.batch_size=32$/option.batch_size=64/' "$manifest"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_stderr_starts_with "ipucc: warning:"
  expect_stderr_contains "stored manifest does not match key $key"
  expect_stderr_contains "option.batch_size"
  expect_json "$STDOUT" 'd["cache"] == "miss" and d["timings"]["lowering_s"] > 0'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"' "the rewritten entry"
  # An executable without its manifest (a put that died before committing) is a miss too.
  rm "$manifest"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_stderr_contains "executable without its manifest"
  expect_json "$STDOUT" 'd["cache"] == "miss"'
}

test_arch_presets() {
  expect_exit 0 "$IPUCC" compile "$MLP" --arch mk1 --batch-size 8 --json
  expect_json "$STDOUT" 'd["target"] == {"arch": "mk1", "num_ipus": 1, "tiles_per_ipu": 1216, "bytes_per_tile": 262144}'
  expect_exit 0 "$IPUCC" compile "$MLP" --batch-size 8 --json
  expect_json "$STDOUT" 'd["target"] == {"arch": "mk2", "num_ipus": 1, "tiles_per_ipu": 1472, "bytes_per_tile": 638976}'
  # Overriding the tile count or memory makes a custom target that keeps the preset's other values.
  expect_exit 0 "$IPUCC" compile "$MLP" --arch mk1 --tiles-per-ipu 64 --batch-size 8 --json
  expect_json "$STDOUT" 'd["target"] == {"arch": "mk1", "num_ipus": 1, "tiles_per_ipu": 64, "bytes_per_tile": 262144}'
}

# --json prints one object whatever happens: whether the model fits, and why not.
test_json_says_whether_it_fits() {
  expect_exit 0 "$IPUCC" compile "$MLP" --batch-size 8 --json
  expect_json "$STDOUT" 'd["fits"] is True'
  expect_exit 5 "$IPUCC" compile "$MLP" --tiles-per-ipu 2 --bytes-per-tile 4096 --batch-size 8 --no-cache --json
  expect_stderr_contains "tile(s) out of memory"
  expect_json "$STDOUT" 'd["fits"] is False and d["error"]["exit_code"] == 5 and d["error"]["code"] == "resource exhausted"'
  expect_json "$STDOUT" 'd["memory"]["overflowing_tiles"] == len(d["memory"]["tiles"]) > 0 and d["memory"]["bytes_per_tile"] == 4096'
  expect_json "$STDOUT" 'all(t["bytes"] > 4096 and t["bytes"] == t["tensor_bytes"] + t["exchange_bytes"] + t["vertex_state_bytes"] + t["code_bytes"] for t in d["memory"]["tiles"])'
  expect_json "$STDOUT" '{"--precision fp16", "--recompute"} <= {s["flag"] for s in d["suggestions"]}'
  # Another error: the error, and fits unknown.
  expect_exit 6 "$IPUCC" compile missing.onnx --json
  expect_json "$STDOUT" 'd["fits"] is None and d["error"]["exit_code"] == 6 and d["model"] == "missing.onnx"'
}

test_version_and_help() {
  expect_exit 0 "$IPUCC" --version
  expect_stdout_contains "0."
  expect_stdout_contains "OpenBLAS kernels: "
}

# The tools run OpenBLAS's kernels for the CPU's widest vectors, also where OpenBLAS takes the CPU
# for an older one (runtime/kernels/blas_core.h), and a user's OPENBLAS_CORETYPE is kept.
test_blas_kernels_fit_the_cpu() {
  local want=Prescott
  cpu_has() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -qx "$1"; }
  if cpu_has avx512f && cpu_has avx512cd && cpu_has avx512bw && cpu_has avx512dq && cpu_has avx512vl; then
    want='SkylakeX|Cooperlake|SapphireRapids'
  elif cpu_has avx2 && cpu_has fma; then
    want='Haswell|Zen|Excavator'
  elif cpu_has avx; then
    want='Sandybridge|Bulldozer|Piledriver|Steamroller'
  fi
  for tool in "$IPUCC" "$IPURUN"; do
    expect_exit 0 env -u OPENBLAS_CORETYPE "$tool" --version
    grep -qE "^OpenBLAS kernels: ($want)\$" "$STDOUT" || fail "$tool runs $(tail -1 "$STDOUT"), not ($want)"
    expect_exit 0 env OPENBLAS_CORETYPE=PRESCOTT "$tool" --version
    expect_stdout_contains "OpenBLAS kernels: Prescott"
  done
}

test_help() {
  expect_exit 0 "$IPUCC" compile --help
  expect_stdout_contains "--batch-size"
  expect_stdout_contains "--no-cache"
  # Options in sections, plain defaults shown.
  expect_stdout_contains "Batch and steps:"
  expect_stdout_contains "--batch-size UINT:UINT in [1 - 1048576]=32"
  expect_stdout_contains "--precision TEXT:{fp32,fp16,mixed}=fp32"
  expect_exit 0 "$IPURUN" train --help
  expect_stdout_contains "Optimizer (when EXECUTABLE is a model):"
  expect_stdout_contains "--epochs INT:INT in [1 - 1000000]=1"
}

run_tests "$@"
