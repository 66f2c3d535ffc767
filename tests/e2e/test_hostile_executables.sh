#!/usr/bin/env bash
# An executable is untrusted input (issue 12): a file, a shared cache entry or a remote cache's
# response may have been written by anyone who can frame bytes with a correct checksum. Each
# mutation tests/tools/hostile_executable applies to a compiled executable once crashed ipurun,
# made it write heap memory into an output, or ran without bound; each now exits 7 (corrupt
# executable, docs/exit_codes.md) within seconds, naming what is wrong, and writes no output.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HOSTILE=${HOSTILE_EXECUTABLE:-$SRC/build/tests/tools/hostile_executable}
QUIET=(--progress none)

# The tutorial MLP trained (train, evaluate and predict programs; features and labels streams)
# and a Gemm from ONNX (model inputs and outputs with their own shapes).
compile_victims() {
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_functional.json" --batch-size 8 --tiles-per-ipu 64 -o mlp.ipuexe
  e2e_data gemm-onnx gemm.onnx --in 6 --out 4 > /dev/null
  expect_exit 0 "$IPUCC" compile gemm.onnx --mode infer --batch-size 4 -o gemm.ipuexe
  e2e_data npy x.npy --shape 5,6 --fill random --seed 1
}

# expect_refused MUTATION VICTIM TEXT: the mutated executable is refused by predict (with
# --output) and, for the MLP, by train (with --save-weights and --history), exit 7 at once,
# stderr naming TEXT, nothing written.
expect_refused() {
  local mutation=$1 victim=$2 text=$3
  "$HOSTILE" "$mutation" "$victim.ipuexe" hostile.ipuexe || fail "hostile_executable $mutation $victim failed"
  if [[ $victim == gemm ]]; then
    expect_error 7 "hostile.ipuexe" "$text" -- "$IPURUN" predict hostile.ipuexe --input x.npy --output out.npy
  else
    expect_error 7 "hostile.ipuexe" "$text" -- "$IPURUN" predict hostile.ipuexe --data synthetic:16 --output out.npy
    expect_error 7 "hostile.ipuexe" "$text" -- "$IPURUN" train hostile.ipuexe --data synthetic:64 \
      --save-weights ckpt --history history.json "${QUIET[@]}"
  fi
  expect_no_file out.npy
  expect_no_file ckpt
  expect_no_file history.json
}

test_repeats_past_steps_per_execution_are_refused() {
  compile_victims
  # A predict program repeating 10,000 times at S = 1 read past the features (exit 139); 50 times
  # read past them silently.
  expect_refused predict-repeat-10000 mlp "a Repeat of 10000 makes its body run more than steps_per_execution (1)"
  expect_refused predict-repeat-50 gemm "a Repeat of 50 makes its body run more than steps_per_execution (1)"
}

test_conditionals_are_verified_on_both_sides() {
  compile_victims
  expect_refused conditional-missing-condition mlp "program 'predict': a conditional names a missing tensor"
  expect_refused conditional-else-executions mlp "executes compute set 0 more than 2 times per step"
}

test_streams_larger_than_the_batch_are_refused() {
  compile_victims
  expect_refused features-1e6-rows mlp "stream 'features' does not carry its 6272 floats"
  expect_refused labels-1e6-rows mlp "stream 'labels': must be int32 [8] (a label per sample)"
  expect_refused predict-streams-labels mlp "program 'predict': streams labels, which prediction has none of"
}

# A tensor larger than the batch streamed in and then out as the predictions made predict exit 0
# with malloc headers and another tensor's weights in out.npy.
test_heap_disclosure_writes_nothing() {
  compile_victims
  expect_refused heap-disclosure mlp "stream 'features' does not carry its 6272 floats"
  expect_refused heap-disclosure gemm "stream 'features' does not carry its 24 floats"
}

# An evaluate program that streams no loss read losses it never got (UBSan, found by
# fuzz_executable): evaluate now refuses it, naming the executable.
test_an_evaluate_program_without_its_loss_is_refused() {
  compile_victims
  "$HOSTILE" evaluate-without-loss mlp.ipuexe hostile.ipuexe || fail "hostile_executable failed"
  expect_error 7 "hostile.ipuexe" "program 'evaluate' streamed 0 loss(es) in an execution of 1 step(s)" -- \
    "$IPURUN" evaluate hostile.ipuexe --data synthetic:8 "${QUIET[@]}"
}

test_model_inputs_and_outputs_that_lie_are_refused() {
  compile_victims
  expect_refused input-batched-scalar gemm "input 'input': is batched but its shape does not start with the micro-batch of 4"
  expect_refused input-unbatched-small gemm "input 'input': stream 'features' does not carry its 1 floats"
  expect_refused output-2^40 gemm "output 'output': too many elements"
  expect_refused output-negative gemm "output 'output': dimension -1 is not positive"
  # [3e8] once wrote a 1.2 GB file.
  expect_refused output-3e8 gemm "output 'output': stream 'predictions' does not carry its 300000000 floats"
  expect_refused batch-2^31 mlp "is batched but its shape does not start with the micro-batch of 2147483648"
}

test_unbounded_work_is_refused_at_once() {
  compile_victims
  expect_refused nested-repeats mlp "a Repeat of 2 inside Repeats of 16777216 in all makes its body run more than steps_per_execution"
  expect_refused repeat-2^62 gemm "a Repeat of 4611686018427387904 makes its body run more than steps_per_execution (1)"
  # 20,000 Parallel nodes each executing 20,000 vertices: minutes of verification, then of running.
  expect_refused parallel-20k-by-20k mlp "more than 2 times per step"
}

test_unbounded_memory_is_refused_before_allocating() {
  compile_victims
  expect_refused weight-2^28 mlp "tensor 60 'hostile/weight': holds 16777216 bytes on tile 0, more than its 638976"
  expect_refused source-onnx-1GiB gemm "source_onnx holds 1072693248 bytes, more than the model its tensors describe can"
  expect_refused source-onnx-1GiB mlp "implausible payload size"
  # 16 MiB of 2-byte empty messages parsed into a gigabyte of objects.
  expect_refused empty-messages-16MiB gemm "bytes of objects (8388"
}

# A writer of the cache can frame any message under a key's recorded manifest: an entry that belongs
# to its key but breaks what the verifier guarantees is corrupt on a hit (quarantined, recompiled)
# and to `cache verify`, not run.
test_a_hostile_cache_entry_is_quarantined() {
  local model=$MODELS/mlp_functional.json args=(--tiles-per-ipu 64 --batch-size 8 --mode infer)
  expect_exit 0 "$IPUCC" compile "$model" "${args[@]}" --json
  local entry
  entry=$(json_get "$STDOUT" 'd["entry"]')
  "$HOSTILE" predict-repeat-10000 "$entry" hostile.ipuexe || fail "hostile_executable failed"
  cp hostile.ipuexe "$entry"
  expect_exit 6 "$IPUCC" cache verify
  expect_stderr_contains "a Repeat of 10000 makes its body run more than steps_per_execution (1)"
  expect_stderr_contains "moved to $IPUCC_CACHE_DIR/corrupt"
  expect_exit 0 "$IPUCC" compile "$model" "${args[@]}"  # the entry again, then planted once more
  cp hostile.ipuexe "$entry"
  expect_exit 0 "$IPURUN" predict "$model" "${args[@]}" --data synthetic:16 --output out.npy --json
  expect_json "$STDOUT" 'd["cache"] == "miss"' "a hostile entry is not a hit"
  expect_stderr_contains "recompiling"
}

run_tests "$@"
