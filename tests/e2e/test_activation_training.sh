#!/usr/bin/env bash
# Training through the activations (docs/onnx.md, "Gradients"): an MLP through ReLU6, Hardswish,
# ELU, SELU, LeakyReLU, Softplus, tanh-GELU, Hardtanh, PReLU, Mish, CELU and Hardsigmoid as torch
# 1.13 exports them (tests/e2e/activation_mlp.py: Clip, HardSigmoid·Mul or, from opset 14,
# HardSwish, Elu, Selu, LeakyRelu, Softplus, PRelu, Celu, ...; dynamic batch) trains 3 SGD steps
# (momentum 0.9) at batch 8 as a float64 torch reference does: each step's loss and every weight
# after the steps within 1e-5 relative to the largest, and each update as close as float32 weights
# can show it. Observed when written: losses 5.6e-8, weights 9.2e-8 (the closest pre-activation to
# a kink 1.1e-3 from it, far beyond float32's noise). And training through an op without a
# gradient is refused naming the op type and the node. Needs Debian's python3-torch and
# python3-onnx; skipped without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# fd 3: the suite's own stdout, so that passing tests still print their errors.
exec 3>&1

TORCH_PY=/usr/bin/python3

# trains_like_torch OPSET: exports the MLP at OPSET, trains it and compares with torch.
trains_like_torch() {
  "$TORCH_PY" -c 'import torch, onnx' 2>/dev/null || skip "no python3-torch and python3-onnx"
  # Seed 3: no pre-activation within 1e-3 of a kink, where float32 and float64 could part.
  expect_exit 0 "$TORCH_PY" "$SRC/tests/e2e/activation_mlp.py" model --opset "$1" --seed 3 --batch 8 --steps 3 \
    --learning-rate 0.05
  expect_exit 0 "$IPUCC" compile model/model.onnx --mode train --loss sparse_categorical_crossentropy \
    --optimizer sgd --learning-rate 0.05 --momentum 0.9 --batch-size 8 --no-cache -o train.ipuexe
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:model/train.x.npy,model/train.y.npy \
    --step-log steps.json --save-weights ckpt --progress none
  "$TORCH_PY" - steps.json ckpt model <<'PYEOF' >&3 || fail "differs from torch"
import json, os, sys
import numpy as np
steps, ckpt, model = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
ref = json.load(open(os.path.join(model, "reference.json")))
index = json.load(open(os.path.join(ckpt, "index.json")))
losses = max(abs(a - b) / abs(b) for a, b in zip(steps["losses"], ref["losses"]))
weights = updates = 0.0
for name in ref["initializers"]:
    got = np.load(os.path.join(ckpt, index[name])).astype(np.float64)
    want = np.load(os.path.join(model, "reference", name + ".npy"))
    start = np.load(os.path.join(model, "reference", name + ".initial.npy"))
    weights = max(weights, np.abs(got - want).max() / np.abs(want).max())
    # 1e-5 of torch's largest update plus what storing the weight in float32 rounds away.
    allowed = 1e-5 * np.abs(want - start).max() + 4 * 2.0**-24 * np.abs(want).max()
    updates = max(updates, np.abs((got - start) - (want - start)).max() / allowed)
print("losses %.2e, weights %.2e, updates %.2f of the tolerance, closest kink %.1e"
      % (losses, weights, updates, ref["kink_margin"]))
ok = len(steps["losses"]) == len(ref["losses"]) and losses <= 1e-5 and weights <= 1e-5 and updates <= 1
sys.exit(0 if ok else 1)
PYEOF
}

test_trains_like_torch_through_every_activation() {
  trains_like_torch 13
}

# From opset 14 torch writes Hardswish as one HardSwish node.
test_trains_like_torch_with_hardswish_at_opset_14() {
  trains_like_torch 14
}

# Floor has no gradient: inference compiles, training is refused (exit 4) with the ONNX op type
# and the node's name, never an internal kind number.
test_training_through_an_op_without_gradient_names_it() {
  "$TORCH_PY" -c 'import onnx' 2>/dev/null || skip "no python3-onnx"
  "$TORCH_PY" - <<'PYEOF'
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])
w0 = numpy_helper.from_array(np.full((4, 4), 0.5, np.float32), "w0")
w1 = numpy_helper.from_array(np.full((4, 3), 0.25, np.float32), "w1")
nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"], name="fc0"),
         helper.make_node("Floor", ["h"], ["f"], name="/act/Floor"),
         helper.make_node("Mul", ["h", "f"], ["a"], name="/act/Mul"),
         helper.make_node("MatMul", ["a", "w1"], ["logits"], name="fc1")]
graph = helper.make_graph(nodes, "floor", [x], [y], [w0, w1])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "floor.onnx")
PYEOF
  expect_exit 0 "$IPUCC" compile floor.onnx --mode infer --batch-size 2 --no-cache -o infer.ipuexe
  expect_error 4 "training through 'Floor' node '/act/Floor' is not supported: its gradient is not implemented" \
    -- "$IPUCC" compile floor.onnx --mode train --loss sparse_categorical_crossentropy --batch-size 2 --no-cache \
    -o train.ipuexe
  expect_stderr_not_contains "kind"
}

run_tests "$@"
