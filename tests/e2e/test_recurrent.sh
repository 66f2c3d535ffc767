#!/usr/bin/env bash
# ONNX's RNN, GRU and LSTM (docs/onnx.md, "Recurrent ops"), unrolled over the sequence at import:
# models torch exports (its GRU and LSTM start from ConstantOfShape(Shape(x)), folded at compile
# time) predict torch's logits and train 3 SGD steps with torch's float64 losses, each within
# 1e-5 (the second and third losses follow from the first step's gradients: backpropagation
# through time); the attributes torch never writes (peepholes, layout 1, clip, input_forget,
# linear_before_reset 0, other activations, reverse, initial states, sequence_lens) match a float64
# reference of ONNX's equations (tests/e2e/recurrent_models.py) within 1e-5. Needs Debian's
# python3-onnx and python3-torch; skipped without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# fd 3: the suite's own stdout, so that passing tests still print their errors.
exec 3>&1

TORCH_PY=/usr/bin/python3
MODELS_PY=$SRC/tests/e2e/recurrent_models.py

# like_torch KIND [FLAGS...]: exports torch.nn.KIND, predicts and trains, compares with torch.
like_torch() {
  "$TORCH_PY" -c 'import torch, onnx' 2>/dev/null || skip "no python3-torch and python3-onnx"
  expect_exit 0 "$TORCH_PY" "$MODELS_PY" torch "$@" model
  expect_exit 0 "$IPUCC" compile model/model.onnx --mode infer --batch-size 12 --no-cache --json -o infer.ipuexe
  expect_json "$STDOUT" 'd["folded_onnx_nodes"] >= 1' "the initial state's ConstantOfShape(Shape(x)) is folded"
  expect_exit 0 "$IPURUN" predict infer.ipuexe --input model/x.npy --output y.npy
  expect_exit 0 "$IPUCC" compile model/model.onnx --loss sparse_categorical_crossentropy --optimizer sgd \
    --learning-rate 0.1 --batch-size 4 --no-cache -o train.ipuexe
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:model/x.npy,model/labels.npy --step-log steps.json \
    --progress none
  "$TORCH_PY" - <<'PYEOF' >&3 || fail "differs from torch"
import json
import numpy as np
got, want = np.load("y.npy").astype(np.float64), np.load("model/predictions.npy").astype(np.float64)
predictions = np.abs(got - want).max() / np.abs(want).max()
losses, ref = json.load(open("steps.json"))["losses"], json.load(open("model/losses.json"))
worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
print("predictions %.2e, losses %.2e (%s)" % (predictions, worst, losses))
raise SystemExit(0 if predictions <= 1e-5 and len(losses) == 3 and worst <= 1e-5 else 1)
PYEOF
}

test_a_bidirectional_lstm_predicts_and_trains_like_torch() {
  like_torch LSTM --bidirectional
}

test_two_stacked_grus_predict_and_train_like_torch() {
  like_torch GRU --layers 2
}

test_an_elman_rnn_predicts_and_trains_like_torch() {
  like_torch RNN
}

# matches_onnx VARIANT: one node with attributes torch never writes against ONNX's equations.
matches_onnx() {
  "$TORCH_PY" -c 'import numpy, onnx' 2>/dev/null || skip "no python3-onnx"
  expect_exit 0 "$TORCH_PY" "$MODELS_PY" onnx "$1" model
  expect_exit 0 "$IPUCC" compile model/model.onnx --mode infer --no-cache -o model.ipuexe
  mkdir out
  expect_exit 0 "$IPURUN" predict model.ipuexe --input model/x.npy --output-dir out
  "$TORCH_PY" - <<'PYEOF' >&3 || fail "differs from ONNX's equations"
import os
import numpy as np
worst = {}
for name in sorted(os.listdir("model/want")):
    want, got = np.load("model/want/" + name), np.load("out/" + name).astype(np.float64)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    worst[name] = np.abs(got - want).max() / np.abs(want).max()
print({k: "%.2e" % v for k, v in worst.items()})
raise SystemExit(0 if max(worst.values()) <= 1e-5 else 1)
PYEOF
}

test_lstm_with_peepholes_clip_and_the_batch_first() {
  matches_onnx lstm_peepholes_batch_first
}

test_reverse_lstm_with_input_forget_and_its_own_activations() {
  matches_onnx lstm_input_forget_reverse
}

test_bidirectional_gru_resetting_before_the_recurrence() {
  matches_onnx gru_reset_before_linear
}

test_reverse_rnn_with_relu() {
  matches_onnx rnn_relu_reverse
}

# Sequences shorter than X would need a mask per sample: refused, naming the node.
test_shorter_sequences_are_refused_naming_the_node() {
  "$TORCH_PY" -c 'import numpy, onnx' 2>/dev/null || skip "no python3-onnx"
  expect_exit 0 "$TORCH_PY" "$MODELS_PY" onnx lstm_input_forget_reverse model
  "$TORCH_PY" - <<'PYEOF' || fail "could not edit the model"
import numpy as np, onnx
from onnx import numpy_helper
m = onnx.load("model/model.onnx")
for i, t in enumerate(m.graph.initializer):
    if t.name == "sequence_lens":
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.array([4, 2, 4], dtype=np.int32), "sequence_lens"))
onnx.save(m, "short.onnx")
PYEOF
  expect_error 4 "short.onnx: node 'recurrent' (LSTM): sequence_lens holds 2, not the sequence length 4" -- \
    "$IPUCC" compile short.onnx --mode infer --no-cache
}

run_tests "$@"
