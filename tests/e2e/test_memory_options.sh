#!/usr/bin/env bash
# The memory options a Graphcore user has (docs/training.md, "Recomputation on one IPU";
# docs/cycle_model.md, "Tile planning"): --recompute without pipeline stages trains bitwise the
# same weights as without it, and lets ResNet-18 train at a micro-batch that does not fit one mk2
# IPU otherwise; --available-memory-proportion changes the convolutions' and MatMuls' plans (and
# not at its default), and bad values of either are usage errors. The ResNet tests need Debian's
# python3-torch and python3-torchvision (scripts/make_resnet18.py) and are skipped without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_functional.json
CNN=$MODELS/cnn_sequential.json

# train_both MODEL STEPS COMPILE_FLAGS... -- TRAIN_FLAGS...: compiles MODEL without and with
# --recompute, trains each STEPS steps from the same initial weights on the same data, and checks
# that the weights and optimizer state they save are the same bits.
train_both() {
  local model=$1 steps=$2 variant
  shift 2
  local compile_flags=() train_flags=()
  while [[ $# -gt 0 && $1 != -- ]]; do compile_flags+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  train_flags=("$@")
  for variant in plain recompute; do
    expect_exit 0 "$IPUCC" compile "$model" --no-cache -o "$variant.ipuexe" "${compile_flags[@]}" \
      $([[ $variant == recompute ]] && echo --recompute)
    expect_exit 0 "$IPURUN" train "$variant.ipuexe" --steps-per-epoch "$steps" --progress none \
      --save-weights "$variant.ckpt" "${train_flags[@]}"
  done
  expect_same_checkpoints plain.ckpt recompute.ckpt "$(basename "$model") with --recompute"
}

test_recompute_trains_the_mlp_and_the_cnn_spec_to_the_same_bits() {
  train_both "$MLP" 6 --batch-size 16 --tiles-per-ipu 64 -- --data synthetic:96
  train_both "$CNN" 4 --batch-size 8 --tiles-per-ipu 64 -- --data synthetic:32
  # With fp16 compute, fp32 masters and loss scaling, and gradients accumulated over micro-batches.
  train_both "$CNN" 4 --batch-size 8 --tiles-per-ipu 64 --precision mixed --gradient-accumulation 2 -- \
    --data synthetic:32
  # It recomputed something: the IR has the clones, each waiting for a gradient.
  expect_exit 0 "$IPUCC" compile "$CNN" --batch-size 8 --tiles-per-ipu 64 --recompute --dump-ir --no-cache -o ir.ipuexe
  expect_stdout_contains "/recompute"
  expect_stdout_contains " after "
}

make_resnet() {  # make_resnet DIR [make_resnet18.py FLAGS...]
  /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null || skip "no python3-torch and python3-torchvision"
  local dir=$1
  shift
  expect_exit 0 /usr/bin/python3 "$SRC/scripts/make_resnet18.py" "$dir" "$@"
}

TRAIN_RESNET=(--loss sparse_categorical_crossentropy --optimizer sgd --learning-rate 0.01 --momentum 0.9)

# A small torchvision ResNet (batch-norm folded, every block kind) trains to the same bits with
# recomputation as without, over two epochs of two steps: the clones compute what the forward
# computed, from the same values with the same plans.
test_recompute_trains_a_small_resnet_bitwise() {
  make_resnet small --blocks 1,1,1,1 --image-size 64 --batch 8
  expect_exit 0 "$PYTHON" -c 'import numpy as np; np.save("labels.npy", np.arange(8, dtype=np.int32) * 97 % 1000)'
  local variant
  for variant in plain recompute; do
    expect_exit 0 "$IPUCC" compile small/resnet18.onnx --no-cache -o "$variant.ipuexe" "${TRAIN_RESNET[@]}" \
      --batch-size 4 $([[ $variant == recompute ]] && echo --recompute)
    expect_exit 0 "$IPURUN" train "$variant.ipuexe" --steps-per-epoch 2 --progress none \
      --save-weights "$variant.ckpt" --data npy:small/resnet18.input.npy,labels.npy --epochs 2
  done
  expect_same_checkpoints plain.ckpt recompute.ckpt "the small ResNet's weights with and without --recompute"
}

# ResNet-18 (224×224) training with SGD and momentum on one mk2 IPU. Measured: at micro-batch 8
# the fullest tile falls from 345,740 to 317,484 bytes (4,677,299 to 5,741,948 cycles per step);
# micro-batch 32 does not fit without recomputation (665,860 bytes on tile 2) and needs 559,008 with.
# (Before convolutions split their input channels, micro-batch 12 already did not fit.)
test_recompute_fits_resnet18_at_a_micro_batch_that_does_not_fit_without() {
  make_resnet model
  local variant
  for variant in plain recompute; do
    expect_exit 0 "$IPUCC" compile model/resnet18.onnx "${TRAIN_RESNET[@]}" --batch-size 8 --no-cache \
      -o "$variant.ipuexe" --json $([[ $variant == recompute ]] && echo --recompute)
    cp "$STDOUT" "$variant.json"
    echo "resnet18 micro-batch 8 $variant: peak tile $(json_get "$variant.json" 'd["estimates"]["peak_tile_bytes"]')" \
      "bytes, $(json_get "$variant.json" 'd["estimates"]["cycles_per_step"]["train"]') cycles/step"
  done
  expect_exit 0 "$PYTHON" -c "
import json
plain, recomputed = (json.load(open(v + '.json'))['estimates'] for v in ('plain', 'recompute'))
assert recomputed['peak_tile_bytes'] < plain['peak_tile_bytes'], (recomputed, plain)
assert recomputed['cycles_per_step']['train'] > plain['cycles_per_step']['train']"
  expect_error 5 "tile(s) out of memory" -- "$IPUCC" compile model/resnet18.onnx "${TRAIN_RESNET[@]}" \
    --batch-size 32 --no-cache -o plain32.ipuexe
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx "${TRAIN_RESNET[@]}" --batch-size 32 --recompute --no-cache \
    -o recompute32.ipuexe --json
  expect_json "$STDOUT" 'd["estimates"]["peak_tile_bytes"] <= 638976' "micro-batch 32 fits with --recompute"
}

test_recompute_checkpoints_by_kind_or_name() {
  expect_exit 0 "$IPUCC" compile "$CNN" --batch-size 8 --tiles-per-ipu 64 --recompute --recompute-checkpoints Conv \
    --dump-ir --no-cache -o conv.ipuexe
  # The convolutions' outputs are kept: none is recomputed.
  if grep -E '= Conv(\+Relu)?\(.* after ' "$STDOUT" | grep -q recompute; then fail "a Conv was recomputed"; fi
  expect_error 2 "--recompute-checkpoints: 'Gelu', 'nope' names no op kind, op or layer of the forward pass" -- \
    "$IPUCC" compile "$CNN" --recompute --recompute-checkpoints conv1,Gelu,nope
  expect_error 2 "--recompute-checkpoints names the checkpoints of --recompute: give --recompute" -- \
    "$IPUCC" compile "$CNN" --recompute-checkpoints Conv
  expect_error 2 "--recompute-checkpoints applies to recomputation on one IPU" -- \
    "$IPUCC" compile "$MODELS/mlp_sequential_staged.json" --recompute --recompute-checkpoints dense1
}

# ResNet-18 training at micro-batch 4: at 0.1 the convolutions' plans change, at more cycles
# (2,775,820 to 3,030,201) and a smaller fullest tile (307,788 to 283,592 bytes); at the default,
# spelt out, the executable is the same bits. The fullest tile is not asserted: what it holds
# besides receive buffers is the tensors the changed plans lay out, which can grow (it once went
# from 279,784 to 282,280). The unit tests check the memory a smaller share saves
# (tests/unit/compiler/lowering/test_available_memory.cpp).
test_available_memory_proportion_changes_the_plans_and_not_at_its_default() {
  make_resnet model
  local variant
  for variant in default:0.6 low:0.1; do
    expect_exit 0 "$IPUCC" compile model/resnet18.onnx "${TRAIN_RESNET[@]}" --batch-size 4 --no-cache \
      -o "${variant%%:*}.ipuexe" --json --available-memory-proportion "${variant#*:}"
    cp "$STDOUT" "${variant%%:*}.json"
  done
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx "${TRAIN_RESNET[@]}" --batch-size 4 --no-cache -o unset.ipuexe
  cmp -s unset.ipuexe default.ipuexe || fail "--available-memory-proportion 0.6 changed the executable"
  expect_exit 0 "$PYTHON" -c "
import json
default, low = (json.load(open(v + '.json'))['estimates'] for v in ('default', 'low'))
print('resnet18 micro-batch 4: peak tile', default['peak_tile_bytes'], '->', low['peak_tile_bytes'],
      'bytes, cycles', default['cycles_per_step']['train'], '->', low['cycles_per_step']['train'])
assert low['cycles_per_step']['train'] > default['cycles_per_step']['train']"
}

test_available_memory_proportion_out_of_range_is_a_usage_error() {
  local bad
  for bad in 0 -0.5 1.01 nan abc; do
    expect_exit 2 "$IPUCC" compile "$MLP" --available-memory-proportion "$bad"
    expect_stderr_contains "--available-memory-proportion"
    expect_stderr_contains "must be a number in (0, 1], got $bad"
  done
  expect_exit 0 "$IPUCC" compile "$MLP" --tiles-per-ipu 64 --available-memory-proportion 1 --no-cache -o one.ipuexe
}

run_tests "$@"
