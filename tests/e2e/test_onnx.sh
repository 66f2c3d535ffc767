#!/usr/bin/env bash
# ONNX models: the shared reference models compile and predict their reference outputs, the
# tutorial MLP trains with PyTorch's losses, user data goes in and out as .npy / .pb, and
# unsupported or malformed models fail with every offending node named.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SHARED=${IPUCC_SHARED_DIR:-$SRC/../shared}
PEER_MODELS=$SHARED/peers/models
FIXTURE=$SRC/tests/data/torch_reference/mlp_onnx_sgd_b32.json
COMPARE_TENSORS=${COMPARE_TENSORS:-$SRC/build/tests/tools/compare_tensors}

need_peer_models() {
  [[ -f $PEER_MODELS/mlp.onnx ]] || skip "no shared peer models at $PEER_MODELS (set IPUCC_SHARED_DIR)"
}

# compile NAME BATCH: an inference executable of a peer model; predict its reference input.
predict_reference() {
  local name=$1 batch=$2
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/$name.onnx" --mode infer --batch-size "$batch" -o "$name.ipuexe" --json
  expect_exit 0 "$IPURUN" predict "$name.ipuexe" --input "$PEER_MODELS/$name.input.npy" --output "$name.out.npy"
  expect_exit 0 "$PYTHON" "$E2E_DATA" compare "$name.out.npy" "$PEER_MODELS/$name.output.npy"
  expect_json "$STDOUT" 'd["shape_equal"] and d["rel_to_max"] <= 1e-5' "$name reference output"
}

test_mlp_matches_reference_output() {
  need_peer_models
  predict_reference mlp 4
}

# A transformer block (LayerNorm, attention with batched MatMuls, Softmax over the last of four
# axes, exact GELU) exported by PyTorch at opset 14. Its reference comes from PyTorch's fused
# float32 kernels, so the few outputs that are sums cancelling to near zero differ by a large
# fraction of themselves (1 ulp of the terms): the error is measured against the largest reference
# value, as ONNX Runtime's peer check does (../shared/peers/ort_bench.js).
test_transformer_matches_reference_output() {
  need_peer_models
  predict_reference transformer 2
}

test_pipelined_mlp_reads_popart_stages_and_matches() {
  need_peer_models
  predict_reference mlp_pipelined 4
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp_pipelined.onnx" --mode infer --batch-size 4 --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 2 and d["target"]["num_ipus"] == 2'
  # Training it needs no pipeline flags: two micro-batches per update fill the two stages.
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp_pipelined.onnx" --loss sparse_categorical_crossentropy --json
  expect_json "$STDOUT" 'd["pipeline"]["gradient_accumulation"] == 2 and d["steps_per_execution"] == 2'
  expect_stderr_contains "2 pipeline stages: --gradient-accumulation defaults to 2"
}

test_input_names_and_formats() {
  need_peer_models
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --mode infer --batch-size 4 -o mlp.ipuexe
  # NAME=FILE must name the model's input.
  expect_error 3 "the model has no input 'pixels' (its inputs: 'input')" -- \
    "$IPURUN" predict mlp.ipuexe --input "pixels=$PEER_MODELS/mlp.input.npy"
  # --output-dir names the file after the model's output; .pb writes an ONNX TensorProto that
  # reads back as input of the same shape.
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --input "input=$PEER_MODELS/mlp.input.npy" --output-dir out
  expect_file out/logits.npy
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --input "$PEER_MODELS/mlp.input.npy" --output logits.pb
  expect_file logits.pb
  expect_error 3 "input 'input' has shape [4,10], the model expects [N,28,28,1]" -- \
    "$IPURUN" predict mlp.ipuexe --input logits.pb
  expect_error 3 "more inputs given than the model has" -- "$IPURUN" predict mlp.ipuexe --input logits.pb --input logits.pb
  expect_exit 2 "$IPURUN" predict mlp.ipuexe --input "$PEER_MODELS/mlp.input.npy" --data synthetic
}

# The loss of every step against PyTorch float64 (fp32 torch itself drifts 1.6e-4 from it by step
# 200 on this machine; ipurun stays within 1.4e-6), then the first epoch's mean.
test_mlp_trains_like_pytorch() {
  need_peer_models
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --mode train --loss sparse_categorical_crossentropy \
    --optimizer sgd --learning-rate 0.01 --momentum 0.9 --batch-size 32 -o train.ipuexe
  expect_exit 0 "$IPURUN" train train.ipuexe --data synthetic --step-log steps.json --progress none --json
  "$PYTHON" - steps.json "$FIXTURE" "$STDOUT" <<'PYEOF' || fail "losses differ from PyTorch's"
import json, sys
ours = json.load(open(sys.argv[1]))["losses"]
ref = json.load(open(sys.argv[2]))
run = json.load(open(sys.argv[3]))
assert len(ours) == ref["steps"], (len(ours), ref["steps"])
# Rounding differences grow step by step (PyTorch's own float32 run is 1.5e-7 from float64 over the
# first 50 steps and 1.6e-4 by step 172), so each step is held to a few times the spread float32
# has shown up to it: tight where the run is stable, a wrong gradient fails within the first steps.
def rel(losses, i):
    return abs(losses[i] - ref["losses_fp64"][i]) / ref["losses_fp64"][i]
spread = 0.0
for i in range(200):
    spread = max(spread, rel(ref["losses_fp32"], i))
    bound = 1e-6 + 4 * spread
    assert rel(ours, i) <= bound, "step %d: %.9f vs %.9f (rel %.2e, bound %.2e)" % (
        i, ours[i], ref["losses_fp64"][i], rel(ours, i), bound)
worst = max(range(200), key=lambda i: rel(ours, i))
print("worst step %d: rel %.2e from float64, float32's %.2e" % (worst, rel(ours, worst), rel(ref["losses_fp32"], worst)))
mean = sum(ours) / len(ours)
assert abs(run["final"]["loss"] - mean) <= 1e-9 * mean
# The epoch's mean drifts with where fp32 rounds (the tile plan sets the blocks SGEMM sums in, the
# engine the order its host tasks add partials in): PyTorch's own float32 mean is 9.4e-4 from its
# float64 one. Ours is held to three times that spread around float64, not to an earlier run.
fp64, fp32 = ref["epoch_mean_fp64"], ref["epoch_mean_fp32"]
assert abs(mean - fp64) <= 3 * abs(fp32 - fp64), (mean, fp64, fp32)
print("epoch mean %.6f: %.2e from float64, float32's %.2e" % (mean, abs(mean - fp64) / fp64, abs(fp32 - fp64) / fp64))
PYEOF
}

# Trained weights go back into the ONNX model: compiling the export reproduces, bit for bit, the
# predictions of the original model with the trained checkpoint.
test_export_onnx_round_trips() {
  need_peer_models
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --loss sparse_categorical_crossentropy --momentum 0.9 \
    --batch-size 32 -o train.ipuexe
  expect_exit 0 "$IPURUN" train train.ipuexe --data synthetic:640 --export-onnx trained.onnx --save-weights ckpt --progress none
  expect_file trained.onnx
  expect_exit 0 "$IPUCC" compile trained.onnx --mode infer --batch-size 4 -o trained.ipuexe
  expect_exit 0 "$IPURUN" predict trained.ipuexe --input "$PEER_MODELS/mlp.input.npy" --output exported.npy
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --mode infer --batch-size 4 -o original.ipuexe
  expect_exit 0 "$IPURUN" predict original.ipuexe --input "$PEER_MODELS/mlp.input.npy" --weights ckpt --output checkpoint.npy
  expect_exit 0 "$COMPARE_TENSORS" exported.npy checkpoint.npy --rtol 0 --atol 0
  expect_exit 1 "$COMPARE_TENSORS" exported.npy "$PEER_MODELS/mlp.output.npy" --rtol 0 --atol 0  # it did train
  # ONNX's own checker accepts the file when Debian's python3-onnx is there (scripts/setup-peers.sh).
  if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
    expect_exit 0 /usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]))' trained.onnx
  fi
  # An executable compiled from a JSON spec has no ONNX model to export.
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_sequential.json" --batch-size 32 -o json.ipuexe
  expect_error 2 "--export-onnx: the executable was not compiled from an ONNX model" -- \
    "$IPURUN" train json.ipuexe --data synthetic:64 --export-onnx x.onnx --progress none
}

test_training_an_onnx_model_needs_a_loss() {
  need_peer_models
  expect_error 2 "mlp.onnx: the ONNX model computes no loss; give --loss (sparse_categorical_crossentropy, " -- \
    "$IPUCC" compile "$PEER_MODELS/mlp.onnx"
  expect_exit 2 "$IPUCC" compile "$PEER_MODELS/mlp.onnx" --loss hinge
}

# torch.onnx.export without dynamic_axes bakes the sample count into the input: training takes it
# as the batch when --batch-size is that count, and otherwise says which --batch-size to give or
# how to export instead, naming the input and its shape.
test_training_a_fixed_batch_export_at_its_batch_size() {
  e2e_data gemm-onnx fixed.onnx --in 8 --out 3 --fixed-batch 4 > /dev/null
  expect_error 4 "fixed.onnx: training needs the input's first dimension to be the batch, but input 'input'" \
    "has the fixed shape f32[4,8] and --batch-size is 8; give --batch-size 4 to train with its fixed first" \
    "dynamic_axes={'input': {0: 'batch'}}" -- \
    "$IPUCC" compile fixed.onnx --loss sparse_categorical_crossentropy --batch-size 8
  expect_exit 0 "$IPUCC" compile fixed.onnx --loss sparse_categorical_crossentropy --batch-size 4 -o train.ipuexe
  e2e_data npy x.npy --shape 12,8
  e2e_data npy labels.npy --dtype i8 --shape 12 --fill mod:3
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:x.npy,labels.npy --step-log steps.json --progress none
  expect_json steps.json 'len(d["losses"]) == 3' "12 samples are 3 steps of the fixed batch 4"
  expect_exit 0 "$IPUCC" compile fixed.onnx --mode infer -o fixed.ipuexe
}

test_cnn_matches_reference_output() {
  need_peer_models
  predict_reference cnn 4
}

# The synthetic samples are [28,28,1], the model's input [1,28,28]: the same bytes. Each of the
# first 50 steps' loss matches PyTorch float64 (scripts/reference/make_cnn_parity_fixture.py).
# On 6400 samples this LeNet stays on the ln(10) plateau (so does PyTorch: the labels are a random
# linear function of pixel noise), so that the loss falls is shown by fitting 320 samples.
test_cnn_trains_like_pytorch() {
  need_peer_models
  expect_exit 0 "$IPUCC" compile "$PEER_MODELS/cnn.onnx" --loss sparse_categorical_crossentropy \
    --learning-rate 0.01 --momentum 0.9 --batch-size 32 -o cnn-train.ipuexe
  expect_exit 0 "$IPURUN" train cnn-train.ipuexe --data synthetic:6400 --step-log steps.json --progress none --json
  "$PYTHON" - steps.json "$SRC/tests/data/torch_reference/cnn_onnx_sgd_b32.json" <<'PYEOF' || fail "losses differ from PyTorch's"
import json, sys
ours = json.load(open(sys.argv[1]))["losses"]
ref = json.load(open(sys.argv[2]))["losses_fp64"]
assert len(ours) == 200, len(ours)
rel = max(abs(a - b) / b for a, b in zip(ours, ref))
print("worst relative difference over %d steps: %.2e" % (len(ref), rel))
assert rel <= 1e-4, rel
PYEOF
  expect_exit 0 "$IPURUN" train cnn-train.ipuexe --data synthetic:320 --epochs 30 --step-log fit.json --progress none
  "$PYTHON" - fit.json <<'PYEOF' || fail "the CNN's loss does not fall"
import json, sys
losses = json.load(open(sys.argv[1]))["losses"]
first, last = sum(losses[:20]) / 20, sum(losses[-20:]) / 20
print("first 20 steps %.4f, last 20 steps %.4f" % (first, last))
assert last < first - 0.05, (first, last)
PYEOF
}

# Every unsupported node is listed, each with its reason; consumers of a failed node are not
# reported again. The model is written with the onnx Python package.
test_unsupported_nodes_are_all_listed() {
  "$PYTHON" -c 'import onnx' 2>/dev/null || skip "no onnx Python package"
  "$PYTHON" - <<'PYEOF'
import onnx
from onnx import helper, TensorProto
nodes = [
    helper.make_node("MaxPool", ["x"], ["p", "i"], name="pool_with_indices", kernel_shape=[2, 2]),
    helper.make_node("Relu", ["p"], ["r"], name="relu"),
    helper.make_node("LpPool", ["x"], ["l"], name="lp", kernel_shape=[2, 2]),
    helper.make_node("Add", ["r", "l"], ["y"], name="add"),
]
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "unsupported.onnx")
PYEOF
  expect_error 4 "unsupported.onnx: node 'pool_with_indices' (MaxPool): the Indices output of MaxPool is not supported" -- \
    "$IPUCC" compile unsupported.onnx --mode infer --batch-size 4
  expect_stderr_contains "node 'lp' (LpPool): op LpPool is not supported"
  expect_stderr_not_contains "'relu'"
  expect_stderr_not_contains "'add'"
  expect_no_file "$IPUCC_CACHE_DIR/entries"/*/*.ipuexe
}

# expect_matches_reference KIND SHAPE SEED TOLERANCE: the model `e2e_data KIND-onnx` builds, run on
# random samples of SHAPE (batch first) through ipucc (batch 2: the last step padded) and ipurun,
# agrees with the reference output e2e_data computes, relative to its largest magnitude.
expect_matches_reference() {
  local kind=$1 shape=$2 seed=$3 tolerance=$4
  e2e_data npy x.npy --shape "$shape" --fill random --seed "$seed"
  e2e_data "$kind-onnx" model.onnx x.npy want.npy
  expect_exit 0 "$IPUCC" compile model.onnx --mode infer --batch-size 2 -o model.ipuexe
  expect_exit 0 "$IPURUN" predict model.ipuexe --input x.npy --output got.npy
  e2e_data compare got.npy want.npy > cmp.json
  expect_json cmp.json "d['shape_equal'] and d['rel_to_max'] < $tolerance" "$kind against its reference"
}

# Opset-6 versions (explicit broadcast and axis, Sum without broadcasting, Flatten-1, Gemm-6)
# compute what the later versions they equal compute (docs/onnx.md, "Older opsets").
test_opset6_model_matches_its_reference() {
  expect_matches_reference opset6 5,3,2 4 1e-6
}

# InstanceNormalization and PRelu (a per-channel slope, negative in one channel) against a
# reference computed here; their gradients are checked in tests/unit/compiler/test_gradients.cpp.
test_instance_norm_and_prelu_match_their_reference() {
  expect_matches_reference norm-prelu 5,2,3 6 1e-5
}

# ConvTranspose (grouped, strided, dilated, asymmetric pads, output_padding, a bias) against a
# reference computed here by its definition (its gradients: tests/unit/compiler/test_gradients.cpp).
test_conv_transpose_matches_its_reference() {
  expect_matches_reference conv-transpose 3,4,3,2 8 1e-6
}

# Softsign, the op docs/adding_an_op.md adds as its worked example, against its definition (its
# gradient: tests/unit/compiler/test_gradients.cpp).
test_softsign_matches_its_reference() {
  expect_matches_reference softsign 5,2,3 10 1e-6
}

# A 3-D Conv (depth dilation and pads, strided H, asymmetric pads, a bias) against a reference
# computed here by its definition (its gradients: tests/unit/compiler/test_gradients.cpp).
test_conv3d_matches_its_reference() {
  expect_matches_reference conv3d 3,2,4,3,3 9 1e-6
}

# A pool whose one plane would crowd a tile (its vertices own whole planes) runs as two 1-D pools
# over rows, a row too long for a tile in overlapping segments, and computes what ONNX defines:
# issue 11's MaxPool 60x80, dilation 10, stride 10 on a 1000x1000 plane (it asked 4,005,356
# bytes of one tile), a max and an average pool with pads on a 400x400 plane (640,000 bytes, more
# than a 638,976-byte tile), and 1-D pools over a 100,000-sample row, each against a reference.
test_pools_of_large_planes_are_spread_over_tiles() {
  local op case data kernel dilations strides pads
  e2e_data npy big.npy --shape 1,1,1000,1000 --fill random --seed 11
  e2e_data npy small.npy --shape 1,1,400,400 --fill random --seed 10
  e2e_data npy row.npy --shape 1,2,100000 --fill random --seed 12
  for case in "MaxPool big 60,80 10,10 10,10 0,0,0,0" "MaxPool small 40,30 10,10 10,10 5,0,0,5" \
              "AveragePool small 40,30 10,10 10,10 5,0,0,5" "MaxPool row 20 50 37 7,30" "AveragePool row 20 50 37 0,0"; do
    read -r op data kernel dilations strides pads <<< "$case"
    e2e_data pool-onnx "$op" pool.onnx "$data.npy" want.npy --kernel "$kernel" --dilations "$dilations" --strides "$strides" \
      --pads "$pads"
    expect_exit 0 "$IPUCC" compile pool.onnx --mode infer --batch-size 1 -o pool.ipuexe
    expect_exit 0 "$IPURUN" predict pool.ipuexe --input "$data.npy" --output got.npy
    e2e_data compare got.npy want.npy > cmp.json
    expect_json cmp.json 'd["shape_equal"] and d["rel_to_max"] < 1e-6' "$case"
  done
  # Issue 11's 1-D MaxPool, kernel 200, dilation 10, over 220,000 samples (it asked 968,340 bytes
  # of one tile; its reference would take Python minutes): it compiles and runs.
  e2e_data npy long.npy --shape 1,1,220000 --fill random --seed 13
  e2e_data pool-onnx MaxPool long.onnx long.npy - --kernel 200 --dilations 10 --strides 1 --pads 0,0
  expect_exit 0 "$IPUCC" compile long.onnx --mode infer --batch-size 1 -o long.ipuexe
  expect_exit 0 "$IPURUN" predict long.ipuexe --input long.npy --json
  expect_json "$STDOUT" 'd["outputs"][0]["shape"] == [1, 1, 218010]'
}

# Reductions and broadcasts read only the part of their input their outputs need: a LayerNorm
# over rows of a 4 MB [1, 1000, 1000] input (its ReduceMean and broadcast Sub read the whole input
# on every tile before) fits and matches its reference.
test_reductions_of_large_inputs_are_spread_over_tiles() {
  expect_matches_reference layer-norm 1,1000,1000 14 1e-5
}

# ONNX's training ops (ai.onnx.preview.training) are a valid model ipucc does not implement.
test_ops_of_another_domain_are_unsupported() {
  e2e_data momentum-onnx momentum.onnx
  expect_error 4 "momentum.onnx: node 'step' (Momentum): op Momentum of domain 'ai.onnx.preview.training' is not supported" -- \
    "$IPUCC" compile momentum.onnx --mode infer
}

test_malformed_onnx_is_invalid_input() {
  printf 'not a protobuf \xff\xff' > broken.onnx
  expect_error 3 "broken.onnx: not an ONNX model" -- "$IPUCC" compile broken.onnx --mode infer
  : > empty.onnx
  expect_error 3 "empty.onnx: the ONNX model has no graph" -- "$IPUCC" compile empty.onnx --mode infer
}

run_tests "$@"
