#!/usr/bin/env bash
# Batch normalization with batch statistics (ONNX BatchNormalization training_mode 1, docs/onnx.md):
# a small torchvision ResNet-18 (one BasicBlock per stage, 64x64 images, 10 classes, random
# weights) exported by torch in training mode (scripts/make_resnet18.py --training) trains 3 SGD
# steps (momentum 0.9) at batch 4 as a float64 torch reference does: each step's train-mode loss,
# every weight after the steps and the running statistics (torch's unbiased variance, ONNX's
# momentum) within 1e-5 relative to the largest, and each update as close as float32 weights can
# show it (below); predict and evaluate
# afterwards normalise with the running statistics (torch's eval mode). Needs Debian's
# python3-torch and python3-torchvision (for the model and the reference); skipped without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# fd 3: the suite's own stdout, so that passing tests still print their errors.
exec 3>&1

TORCH_PY=/usr/bin/python3

make_model() {
  "$TORCH_PY" -c 'import torch, torchvision, onnx' 2>/dev/null || skip "no python3-torch, torchvision and onnx"
  expect_exit 0 "$TORCH_PY" "$SRC/scripts/make_resnet18.py" model --training --blocks 1,1,1,1 --image-size 64 \
    --batch 4 --classes 10 --steps 3 --learning-rate 0.01
}

compile_train() {
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode train --loss sparse_categorical_crossentropy \
    --optimizer sgd --learning-rate 0.01 --momentum 0.9 --batch-size 4 --no-cache -o train.ipuexe "$@"
}

# compare CHECKPOINT: every tensor of the reference against CHECKPOINT (max |a − b| / max |b|), and
# the update each weight made, within 1e-5 of torch's largest plus what storing the weight in float32
# rounds away (4 ulp of its largest element: a scale near 1 moved by 3e-4 cannot show its update
# to 1e-5 in float32, ipucc's or torch's).
compare() {
  "$TORCH_PY" - "$1" model <<'PYEOF' >&3 || fail "differs from torch"
import json, os, sys
import numpy as np
ckpt, model = sys.argv[1], sys.argv[2]
index = json.load(open(os.path.join(ckpt, "index.json")))
ref = json.load(open(os.path.join(model, "reference.json")))
worst = {"weights": 0.0, "running statistics": 0.0, "updates (share of the tolerance)": 0.0}
for name in ref["initializers"]:
    if name.endswith("num_batches_tracked"):
        continue
    if name not in index:
        sys.exit("checkpoint has no " + name)
    got = np.load(os.path.join(ckpt, index[name])).astype(np.float64)
    want = np.load(os.path.join(model, "reference", name + ".npy"))
    start = np.load(os.path.join(model, "reference", name + ".initial.npy"))
    kind = "running statistics" if "running" in name else "weights"
    worst[kind] = max(worst[kind], np.abs(got - want).max() / np.abs(want).max())
    if kind == "weights":
        allowed = 1e-5 * np.abs(want - start).max() + 4 * 2.0**-24 * np.abs(want).max()
        error = np.abs((got - start) - (want - start)).max()
        worst["updates (share of the tolerance)"] = max(worst["updates (share of the tolerance)"], error / allowed)
print({k: "%.2e" % v for k, v in worst.items()})
ok = worst["weights"] <= 1e-5 and worst["running statistics"] <= 1e-5
sys.exit(0 if ok and worst["updates (share of the tolerance)"] <= 1 else 1)
PYEOF
}

test_trains_like_torch_with_batch_statistics() {
  make_model
  compile_train
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:model/train.x.npy,model/train.y.npy \
    --step-log steps.json --save-weights ckpt --progress none
  "$TORCH_PY" - steps.json model/reference.json <<'PYEOF' >&3 || fail "losses differ from torch's"
import json, sys
steps, ref = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
losses = steps["losses"]
errors = [abs(a - b) / abs(b) for a, b in zip(losses, ref["losses"])]
print("losses", losses, "torch", ref["losses"], "max rel %.2e" % max(errors))
sys.exit(0 if len(losses) == len(ref["losses"]) and max(errors) <= 1e-5 else 1)
PYEOF
  compare ckpt
  # Predict from the trained checkpoint normalises with the running statistics: torch's eval mode.
  expect_exit 0 "$IPUCC" compile model/resnet18.onnx --mode infer --batch-size 4 --no-cache -o infer.ipuexe
  expect_exit 0 "$IPURUN" predict infer.ipuexe --weights ckpt --input model/input.npy --output eval.npy
  expect_exit 0 "$IPURUN" predict train.ipuexe --weights ckpt --input model/input.npy --output eval_train.npy
  "$TORCH_PY" - <<'PYEOF' >&3 || fail "predictions differ from torch's eval mode"
import numpy as np
want = np.load("model/eval.output.npy")
for path in ("eval.npy", "eval_train.npy"):
    got = np.load(path)
    error = np.abs(got - want).max() / np.abs(want).max()
    print(path, "max rel %.2e" % error)
    assert error <= 1e-5, path
PYEOF
}

# Evaluate normalises with the running statistics too (its loss is torch's eval-mode loss on the
# training samples) and moves none of them: a second evaluate gives the same loss, bit for bit.
test_evaluate_uses_and_keeps_running_statistics() {
  make_model
  compile_train
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:model/train.x.npy,model/train.y.npy \
    --save-weights trained --progress none
  for run in 1 2; do
    expect_exit 0 "$IPURUN" evaluate train.ipuexe --weights trained \
      --data npy:model/train.x.npy,model/train.y.npy --progress none --json
    cp "$STDOUT" "evaluate_$run.json"
  done
  "$TORCH_PY" - evaluate_1.json evaluate_2.json model/reference.json <<'PYEOF' >&3 || fail "evaluate differs from torch's eval mode"
import json, sys
first, second, ref = (json.load(open(p)) for p in sys.argv[1:4])
error = abs(first["loss"] - ref["eval_loss"]) / abs(ref["eval_loss"])
print("evaluate loss", first["loss"], "torch eval", ref["eval_loss"], "rel %.2e" % error)
sys.exit(0 if error <= 1e-5 and first["loss"] == second["loss"] else 1)
PYEOF
}

# --weights loads the running statistics; a checkpoint without them is refused by name.
test_checkpoint_needs_running_statistics() {
  make_model
  compile_train
  expect_exit 0 "$IPURUN" train train.ipuexe --data npy:model/train.x.npy,model/train.y.npy \
    --save-weights ckpt --progress none
  "$TORCH_PY" - <<'PYEOF'
import json
index = json.load(open("ckpt/index.json"))
del index["bn1.running_var"]
json.dump(index, open("ckpt/index.json", "w"))
PYEOF
  expect_error 3 "bn1.running_var" -- "$IPURUN" predict train.ipuexe --weights ckpt --input model/input.npy \
    --output out.npy
}

# Batch statistics written out of primitive ops: a ReduceMean over axes 0, 2 and 3 of a ResNet-sized
# [4, 64, 112, 112] activation. Each vertex receives its channels' block (200,704 bytes a channel),
# not the span from its first element to its last (9.7 MB on each of 64 tiles before: exit 5).
test_reduce_over_outer_and_inner_axes_receives_its_block() {
  "$TORCH_PY" -c 'import onnx' 2>/dev/null || skip "no python3-onnx"
  "$TORCH_PY" - <<'PYEOF'
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64, 112, 112])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 1, 1])
node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[0, 2, 3], keepdims=1, name="stats")
onnx.save(helper.make_model(helper.make_graph([node], "reduce", [x], [y]),
                            opset_imports=[helper.make_opsetid("", 13)]), "reduce.onnx")
PYEOF
  expect_exit 0 "$IPUCC" compile reduce.onnx --mode infer --batch-size 4 --no-cache -o reduce.ipuexe --json
  expect_json "$STDOUT" 'd["estimates"]["peak_tile_bytes"] <= 638976' "fits an mk2 tile"
  expect_exit 0 "$TORCH_PY" -c 'import numpy as np; np.save("x.npy", np.random.default_rng(1).standard_normal((4, 64, 112, 112)).astype(np.float32))'
  expect_exit 0 "$IPURUN" predict reduce.ipuexe --input x.npy --output y.npy
  expect_exit 0 "$TORCH_PY" -c 'import numpy as np; x = np.load("x.npy").astype(np.float64); y = np.load("y.npy"); want = x.mean(axis=(0, 2, 3), keepdims=True); assert np.abs(y - want).max() <= 1e-6, np.abs(y - want).max()'
}

run_tests "$@"
