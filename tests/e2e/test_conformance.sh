#!/usr/bin/env bash
# scripts/conformance.sh over ONNX's node tests: no test fails, crashes or times out (unsupported
# ones say why), and the tests of the ops ipucc implements pass.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CONFORMANCE=${IPUCC_CONFORMANCE_DIR:-$SRC/../shared/conformance/onnx-node-tests}

# ran NAME: whether the run printed a result for test NAME. Under the sanitizers ctest sets
# CONFORMANCE_EVERY (tests/e2e/CMakeLists.txt) and only a sample runs: a named check then holds for
# the tests in the sample.
ran() { grep -qE "^(pass|fail|unsupported) $1(:|\$)" "$STDOUT"; }

test_every_node_test_passes_or_is_unsupported() {
  [[ -d $CONFORMANCE ]] || skip "no ONNX node tests at $CONFORMANCE (set IPUCC_CONFORMANCE_DIR)"
  expect_exit 0 env IPUCC_CONFORMANCE_DIR="$CONFORMANCE" bash "$SRC/scripts/conformance.sh"
  expect_stdout_contains " failed, "
  grep -q '^0 passed' "$STDOUT" && fail "nothing passed"
  local sampled=0
  ((${CONFORMANCE_EVERY:-1} > 1)) && sampled=1
  # A floor per op family, so a regression that turns passes into "unsupported" is caught.
  local t
  for t in test_relu test_gemm_transposeA test_gemm_default_vector_bias test_matmul_2d test_flatten_negative_axis2 \
           test_softmax_large_number test_dropout_default test_identity \
           test_abs test_neg test_exp test_log test_sqrt test_reciprocal test_ceil test_sign test_erf test_elu \
           test_selu test_leakyrelu test_hardsigmoid test_softplus test_clip test_gelu_default_1 test_gelu_tanh_1 \
           test_not_2d test_add_bcast test_sub_bcast test_mul_bcast test_div_bcast test_pow_bcast_array \
           test_max_example test_min_example test_sum_example test_mean_example test_equal test_less_bcast \
           test_and_bcast3v1d test_where_example test_transpose_all_permutations_2 test_concat_3d_axis_1 \
           test_split_equal_parts_1d_opset13 test_gather_negative_indices test_argmax_keepdims_example \
           test_argmin_no_keepdims_example test_softmax_axis_0 test_logsoftmax_axis_1 \
           test_layer_normalization_4d_axis1 test_matmul_4d test_gemm_alpha test_gemm_beta test_shape \
           test_conv_with_strides_and_asymmetric_padding test_conv_with_autopad_same test_maxpool_2d_ceil \
           test_maxpool_2d_dilations test_maxpool_1d_default \
           test_averagepool_2d_ceil_last_window_starts_on_pad test_averagepool_2d_dilations test_globalaveragepool \
           test_batchnorm_example \
           test_reduce_sum_keepdims_example test_reduce_mean_negative_axes_keepdims_random test_reduce_max_keepdims_example \
           test_reduce_sum_empty_axes_input_noop test_reduce_sum_square_keepdims_example_expanded \
           test_split_variable_parts_2d_opset13 test_split_variable_parts_1d_opset18 test_slice test_slice_neg_steps \
           test_reshape_reordered_all_dims test_reshape_zero_and_negative_dim test_squeeze test_unsqueeze_three_axes \
           test_expand_dim_changed test_tile test_constant_pad test_constant_pad_negative_axes \
           test_edge_pad test_reflect_pad test_wrap_pad test_dropout_default_mask test_training_dropout_zero_ratio_mask \
           test_maxpool_3d_default test_maxpool_3d_dilations test_averagepool_3d_default \
           test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True \
           test_cast_FLOAT_to_FLOAT16 test_cast_FLOAT16_to_FLOAT test_castlike_FLOAT_to_FLOAT16_expanded \
           test_max_float16 test_min_float16 \
           test_div_int32_trunc test_add_uint8 test_sub_uint8 test_mul_int16 test_div_uint64 test_max_int8 \
           test_center_crop_pad_crop_expanded test_constantofshape_int_zeros test_range_int32_type_negative_delta \
           test_group_normalization_example_expanded test_rotary_embedding_with_rotary_dim_expanded; do
    ((sampled)) && ! ran "$t" && continue
    grep -qx "pass $t" "$STDOUT" || fail "$t does not pass: $(grep " $t[: ]" "$STDOUT")"
  done
  # The losses: every NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss test (all float32,
  # expanded forms included) passes.
  for t in test_nllloss_NCd1d2d3_sum_weight_high_ii test_sce_mean_weight_ii_3d_log_prob; do
    ((sampled)) && ! ran "$t" && continue
    grep -qx "pass $t" "$STDOUT" || fail "$t does not pass"
  done
  ! grep -E '^(fail|unsupported) test_(nllloss|sce)_' "$STDOUT" || fail "a loss test does not pass"
  # Shape parameters fed as graph inputs are bound with --constant-input, never left as "must be
  # a compile-time constant" (docs/onnx.md, "Constant inputs").
  ! grep -E "^unsupported .*graph input '[^']+' must be a compile-time constant" "$STDOUT" ||
    fail "a test whose constant inputs were not bound"
  # Random Dropout stays unsupported, saying why.
  ((sampled)) && ! ran test_training_dropout ||
    grep -qE "^unsupported test_training_dropout: .*\(Dropout\): Dropout in training mode with ratio .* drops a random mask" "$STDOUT" ||
    fail "test_training_dropout: $(grep " test_training_dropout:" "$STDOUT")"
  # Unsupported lines carry a reason.
  ! grep -E '^unsupported [^:]+$' "$STDOUT" || fail "an unsupported test without a reason"
}

# Any directory laid out like ONNX's backend test data runs: test tensors without names feed the
# model's inputs by position, and every test_data_set_N is run and compared, not only the first.
test_unnamed_tensors_and_every_data_set() {
  local t set
  for t in test_unnamed test_named test_wrong_second_set; do
    mkdir -p "tests/$t"
    e2e_data gemm-onnx "tests/$t/model.onnx" --in 6 --out 4 > "tests/$t/model.json"
    for set in 0 1; do
      mkdir -p "tests/$t/test_data_set_$set"
      e2e_data npy "x$set.npy" --shape 3,6 --fill random --seed "$((set + 5))"
      e2e_data gemm-ref "x$set.npy" "tests/$t/model.json" "y$set.npy"
      if [[ $t == test_named ]]; then
        e2e_data float-pb "x$set.npy" "tests/$t/test_data_set_$set/input_0.pb" --name input
        e2e_data float-pb "y$set.npy" "tests/$t/test_data_set_$set/output_0.pb" --name output
      else
        e2e_data float-pb "x$set.npy" "tests/$t/test_data_set_$set/input_0.pb"
        e2e_data float-pb "y$set.npy" "tests/$t/test_data_set_$set/output_0.pb"
      fi
    done
    rm "tests/$t/model.json"
  done
  # The second set's expected output belongs to the first: a check of set 0 alone would pass.
  cp tests/test_wrong_second_set/test_data_set_0/output_0.pb tests/test_wrong_second_set/test_data_set_1/output_0.pb
  expect_exit 1 env CONFORMANCE_EVERY=1 IPUCC_CONFORMANCE_DIR="$E2E_TMP/tests" bash "$SRC/scripts/conformance.sh"
  expect_stdout_contains "pass test_named"
  expect_stdout_contains "pass test_unnamed"
  expect_stdout_contains "fail test_wrong_second_set: test_data_set_1: output 0:"
  expect_stdout_contains "2 passed, 1 failed, 0 unsupported"
  # A sample of 1 in 2 runs the first and the third, in name order.
  expect_exit 1 env CONFORMANCE_EVERY=2 IPUCC_CONFORMANCE_DIR="$E2E_TMP/tests" bash "$SRC/scripts/conformance.sh"
  expect_stdout_contains "a sample: 1 in 2 of the 3 tests"
  ! grep -q test_unnamed "$STDOUT" || fail "test_unnamed ran outside the sample"
  expect_stdout_contains "1 passed, 1 failed, 0 unsupported"
  expect_exit 2 env CONFORMANCE_EVERY=0 IPUCC_CONFORMANCE_DIR="$E2E_TMP/tests" bash "$SRC/scripts/conformance.sh"
  expect_stderr_contains "CONFORMANCE_EVERY=0 is not a positive integer"
}

run_tests "$@"
