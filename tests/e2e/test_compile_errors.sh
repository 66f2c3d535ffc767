#!/usr/bin/env bash
# ipucc compile failures: exit codes (cli/exit_codes.h, docs/exit_codes.md) and messages that
# name the file, the layer and what is wrong.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SEQ=$MODELS/mlp_sequential.json
FUNC=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)

# edit_model SRC DST PYTHON: loads SRC as `m`, runs the Python statements, writes DST.
edit_model() {
  "$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), indent=1)' "$1" "$2" "$3" || fail "edit_model $3"
}

# An error (lib.sh's expect_error) that also leaves stdout empty.
expect_compile_error() {
  expect_error "$@"
  [[ ! -s $STDOUT ]] || fail "stdout should be empty on an error"
}

expect_no_cache_entries() {
  [[ -z $(find "$IPUCC_CACHE_DIR" -name '*.ipuexe' 2>/dev/null) ]] || fail "a failed compile left a cache entry"
}

# A million levels of nesting once overflowed the stack while the cache key was computed,
# before the spec was even parsed; with or without the cache it is an input error.
test_deeply_nested_json_is_refused() {
  "$PYTHON" -c 'import sys; sys.stdout.write("[" * 1000000 + "]" * 1000000)' > deep.json
  expect_compile_error 3 "deep.json: nested more than 64 levels deep" -- "$IPUCC" compile deep.json
  expect_compile_error 3 "deep.json: nested more than 64 levels deep" -- "$IPUCC" compile deep.json --no-cache
  expect_no_cache_entries
}

test_missing_model_file() {
  expect_compile_error 6 "nope.json" "No such file" -- "$IPUCC" compile nope.json
  # With --json the error is also the one object on stdout (docs/json.md).
  expect_error 6 "dir/nope.json" -- "$IPUCC" compile dir/nope.json --json
  expect_json "$STDOUT" 'd["fits"] is None and d["error"]["exit_code"] == 6 and "dir/nope.json" in d["error"]["message"]'
}

test_invalid_json() {
  printf '{"type": "sequential", "layers": [' > truncated.json
  expect_compile_error 3 "truncated.json:1:35: not valid JSON" "unexpected end of input" -- "$IPUCC" compile truncated.json
  printf '{\n  "type": "sequential",\n  "layers": [],,\n}\n' > comma.json
  expect_compile_error 3 "comma.json:3:16: not valid JSON" -- "$IPUCC" compile comma.json
  : > empty.json
  expect_compile_error 3 "empty.json:1:1: not valid JSON" -- "$IPUCC" compile empty.json
  sed 's/"optimizer"/"optimiser"/' "$MODELS/mlp_sequential.json" > typo.json
  expect_compile_error 3 "typo.json: unknown top-level key 'optimiser'" -- "$IPUCC" compile typo.json --batch-size 8
  echo '[1, 2]' > array.json
  expect_compile_error 3 "array.json: the spec must be a JSON object" -- "$IPUCC" compile array.json
  echo '{"type": "recurrent"}' > form.json
  expect_compile_error 3 "form.json: 'type' must be" -- "$IPUCC" compile form.json
  expect_no_cache_entries
}

test_unknown_layer_type() {
  edit_model "$FUNC" conv.json 'm["nodes"][1]["type"] = "Conv3D"'
  expect_compile_error 3 "conv.json: layer 'dense1' (Conv3D): unknown layer type" -- "$IPUCC" compile conv.json "${SMALL[@]}"
  edit_model "$SEQ" conv_seq.json 'm["layers"][2]["type"] = "LSTM"'
  expect_compile_error 3 "conv_seq.json: layer 'dense2' (LSTM): unknown layer type (supported: Add, AveragePooling2D, BatchNormalization, Concatenate, Conv2D, Dense, Dropout, Flatten, MaxPool2D, MaxPooling2D, Reshape)" -- \
    "$IPUCC" compile conv_seq.json "${SMALL[@]}"
}

test_dangling_input() {
  edit_model "$FUNC" dangling.json 'm["nodes"][2]["inputs"] = ["ghost"]'
  expect_compile_error 3 "dangling.json: layer 'dense2' (Dense): input 'ghost' is not the model input or an earlier layer" -- \
    "$IPUCC" compile dangling.json "${SMALL[@]}"
  # A forward reference is dangling too: inputs must come from earlier nodes.
  edit_model "$FUNC" forward.json 'm["nodes"][2]["inputs"] = ["dense4"]'
  expect_compile_error 3 "forward.json: layer 'dense2' (Dense): input 'dense4'" -- "$IPUCC" compile forward.json "${SMALL[@]}"
  edit_model "$FUNC" output.json 'm["outputs"] = ["nowhere"]'
  expect_compile_error 3 "output.json: output 'nowhere' names no layer" -- "$IPUCC" compile output.json "${SMALL[@]}"
}

# A name holding a NUL or an escape sequence prints as \x00 / \x1b, and the message goes on past it.
test_control_characters_in_names_print_escaped() {
  edit_model "$SEQ" nul.json 'm["layers"][2]["name"] = "dense\0two\x1b[2J"; m["layers"][2]["type"] = "LSTM"'
  expect_compile_error 3 "nul.json: layer 'dense\x00two\x1b[2J' (LSTM): unknown layer type" -- \
    "$IPUCC" compile nul.json "${SMALL[@]}"
}

# ONNX graphs are in SSA form (onnx.checker): a value written by two nodes, or by a node and as a
# graph input or initializer, is invalid input naming both.
test_onnx_value_written_twice() {
  e2e_data ssa-onnx two.onnx two-writers
  expect_compile_error 3 "two.onnx: node 'first' (Relu) and node 'second' (Add) both write 'y'" -- \
    "$IPUCC" compile two.onnx --mode infer "${SMALL[@]}"
  e2e_data ssa-onnx input.onnx shadow-input
  expect_compile_error 3 "input.onnx: node 'first' (Relu) writes 'x', which is a graph input" -- \
    "$IPUCC" compile input.onnx --mode infer "${SMALL[@]}"
  e2e_data ssa-onnx init.onnx shadow-initializer
  expect_compile_error 3 "init.onnx: node 'first' (Relu) writes 'w', which is an initializer" -- \
    "$IPUCC" compile init.onnx --mode infer "${SMALL[@]}"
  expect_no_cache_entries
}

test_bad_stage_list_length() {
  edit_model "$MODELS/mlp_sequential_staged.json" stages.json 'm["stage_assignment"] = [0, 1]'
  expect_compile_error 3 "stages.json: 'stage_assignment' has 2 entries for 6 layers" -- "$IPUCC" compile stages.json "${SMALL[@]}"
  expect_compile_error 3 "mlp_sequential.json: --stage-assignment has 3 entries for 6 layers" -- \
    "$IPUCC" compile "$SEQ" "${SMALL[@]}" --stage-assignment 0,0,1
  edit_model "$FUNC" partial.json 'm["nodes"][0]["stage"] = 0'
  expect_compile_error 3 "partial.json: stage annotations must be on every layer or on none (1 of 6 have one)" -- \
    "$IPUCC" compile partial.json "${SMALL[@]}"
  edit_model "$MODELS/mlp_sequential_staged.json" gap.json 'm["stage_assignment"] = [0, 0, 2, 2, 2, 2]'
  expect_compile_error 3 "gap.json: stages must be numbered 0..1 without gaps" -- "$IPUCC" compile gap.json "${SMALL[@]}"
  edit_model "$MODELS/mlp_functional_staged.json" backwards.json 'm["nodes"][5]["stage"] = 0; m["nodes"][4]["stage"] = 1'
  expect_compile_error 3 "backwards.json: layer 'dense5' (Dense): stage 0 reads 'dense4' from later stage 1" -- \
    "$IPUCC" compile backwards.json "${SMALL[@]}"
}

test_dense_on_rank4_input_without_flatten() {
  edit_model "$SEQ" noflatten.json 'del m["layers"][0]'
  expect_compile_error 3 "noflatten.json: layer 'dense1' (Dense): expects a rank-2 input" "f32[32,28,28,1]" "add a Flatten layer first" -- \
    "$IPUCC" compile noflatten.json "${SMALL[@]}"
  expect_no_cache_entries
}

test_several_problems_all_listed() {
  edit_model "$FUNC" many.json '
m["nodes"][1]["type"] = "Conv3D"
m["nodes"][3]["inputs"] = ["ghost"]
m["nodes"][4]["units"] = -1
m["nodes"][5]["activation"] = "gelu"
m["nodes"][2]["filter"] = 3'
  expect_compile_error 3 \
    "many.json: layer 'dense1' (Conv3D): unknown layer type" \
    "many.json: layer 'dense2' (Dense): unknown attribute 'filter'" \
    "many.json: layer 'dense3' (Dense): input 'ghost' is not the model input or an earlier layer" \
    "many.json: layer 'dense4' (Dense): 'units' must be an integer in [1, 16777216]" \
    "many.json: layer 'dense5' (Dense): unknown activation \"gelu\"" -- \
    "$IPUCC" compile many.json "${SMALL[@]}"
  # One problem per line, each naming the file and the layer.
  local lines
  lines=$(wc -l < "$STDERR")
  expect_eq "$lines" 5 "number of stderr lines"
  "$PYTHON" - "$STDERR" <<'EOF' || fail "every stderr line must name many.json and a layer"
import sys
lines = open(sys.argv[1]).read().splitlines()
sys.exit(0 if all("many.json: layer '" in l for l in lines) else 1)
EOF
}

test_other_spec_problems() {
  edit_model "$SEQ" dup.json 'm["layers"][2]["name"] = "dense1"'
  expect_compile_error 3 "dup.json: layer 'dense1' (Dense): name is used twice" -- "$IPUCC" compile dup.json "${SMALL[@]}"
  edit_model "$SEQ" loss.json 'm["loss"] = "hinge"'
  expect_compile_error 4 "loss.json: loss: unsupported loss" -- "$IPUCC" compile loss.json "${SMALL[@]}"
  edit_model "$SEQ" opt.json 'm["optimizer"] = {"type": "lion"}'
  expect_compile_error 4 "opt.json: optimizer: unsupported optimizer \"lion\"" -- "$IPUCC" compile opt.json "${SMALL[@]}"
  edit_model "$SEQ" dtype.json 'm["input"]["dtype"] = "float16"'
  expect_compile_error 4 "dtype.json: input" "dtype \"float16\" is not supported" -- "$IPUCC" compile dtype.json "${SMALL[@]}"
  edit_model "$SEQ" shape.json 'm["input"]["shape"] = [28, 0, 1]'
  expect_compile_error 3 "shape.json: input 'image': shape dimensions must be positive integers" -- "$IPUCC" compile shape.json "${SMALL[@]}"
  edit_model "$SEQ" nolayers.json 'm["layers"] = []'
  expect_compile_error 3 "nolayers.json: the model has no layers" -- "$IPUCC" compile nolayers.json "${SMALL[@]}"
  edit_model "$SEQ" flatten_units.json 'm["layers"][0]["units"] = 4'
  expect_compile_error 3 "flatten_units.json: layer 'flatten' (Flatten): 'units' does not apply to Flatten" -- \
    "$IPUCC" compile flatten_units.json "${SMALL[@]}"
}

test_bad_flags_are_usage_errors() {
  local -a cases=(
    "--batch-size:--batch-size 0"
    "--arch:--arch mk9"
    "--frobnicate:--frobnicate"
    "--mode:--mode eval"
    "--tiles-per-ipu:--tiles-per-ipu 0"
    "--bytes-per-tile:--bytes-per-tile 100"
    "--learning-rate:--learning-rate -1"
    "--learning-rate:--learning-rate 1e-46"
    "--learning-rate:--learning-rate 1e39"
    "--batch-size:--batch-size 1048577"
    "--momentum:--momentum 1.5"
    "--optimizer:--optimizer lion"
    "--beta1:--optimizer adam --beta1 1"
    "--beta2:--optimizer adam --beta2 -0.1"
    "--epsilon:--optimizer adam --epsilon 0"
    "--weight-decay:--optimizer adamw --weight-decay -1"
    "--momentum:--optimizer adam --momentum 0.9"
    "--beta1:--beta1 0.8"
    "--nesterov:--optimizer adam --nesterov"
    "--nesterov:--nesterov --momentum 0"
    "--nesterov:--nesterov --dampening 0.5"
    "--dampening:--dampening 1.5"
    "--rho:--optimizer adagrad --rho 0.5"
    "--rho:--optimizer rmsprop --rho 1"
    "--centered:--optimizer adamax --centered"
    "--momentum:--optimizer adagrad --momentum 0.5"
    "--initial-accumulator-value:--optimizer adagrad --initial-accumulator-value -1"
    "--global-clipnorm:--global-clipnorm -1"
    "--epsilon:--epsilon 1e-8"
    "--steps-per-execution:--steps-per-execution 0"
    "--stage-assignment:--stage-assignment a,b"
  )
  local c flag args
  for c in "${cases[@]}"; do
    flag=${c%%:*}
    read -ra args <<< "${c#*:}"
    expect_exit 2 "$IPUCC" compile "$SEQ" "${args[@]}"
    expect_stderr_contains "$flag"
    [[ ! -s $STDOUT ]] || fail "stdout should be empty on a usage error"
  done
  expect_exit 2 "$IPUCC" compile
  expect_stderr_contains "model"
  expect_exit 2 "$IPUCC"
  expect_exit 2 "$IPUCC" link "$SEQ"
  expect_no_cache_entries
}

test_usage_errors_use_the_error_prefix() {
  expect_exit 2 "$IPUCC" compile "$SEQ" --batch-size 0
  expect_stderr_starts_with "ipucc: error:"
  expect_exit 2 "$IPUCC" compile "$SEQ" --frobnicate
  expect_stderr_starts_with "ipucc: error:"
}

test_model_does_not_fit() {
  expect_compile_error 5 "mlp_sequential.json" "tile(s) out of memory" "tile 0 needs" "bytes of 4,096" "(largest: dense1/kernel" -- \
    "$IPUCC" compile "$SEQ" --tiles-per-ipu 2 --bytes-per-tile 4096 -o never.ipuexe
  expect_no_file never.ipuexe
  expect_no_cache_entries
  # The report covers the overflowing tiles, fullest first, each naming its largest tensors.
  "$PYTHON" - "$STDERR" <<'EOF' || fail "each tile line must say needed vs available bytes and name tensors"
import re, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if re.match(r"\s+tile \d+ needs", l)]
assert lines, "no tile lines"
needs = []
for l in lines:
    m = re.match(r"\s+tile (\d+) needs ([\d,]+) bytes of 4,096 in compute set '[^']+': tensors ([\d,]+) \(largest: (.+?)\), "
                 r"exchange buffers ([\d,]+), vertex state ([\d,]+) \(\d+ vertices\), code ([\d,]+) \(\d+ codelets\)$", l)
    assert m, l
    number = lambda g: int(m.group(g).replace(",", ""))
    needs.append(number(2))
    # What fills the tile adds up to what it needs.
    assert number(3) + number(5) + number(6) + number(7) == number(2), l
    assert all(re.match(r"\S+ [\d,]+$", t) for t in re.sub(r" and \d+ more$", "", m.group(4)).split(", ")), l
assert needs == sorted(needs, reverse=True), needs
assert all(n > 4096 for n in needs)
EOF
  expect_error 5 "out of memory" -- "$IPUCC" compile "$FUNC" --tiles-per-ipu 2 --bytes-per-tile 4096 --mode infer --json
  expect_json "$STDOUT" 'd["fits"] is False and d["memory"]["overflowing_tiles"] == 2'
}

test_unwritable_output() {
  expect_compile_error 6 "missing/dir/out.ipuexe" -- "$IPUCC" compile "$SEQ" "${SMALL[@]}" -o missing/dir/out.ipuexe
  mkdir adir
  expect_compile_error 6 "adir" -- "$IPUCC" compile "$SEQ" "${SMALL[@]}" -o adir
  [[ -d adir ]] || fail "-o onto a directory removed it"
}

test_uncreatable_cache_dir_only_warns() {
  touch blocker
  expect_exit 0 "$IPUCC" compile "$SEQ" "${SMALL[@]}" --cache-dir blocker/cache --json -o out.ipuexe
  expect_stderr_starts_with "ipucc: warning:"
  expect_stderr_contains "blocker/cache"
  expect_stderr_contains "compiling without the cache"
  expect_stderr_not_contains "error"
  expect_json "$STDOUT" 'd["cache"] == "disabled" and d["entry"] is None'
  expect_file out.ipuexe
  expect_exit 0 "$IPURUN" predict out.ipuexe --data synthetic:10 --progress none
  # The same through the environment, and in the human-readable output.
  IPUCC_CACHE_DIR=$E2E_TMP/blocker/cache expect_exit 0 "$IPUCC" compile "$SEQ" "${SMALL[@]}"
  expect_stderr_starts_with "ipucc: warning:"
  expect_stdout_contains "tiles used"
  # Warned once, not once per cache operation.
  expect_eq "$(grep -c warning "$STDERR")" 1 "number of warnings"
}

run_tests "$@"
