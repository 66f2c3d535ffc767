#!/usr/bin/env bash
# The output rule (runtime/base/output_file.h, docs/outputs.md): every file the tools write at a
# user's path replaces only nothing or an output of an earlier run that nobody changed since; a
# user's file is refused (exit 6) and left as it was; every output path and option is checked
# before any work (no compile, no training); outputs never create the directories above them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TUTORIAL=$MODELS/mlp_functional.json
COMPARE_TENSORS=${COMPARE_TENSORS:-$SRC/build/tests/tools/compare_tensors}
SMALL=(--tiles-per-ipu 64)
QUIET=(--progress none)

compile_to() {
  local out=$1
  shift
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" "$@" -o "$out"
}

# A linear ONNX classifier of the synthetic set (784 features, 10 classes): one with something to
# export.
make_onnx_exe() {
  e2e_data gemm-onnx linear.onnx --in 784 --out 10 > /dev/null
  expect_exit 0 "$IPUCC" compile linear.onnx "${SMALL[@]}" --loss sparse_categorical_crossentropy --batch-size 8 \
    -o linear.ipuexe
}

# The cache holds no executable: nothing was compiled.
expect_nothing_compiled() {
  [[ -z $(find "$IPUCC_CACHE_DIR" -name '*.ipuexe' 2>/dev/null) ]] || fail "a model was compiled before the error"
}

# expect_refused TARGET CMD...: CMD exits 6 naming TARGET as a file the tools did not write, and
# TARGET holds what it held before.
expect_refused() {
  local target=$1
  shift
  local before
  before=$(cksum < "$target")
  expect_error 6 "$target: exists and was not written by ipucc or ipurun" "refusing to replace it" -- "$@"
  expect_eq "$(cksum < "$target")" "$before" "$target left as it was"
}

test_each_output_refuses_a_users_file() {
  compile_to mlp.ipuexe --batch-size 8
  make_onnx_exe
  e2e_data npy mine.npy --shape 4 --fill const:1
  echo '{"my": "notes"}' > mine.json
  echo "my model" > mine.onnx
  echo "<svg/>" > mine.svg
  echo "my executable" > mine.ipuexe
  local train=(train mlp.ipuexe --data synthetic:64 "${QUIET[@]}" --step-log steps.json)
  expect_refused mine.json "$IPURUN" "${train[@]}" --history mine.json
  expect_refused mine.json "$IPURUN" train mlp.ipuexe --data synthetic:64 "${QUIET[@]}" --step-log mine.json
  expect_refused mine.onnx "$IPURUN" train linear.ipuexe --data synthetic:64 "${QUIET[@]}" --export-onnx mine.onnx
  expect_refused mine.npy "$IPURUN" predict mlp.ipuexe --data synthetic:8 "${QUIET[@]}" --output mine.npy
  mkdir out && cp mine.npy out/dense5.npy
  expect_refused out/dense5.npy "$IPURUN" predict mlp.ipuexe --data synthetic:8 "${QUIET[@]}" --output-dir out
  expect_refused mine.ipuexe "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 4 -o mine.ipuexe
  expect_refused mine.svg "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 4 --report mine.svg
  expect_no_file steps.json  # each refusal came before training
  # A directory is never replaced by a file.
  mkdir adir
  expect_error 6 "adir: is a directory" -- "$IPURUN" "${train[@]}" --history adir
}

test_each_output_replaces_its_own_until_a_user_changes_it() {
  compile_to mlp.ipuexe --batch-size 8
  make_onnx_exe
  local round
  for round in 1 2; do  # the second run replaces what the first wrote
    expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:64 --epochs "$round" "${QUIET[@]}" \
      --history history.json --step-log steps.json
    expect_json history.json "len(d['loss']) == $round"
    expect_exit 0 "$IPURUN" train linear.ipuexe --data synthetic:64 --epochs "$round" "${QUIET[@]}" --export-onnx linear-trained.onnx
    expect_exit 0 "$IPURUN" predict mlp.ipuexe --data "synthetic:$((8 * round))" "${QUIET[@]}" --output p.npy --json
    expect_exit 0 "$IPURUN" predict mlp.ipuexe --data "synthetic:$((8 * round))" "${QUIET[@]}" --output-dir preds --json
    expect_json "$STDOUT" "d['shape'][0] == $((8 * round))"
    compile_to exe.ipuexe --batch-size "$((4 * round))" --report schedule.html
  done
  expect_exit 0 "$PYTHON" -c 'import json; assert json.load(open("steps.json"))["losses"]'
  expect_file preds/dense5.npy
  # Edited by the user, an output is the user's: refused, and left as edited.
  echo "edited" >> history.json
  expect_error 6 "history.json: was written by ipucc or ipurun but has changed since" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:64 "${QUIET[@]}" --history history.json
  tail -n 1 history.json | grep -qx edited || fail "the edited history was replaced"
  # Reached through another spelling of its path, an output is still the tools' own.
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data synthetic:8 "${QUIET[@]}" --output ./preds/../p.npy
}

test_output_paths_are_checked_before_any_work() {
  # With a model to compile, a bad output path stops ipurun before it compiles or trains.
  expect_error 6 "nodir/history.json: directory nodir does not exist" -- \
    "$IPURUN" train "$TUTORIAL" "${SMALL[@]}" --data synthetic:64 "${QUIET[@]}" --history nodir/history.json
  expect_nothing_compiled
  expect_no_file nodir
  touch afile
  expect_error 6 "afile/steps.json: afile is not a directory" -- \
    "$IPURUN" train "$TUTORIAL" "${SMALL[@]}" --data synthetic:64 "${QUIET[@]}" --step-log afile/steps.json
  expect_error 6 "nodir/p.npy" -- "$IPURUN" predict "$TUTORIAL" "${SMALL[@]}" --data synthetic:8 "${QUIET[@]}" --output nodir/p.npy
  expect_error 6 "nodir/out" "does not exist" -- \
    "$IPURUN" predict "$TUTORIAL" "${SMALL[@]}" --data synthetic:8 "${QUIET[@]}" --output-dir nodir/out
  expect_error 6 "nodir/ckpt" -- "$IPURUN" train "$TUTORIAL" "${SMALL[@]}" --data synthetic:64 "${QUIET[@]}" --save-weights nodir/ckpt
  expect_error 6 "nodir/x.onnx" -- "$IPURUN" train "$TUTORIAL" "${SMALL[@]}" --data synthetic:64 "${QUIET[@]}" --export-onnx nodir/x.onnx
  expect_nothing_compiled
  expect_no_file nodir
  # ipucc checks -o and --report before it compiles.
  expect_error 6 "nodir/mlp.ipuexe" -- "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" -o nodir/mlp.ipuexe
  expect_error 2 "--report schedule.pdf: the file name must end in .svg or .html" -- \
    "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --report schedule.pdf
  expect_error 6 "nodir/schedule.svg" -- "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --report nodir/schedule.svg
  expect_nothing_compiled
  expect_no_file schedule.pdf
  # --output names its format; another extension is a usage error.
  expect_error 2 "--output p.csv: the file name must end in .npy or .pb" -- \
    "$IPURUN" predict "$TUTORIAL" "${SMALL[@]}" --data synthetic:8 "${QUIET[@]}" --output p.csv
  expect_nothing_compiled
}

test_export_onnx_of_a_json_spec_fails_before_training() {
  compile_to mlp.ipuexe --batch-size 8
  expect_error 2 "mlp.ipuexe" "--export-onnx: the executable was not compiled from an ONNX model" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:64 "${QUIET[@]}" --export-onnx x.onnx --step-log steps.json
  expect_no_file steps.json
  expect_no_file x.onnx
}

test_output_dir_is_created_but_not_its_parent() {
  compile_to mlp.ipuexe --batch-size 8
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data synthetic:8 "${QUIET[@]}" --output-dir fresh
  expect_file fresh/dense5.npy
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:64 "${QUIET[@]}" --save-weights ckpt
  expect_file ckpt/index.json
  touch afile
  expect_error 6 "afile: not a directory" -- "$IPURUN" predict mlp.ipuexe --data synthetic:8 "${QUIET[@]}" --output-dir afile
}

# --output-dir writes one file per output, named like checkpoint files (runtime/base/file_names.h):
# outputs 'a/b' and 'a_b' once both wrote out/a_b.npy, the second replacing the first (exit 0);
# 'Y' and 'y' would be one file on a case-insensitive file system.
test_output_dir_gives_every_output_its_own_file() {
  local first second
  for pair in "a/b a_b" "Y y"; do
    read -r first second <<< "$pair"
    e2e_data two-outputs-onnx two.onnx "$first" "$second"
    expect_exit 0 "$IPUCC" compile two.onnx --mode infer --batch-size 2 -o two.ipuexe
    e2e_data npy x.npy --shape 2,3 --fill random --seed 4
    rm -rf out
    expect_exit 0 "$IPURUN" predict two.ipuexe --input x.npy --output-dir out --json
    expect_json "$STDOUT" 'len(set(o["file"] for o in d["outputs"])) == 2' "two files for '$first' and '$second'"
    expect_eq "$(ls out | wc -l)" 2 "files in out/"
    # Each file holds its own output: the Relu's has no negative value, the Neg's no positive one.
    expect_json "$STDOUT" 'all(o["file"].startswith("out/") for o in d["outputs"])'
    local relu neg
    relu=$(json_get "$STDOUT" 'd["outputs"][0]["file"]')
    neg=$(json_get "$STDOUT" 'd["outputs"][1]["file"]')
    if "$COMPARE_TENSORS" "$relu" "$neg" > /dev/null; then fail "$relu and $neg hold the same values"; fi
  done
}

# Output names come from models and are printed escaped, as in error messages: an escape sequence
# in a name once reached the terminal.
test_output_names_print_escaped() {
  e2e_data two-outputs-onnx two.onnx $'red\e[31m' plain
  expect_exit 0 "$IPUCC" compile two.onnx --mode infer --batch-size 2 -o two.ipuexe
  e2e_data npy x.npy --shape 2,3 --fill random --seed 4
  expect_exit 0 "$IPURUN" predict two.ipuexe --input x.npy
  expect_stdout_contains 'red\x1b[31m: shape [2,3]'
  if grep -q $'\e' "$STDOUT"; then fail "an escape byte reached stdout"; fi
}

run_tests "$@"
