#!/usr/bin/env bash
# The runs that put the most runtime threads to work at once, for a runtime-only ipurun built with
# ThreadSanitizer (scripts/test.sh; tests/CMakeLists.txt registers this as e2e_runtime_threads when
# IPUCC_TEST_COMPILER names an ipucc to compile with): pipeline stages whose compute sets run as
# the branches of a Parallel, replicas stepping side by side, oneDNN convolutions converting
# their weights into per-worker scratch, and the all-reduce between replicas. Any report of
# ThreadSanitizer ends ipurun with exit 66 (TSAN_OPTIONS below), which fails the expectation; the
# suppressions are those of oneTBB's and oneDNN's uninstrumented insides (the file says why).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$SRC/cmake/tsan_suppressions.txt ${TSAN_OPTIONS:-}"
SMALL=(--tiles-per-ipu 64 --no-cache)

test_pipelined_replicas_train_and_predict() {
  local mlp=$MODELS/mlp_sequential.json
  expect_exit 0 "$IPUCC" compile "$mlp" "${SMALL[@]}" --batch-size 8 --stage-assignment 0,0,1,2,3,3 \
    --replicas 2 --gradient-accumulation 4 --steps-per-execution 8 -o train.ipuexe
  expect_exit 0 "$IPURUN" train train.ipuexe --data synthetic:256 --steps-per-epoch 8 --progress none \
    --save-weights weights
  expect_exit 0 "$IPUCC" compile "$mlp" "${SMALL[@]}" --mode infer --batch-size 8 \
    --stage-assignment 0,0,1,2,3,3 --steps-per-execution 16 -o infer.ipuexe
  expect_exit 0 "$IPURUN" predict infer.ipuexe --data synthetic:128 --weights weights --output p.npy
}

test_convolutions_on_interleaved_stages() {
  local cnn=$MODELS/cnn_sequential.json
  expect_exit 0 "$IPUCC" compile "$cnn" "${SMALL[@]}" --batch-size 4 --stage-assignment 0,0,0,1,1,1,1,1 \
    --gradient-accumulation 4 --schedule interleaved --replicas 2 --steps-per-execution 4 -o cnn.ipuexe
  expect_exit 0 "$IPURUN" train cnn.ipuexe --data synthetic:64 --steps-per-epoch 4 --progress none
}

run_tests "$@"
