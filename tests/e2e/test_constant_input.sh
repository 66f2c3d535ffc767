#!/usr/bin/env bash
# `--constant-input NAME=FILE` (docs/onnx.md, "Constant inputs"): a shape parameter fed as a graph
# input is bound at compile time, leaves the executable's inputs, and is part of the cache key;
# every misuse names the flag, the input and the file, with its documented exit code.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# reduce.onnx: y = ReduceSum(x [2,3], axes [1] INT64 graph input), keepdims; x = 0..5.
make_reduce_model() {
  e2e_data reduce-sum-onnx reduce.onnx
  e2e_data npy x.npy --dtype f4 --shape 2,3 --fill iota
  e2e_data npy axes1.npy --dtype i8 --shape 1 --fill const:1
  e2e_data npy axes0.npy --dtype i8 --shape 1 --fill const:0
}

test_an_unbound_shape_input_names_the_node_and_the_flag() {
  make_reduce_model
  expect_error 4 "reduce.onnx: node 'sum' (ReduceSum): graph input 'axes' must be a compile-time constant: bind it with --constant-input axes=FILE" -- \
    "$IPUCC" compile reduce.onnx --mode infer
}

test_a_bound_input_is_folded_and_leaves_the_executable_inputs() {
  make_reduce_model
  expect_exit 0 "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes1.npy -o sum1.ipuexe
  expect_exit 0 "$IPURUN" predict sum1.ipuexe --input x=x.npy --output y.npy
  e2e_data npy-json y.npy > y.json
  expect_json y.json 'd["shape"] == [2, 1] and d["values"] == [3.0, 12.0]'
  # axes is no longer an input: feeding it is an error naming the remaining input.
  expect_error 3 "the model has no input 'axes' (its inputs: 'x')" -- \
    "$IPURUN" predict sum1.ipuexe --input x=x.npy --input axes=axes1.npy
  # An ONNX TensorProto .pb (the format of ONNX's test data) binds as well; ipurun MODEL too.
  e2e_data int64-pb axes0.pb axes 0
  expect_exit 0 "$IPURUN" predict reduce.onnx --constant-input axes=axes0.pb --input x=x.npy --output y0.npy
  e2e_data npy-json y0.npy > y0.json
  expect_json y0.json 'd["shape"] == [1, 3] and d["values"] == [3.0, 5.0, 7.0]'
}

# Every input bound: the model computes constants, folded at compile time, and predict gives them
# without any input. Training needs its features input.
test_a_model_of_bound_inputs_only_predicts_its_constants() {
  make_reduce_model
  expect_exit 0 "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes1.npy --constant-input x=x.npy \
    --json -o constants.ipuexe
  expect_json "$STDOUT" 'd["folded_onnx_nodes"] == 1' "the ReduceSum is computed at compile time"
  expect_exit 0 "$IPURUN" predict constants.ipuexe --output y.npy
  e2e_data npy-json y.npy > y.json
  expect_json y.json 'd["shape"] == [2, 1] and d["values"] == [3.0, 12.0]'
  expect_error 3 "this model has no inputs to feed a data set to" -- \
    "$IPURUN" predict constants.ipuexe --data synthetic
  expect_error 4 "training needs a model with one input (the features)" -- \
    "$IPUCC" compile reduce.onnx --loss mse --constant-input axes=axes1.npy --constant-input x=x.npy
}

test_the_cache_key_follows_the_bound_value() {
  make_reduce_model
  expect_exit 0 "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes1.npy --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  local key1
  key1=$(json_get "$STDOUT" 'd["key"]')
  # The same value from another file (and format) is the same key.
  e2e_data int64-pb axes1.pb axes 1
  expect_exit 0 "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes1.pb --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_eq "$(json_get "$STDOUT" 'd["key"]')" "$key1" "key of an equal value from a .pb file"
  # Another value is another key, and its executable computes with that value.
  expect_exit 0 "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes0.npy --json -o sum0.ipuexe
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_ne "$(json_get "$STDOUT" 'd["key"]')" "$key1" "key of another bound value"
  expect_exit 0 "$IPURUN" predict sum0.ipuexe --input x.npy --output y0.npy
  e2e_data npy-json y0.npy > y0.json
  expect_json y0.json 'd["shape"] == [1, 3]'
  # cache explain MODEL computes the same key.
  expect_exit 0 "$IPUCC" cache explain reduce.onnx --mode infer --constant-input axes=axes0.npy --json
  expect_stdout_contains "constant_inputs"
}

test_misuse_names_the_flag_the_input_and_the_file() {
  make_reduce_model
  expect_error 3 "reduce.onnx: --constant-input nope=axes1.npy: the model has no graph input 'nope' (its inputs: 'x', 'axes')" -- \
    "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes1.npy --constant-input nope=axes1.npy
  e2e_data npy axes_i4.npy --dtype i4 --shape 1 --fill const:1
  expect_error 3 "reduce.onnx: input 'axes' bound by --constant-input to axes_i4.npy: the value is INT32 [1], the input is INT64 [1]" -- \
    "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes_i4.npy
  expect_stderr_not_contains "node 'sum'"  # the input's problem is not reported again at its reader
  e2e_data npy axes2.npy --dtype i8 --shape 2 --fill const:1
  expect_error 3 "input 'axes' bound by --constant-input to axes2.npy: the value is INT64 [2], the input is INT64 [1]" -- \
    "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes2.npy
  expect_error 6 "--constant-input axes=missing.npy: " "missing.npy" -- \
    "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=missing.npy
  printf 'not a tensor' > garbage.npy
  expect_error 3 "--constant-input axes=garbage.npy: " "garbage.npy" -- \
    "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=garbage.npy
  expect_error 3 "--constant-input axes=axes0.npy: input 'axes' is bound twice" -- \
    "$IPUCC" compile reduce.onnx --mode infer --constant-input axes=axes1.npy --constant-input axes=axes0.npy
  expect_exit 2 "$IPUCC" compile reduce.onnx --mode infer --constant-input axes
  expect_stderr_contains "NAME=FILE"
  expect_error 2 "--constant-input applies to ONNX models only" -- \
    "$IPUCC" compile "$MODELS/mlp_sequential.json" --constant-input axes=axes1.npy
  expect_no_file "$IPUCC_CACHE_DIR/entries"/*/*.ipuexe
}

run_tests "$@"
