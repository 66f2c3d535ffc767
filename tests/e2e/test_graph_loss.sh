#!/usr/bin/env bash
# ONNX models whose graph ends in their loss (docs/training.md, "Models whose graph ends in their
# loss"): SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss train exactly as the same model
# compiled with --loss sparse_categorical_crossentropy, a mean squared error written in ONNX ops
# and named by --loss-output trains as --loss mse does, evaluate reports the graph's loss, predict
# needs no labels, and what ipucc cannot train on is refused naming the output or node.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COMPARE_TENSORS=${COMPARE_TENSORS:-$SRC/build/tests/tools/compare_tensors}
LOSS_MODELS=$SRC/tests/e2e/loss_models.py
TUTORIAL_SIZES=784,256,128,64,32,10 # the tutorial MLP (the shared mlp.onnx)
BATCH=32
STEPS=20

need_onnx() { "$PYTHON" -c 'import onnx, numpy' 2>/dev/null || skip "no onnx Python package"; }
loss_model() { "$PYTHON" "$LOSS_MODELS" "$@" || fail "loss_models.py $* failed"; }

# same_weights GOT WANT TOLERANCE: every tensor of checkpoint WANT matches GOT's within TOLERANCE.
same_weights() {
  local got=$1 want=$2 tolerance=$3 file count=0
  for file in "$want"/*.npy; do
    expect_exit 0 "$COMPARE_TENSORS" "$got/${file##*/}" "$file" --rtol 0 --atol "$tolerance"
    count=$((count + 1))
  done
  ((count > 0)) || fail "$want holds no weights"
}

# train NAME: STEPS steps of synthetic data from the executable NAME.ipuexe's initial weights.
train() {
  expect_exit 0 "$IPURUN" train "$1.ipuexe" --data synthetic:$((BATCH * STEPS)) --steps-per-epoch $STEPS \
    --step-log "$1.steps.json" --save-weights "$1.weights" --progress none
}

test_softmax_cross_entropy_trains_as_sparse_categorical_crossentropy() {
  need_onnx
  loss_model mlp logits.onnx --loss none --sizes $TUTORIAL_SIZES
  loss_model mlp sce.onnx --loss sce --sizes $TUTORIAL_SIZES
  loss_model mlp nll.onnx --loss nll --sizes $TUTORIAL_SIZES
  # torch's export: an ignore_index no label can equal (ipurun refuses labels outside [0, C)).
  loss_model mlp torch.onnx --loss sce --ignore-index -100 --sizes $TUTORIAL_SIZES
  expect_exit 0 "$IPUCC" compile logits.onnx --loss sparse_categorical_crossentropy --batch-size $BATCH \
    --momentum 0.9 -o logits.ipuexe
  # No --loss: the graph's own. Same optimizer, same initial weights, same data order.
  expect_exit 0 "$IPUCC" compile sce.onnx --batch-size $BATCH --momentum 0.9 -o sce.ipuexe
  expect_exit 0 "$IPUCC" compile nll.onnx --batch-size $BATCH --momentum 0.9 -o nll.ipuexe
  expect_exit 0 "$IPUCC" compile torch.onnx --batch-size $BATCH --momentum 0.9 -o torch.ipuexe
  train logits
  train sce
  train nll
  train torch
  # Bit for bit: both train SparseCrossEntropy on the logits.
  same_weights sce.weights logits.weights 0
  same_weights nll.weights logits.weights 0
  same_weights torch.weights logits.weights 0
  expect_eq "$(json_get sce.steps.json 'd["losses"]')" "$(json_get logits.steps.json 'd["losses"]')" "step losses"
  expect_eq "$(json_get nll.steps.json 'd["losses"]')" "$(json_get logits.steps.json 'd["losses"]')" "step losses"
}

# An ONNX model ending in Softmax, as a model exported for inference ends, trained with a Keras
# cross-entropy (always from logits for ONNX): the loss reads the Softmax's input, as Keras's
# cross-entropies read a Softmax output's logits, and says so. It trains bit for bit as its
# logits twin; before, the loss applied a second softmax, and 300 steps on Fashion-MNIST reached
# 0.37 test accuracy against the twin's 0.69. Predictions stay probabilities. A Sigmoid output
# under binary_crossentropy reads its logits the same way; a JSON spec that says from_logits of a
# softmax output is warned, as Keras warns, and trained as it says.
test_a_softmax_output_trains_on_its_logits() {
  need_onnx
  local fashion=/usr/share/datasets/fashion-mnist m
  [[ -f $fashion/train-images-idx3-ubyte.gz ]] || fail "$fashion is missing: scripts/setup.sh installs dataset-fashion-mnist"
  for m in logits softmax; do
    loss_model mlp $m.onnx --loss ${m/logits/none} --sizes 784,64,10
    expect_exit 0 "$IPUCC" compile $m.onnx --loss sparse_categorical_crossentropy --batch-size $BATCH -o $m.ipuexe
    expect_exit 0 "$IPURUN" train $m.ipuexe --data "mnist:$fashion" --shuffle --seed 1 --steps-per-epoch 300 \
      --step-log $m.steps.json --save-weights $m.weights --progress none
    expect_exit 0 "$IPURUN" evaluate $m.ipuexe --data "mnist:$fashion:test" --weights $m.weights --json --progress none
    cp "$STDOUT" $m.eval.json
  done
  expect_exit 0 "$IPUCC" compile softmax.onnx --loss sparse_categorical_crossentropy --batch-size $BATCH --no-cache
  expect_stderr_contains "softmax.onnx: the output 'probabilities' is computed by Softmax node 'softmax': sparse_categorical_crossentropy reads that node's input, its logits"
  same_weights softmax.weights logits.weights 0
  expect_eq "$(json_get softmax.steps.json 'd["losses"]')" "$(json_get logits.steps.json 'd["losses"]')" "step losses"
  expect_eq "$(json_get softmax.eval.json 'repr(d["accuracy"])')" "$(json_get logits.eval.json 'repr(d["accuracy"])')" \
    "test accuracy of the twins"
  expect_json softmax.eval.json 'd["accuracy"] >= 0.6' "300 steps learn Fashion-MNIST"
  expect_exit 0 "$PYTHON" "$E2E_DATA" npy images.npy --shape $BATCH,28,28,1
  expect_exit 0 "$IPURUN" predict softmax.ipuexe --weights softmax.weights --input images.npy --output p.npy
  expect_exit 0 "$PYTHON" -c 'import numpy, sys; p = numpy.load("p.npy"); sys.exit(0 if abs(p.sum(1) - 1).max() < 1e-5 else 1)'
  # A logits output keeps its loss as it was, without a note.
  expect_exit 0 "$IPUCC" compile logits.onnx --loss sparse_categorical_crossentropy --batch-size $BATCH --no-cache
  expect_stderr_not_contains "reads that node's input"
  # Binary cross-entropy behind a Sigmoid.
  loss_model mlp sigmoid.onnx --loss sigmoid --sizes 784,64,10
  expect_exit 0 "$IPUCC" compile sigmoid.onnx --loss binary_crossentropy --batch-size $BATCH --no-cache
  expect_stderr_contains "the output 'probabilities' is computed by Sigmoid node 'sigmoid': binary_crossentropy reads that node's input"
  # The spec's choice stands, with Keras's warning.
  sed 's/"from_logits": false/"from_logits": true/' "$MODELS/mlp_sequential.json" > from_logits.json
  expect_exit 0 "$IPUCC" compile from_logits.json --batch-size $BATCH --no-cache
  expect_stderr_contains "takes the output 'dense5' as logits (from_logits true), but Softmax op"
  expect_stderr_contains "give the loss \"from_logits\": false"
}

# What torch.onnx.export writes for a module returning F.cross_entropy(logits, labels).
test_torch_exported_cross_entropy_trains() {
  "$PYTHON" -c 'import torch, onnx' 2>/dev/null || skip "no torch Python package"
  "$PYTHON" - torch.onnx <<'PYEOF' || fail "torch.onnx.export failed"
import sys, torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(784, 32), torch.nn.Linear(32, 10)
    def forward(self, x, labels):
        logits = self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))
        return torch.nn.functional.cross_entropy(logits, labels)
torch.manual_seed(0)
torch.onnx.export(Model(), (torch.zeros(4, 28, 28, 1), torch.zeros(4, dtype=torch.long)), sys.argv[1],
                  input_names=["input", "labels"], output_names=["loss"], opset_version=13,
                  dynamic_axes={"input": {0: "batch"}, "labels": {0: "batch"}})
PYEOF
  expect_exit 0 "$IPUCC" compile torch.onnx --batch-size $BATCH -o torch.ipuexe
  expect_exit 0 "$IPURUN" train torch.ipuexe --data synthetic:$((BATCH * STEPS)) --epochs 3 --progress none --json
  expect_json "$STDOUT" 'd["epochs"][2]["loss"] < d["epochs"][0]["loss"]' "the loss falls"
  expect_json "$STDOUT" '"accuracy" in d["epochs"][0]'
}

test_graph_loss_evaluates_its_loss_and_predicts_without_labels() {
  need_onnx
  loss_model mlp logits.onnx --loss none
  loss_model mlp sce.onnx --loss sce
  expect_exit 0 "$IPUCC" compile logits.onnx --loss sparse_categorical_crossentropy --batch-size 8 -o logits.ipuexe
  expect_exit 0 "$IPUCC" compile sce.onnx --batch-size 8 -o sce.ipuexe
  # 100 samples: the last step is padded, and the padded rows count for nothing.
  expect_exit 0 "$IPURUN" evaluate logits.ipuexe --data synthetic:100 --json
  local want
  want=$(json_get "$STDOUT" '[d["loss"], d["accuracy"]]')
  expect_exit 0 "$IPURUN" evaluate sce.ipuexe --data synthetic:100 --json
  expect_eq "$(json_get "$STDOUT" '[d["loss"], d["accuracy"]]')" "$want" "evaluate's loss and accuracy"
  # The prediction is the loss's scores, and features alone give it.
  e2e_data npy x.npy --dtype f4 --shape 12,28,28,1 --fill random
  expect_exit 0 "$IPURUN" predict sce.ipuexe --input x.npy --output got.npy --json
  expect_json "$STDOUT" 'd["outputs"][0]["name"] == "logits" and d["outputs"][0]["shape"] == [12, 10]'
  expect_exit 0 "$IPURUN" predict logits.ipuexe --input x.npy --output want.npy
  expect_exit 0 "$COMPARE_TENSORS" got.npy want.npy --rtol 0 --atol 0
}

test_loss_output_trains_as_mse() {
  need_onnx
  loss_model regression plain.onnx --in 8 --out 3 --kind none
  loss_model regression mse.onnx --in 8 --out 3 --kind mse
  e2e_data npy x.npy --dtype f4 --shape 320,8 --fill random --seed 3
  e2e_data npy t.npy --dtype f4 --shape 320,3 --fill random --seed 4
  expect_exit 0 "$IPUCC" compile plain.onnx --loss mse --batch-size 16 -o plain.ipuexe
  expect_exit 0 "$IPUCC" compile mse.onnx --loss-output loss --batch-size 16 -o mse.ipuexe
  local name
  for name in plain mse; do
    expect_exit 0 "$IPURUN" train $name.ipuexe --data npy:x.npy,t.npy --steps-per-epoch $STEPS \
      --save-weights $name.weights --progress none --json
  done
  # ReduceMean((prediction - targets)^2) and Keras's mse: the same sum, rounded in another order.
  same_weights mse.weights plain.weights 1e-6
  expect_exit 0 "$IPURUN" evaluate plain.ipuexe --weights mse.weights --data npy:x.npy,t.npy --json
  local want
  want=$(json_get "$STDOUT" 'd["loss"]')
  expect_exit 0 "$IPURUN" evaluate mse.ipuexe --weights mse.weights --data npy:x.npy,t.npy --json
  "$PYTHON" -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); assert abs(a - b) <= 1e-6 * b, (a, b)' \
    "$(json_get "$STDOUT" 'd["loss"]')" "$want" || fail "evaluate's loss differs from --loss mse's"
  expect_json "$STDOUT" '"accuracy" not in d' "no accuracy for a loss the graph computes"
  # predict reads x alone and writes the other output.
  expect_exit 0 "$IPURUN" predict mse.ipuexe --weights mse.weights --input x.npy --output p.npy --json
  expect_json "$STDOUT" 'd["outputs"][0]["name"] == "prediction" and d["outputs"][0]["shape"] == [320, 3]'
  # The graph's mean counts every row of a batch, so a padded last batch would change it.
  e2e_data npy x300.npy --dtype f4 --shape 300,8 --fill random --seed 3
  e2e_data npy t300.npy --dtype f4 --shape 300,3 --fill random --seed 4
  expect_error 3 "npy:x300.npy,t300.npy: 300 samples do not fill whole batches of 16" "evaluate a multiple of 16 samples" -- \
    "$IPURUN" evaluate mse.ipuexe --data npy:x300.npy,t300.npy
  expect_error 3 "npy:x300.npy,t300.npy: 300 samples do not fill whole batches of 16" -- \
    "$IPURUN" train mse.ipuexe --data npy:x.npy,t.npy --validation-data npy:x300.npy,t300.npy --progress none
  # Steps past the data add nothing: 320 samples in executions of 3 steps of 16.
  expect_exit 0 "$IPUCC" compile mse.onnx --loss-output loss --batch-size 16 --steps-per-execution 3 -o mse3.ipuexe
  expect_exit 0 "$IPURUN" evaluate mse3.ipuexe --weights mse.weights --data npy:x.npy,t.npy --json
  "$PYTHON" -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); assert abs(a - b) <= 1e-6 * b, (a, b)' \
    "$(json_get "$STDOUT" 'd["loss"]')" "$want" || fail "evaluate's loss over 3-step executions differs"
}

# Float labels may have any shape with the batch first: they travel flattened per sample.
test_loss_output_takes_labels_of_its_own_shape() {
  need_onnx
  loss_model regression column.onnx --in 8 --out 1 --kind mse
  loss_model regression flat.onnx --in 8 --out 1 --kind mse --flat
  e2e_data npy x.npy --dtype f4 --shape 320,8 --fill random --seed 3
  e2e_data npy t.npy --dtype f4 --shape 320 --fill random --seed 4
  "$PYTHON" -c 'import numpy as np; np.save("t1.npy", np.load("t.npy").reshape(-1, 1))'
  e2e_data npy t2.npy --dtype f4 --shape 320,2 --fill random --seed 4
  expect_exit 0 "$IPUCC" compile column.onnx --loss-output loss --batch-size 16 -o column.ipuexe
  expect_exit 0 "$IPUCC" compile flat.onnx --loss-output loss --batch-size 16 -o flat.ipuexe
  expect_exit 0 "$IPURUN" train column.ipuexe --data npy:x.npy,t1.npy --steps-per-epoch $STEPS \
    --save-weights column.weights --progress none
  expect_exit 0 "$IPURUN" train flat.ipuexe --data npy:x.npy,t.npy --steps-per-epoch $STEPS \
    --save-weights flat.weights --progress none --json
  # The same values in a [batch] and a [batch, 1] shape: the same sums.
  same_weights flat.weights column.weights 0
  expect_exit 0 "$IPURUN" predict flat.ipuexe --weights flat.weights --input x.npy --output p.npy --json
  expect_json "$STDOUT" 'd["outputs"][0]["shape"] == [320]'
  expect_error 3 "labels have shape [2] per sample, the executable's loss takes 1 per sample" -- \
    "$IPURUN" train flat.ipuexe --data npy:x.npy,t2.npy --progress none
}

# The labels arrive on the last pipeline stage, where the loss is computed, as added labels do.
test_graph_loss_trains_in_pipelines() {
  need_onnx
  loss_model mlp logits.onnx --loss none
  loss_model mlp sce.onnx --loss sce
  local common=(--batch-size 8 --gradient-accumulation 2 --momentum 0.9)
  expect_exit 0 "$IPUCC" compile logits.onnx --loss sparse_categorical_crossentropy --stage-assignment 0,0,0,1 \
    "${common[@]}" -o logits.ipuexe
  expect_exit 0 "$IPUCC" compile sce.onnx --stage-assignment 0,0,0,1,1 "${common[@]}" -o sce.ipuexe
  train logits
  train sce
  same_weights sce.weights logits.weights 0
  # A loss in ONNX ops on stage 1 of 2 trains as without stages (the same K).
  loss_model regression mse.onnx --in 8 --out 3 --kind mse
  e2e_data npy x.npy --dtype f4 --shape 320,8 --fill random --seed 3
  e2e_data npy t.npy --dtype f4 --shape 320,3 --fill random --seed 4
  expect_exit 0 "$IPUCC" compile mse.onnx --loss-output loss --stage-assignment 0,1,1,1 "${common[@]}" -o staged.ipuexe
  expect_exit 0 "$IPUCC" compile mse.onnx --loss-output loss "${common[@]}" -o flat.ipuexe
  local name
  for name in staged flat; do
    expect_exit 0 "$IPURUN" train $name.ipuexe --data npy:x.npy,t.npy --steps-per-epoch $STEPS \
      --save-weights $name.weights --progress none
  done
  same_weights staged.weights flat.weights 0
  expect_error 4 "mse.onnx: the loss 'loss': its labels input 'targets' is read on pipeline stage 0 (node 'error'); labels arrive on the last stage, 1" -- \
    "$IPUCC" compile mse.onnx --loss-output loss --stage-assignment 0,0,1,1 "${common[@]}"
  # The automatic split measures every node as a stage: one loss node is one, a loss in three ops
  # cannot be.
  expect_exit 0 "$IPUCC" compile sce.onnx --pipeline-stages 2 --batch-size 8 -o auto.ipuexe
  expect_error 4 "mse.onnx: the loss 'loss': its labels input 'targets' is read on pipeline stage 1" \
    "give --stage-assignment instead" -- "$IPUCC" compile mse.onnx --loss-output loss --pipeline-stages 2
}

test_loss_output_errors() {
  need_onnx
  loss_model regression mse.onnx --in 8 --out 3 --kind mse
  loss_model regression only.onnx --in 8 --out 3 --kind mse-only
  loss_model regression two.onnx --in 8 --out 3 --kind two-labels
  loss_model regression still.onnx --in 8 --out 3 --kind no-gradient
  expect_error 3 "mse.onnx: --loss-output 'nope': the graph has no output of that name (its outputs: 'prediction', 'loss')" -- \
    "$IPUCC" compile mse.onnx --loss-output nope
  expect_error 3 "mse.onnx: the loss 'prediction' must be a float scalar, it is f32[32,3]" -- \
    "$IPUCC" compile mse.onnx --loss-output prediction
  expect_error 3 "only.onnx: the loss 'loss': the graph has no other output to predict" -- \
    "$IPUCC" compile only.onnx --loss-output loss
  expect_error 3 "two.onnx: the loss 'loss' reads graph inputs 'targets', 'targets2' that the prediction 'prediction' does not" \
    "which is ambiguous" -- "$IPUCC" compile two.onnx --loss-output loss
  expect_error 3 "still.onnx: the loss 'loss' has no gradient path to any weight" -- \
    "$IPUCC" compile still.onnx --loss-output loss
  expect_error 2 "--loss and --loss-output both name the loss to train on" -- \
    "$IPUCC" compile mse.onnx --loss-output loss --loss mse
  expect_error 3 "--metrics: the loss 'loss' is computed by the graph" -- \
    "$IPUCC" compile mse.onnx --loss-output loss --metrics mse
  expect_error 2 "--loss-output NAME to train on a scalar output" -- "$IPUCC" compile mse.onnx
  expect_error 2 "--loss-output applies to ONNX models only" -- \
    "$IPUCC" compile "$MODELS/mlp_sequential.json" --loss-output loss
  # Inference runs the graph as it is: the loss is an output like any other.
  expect_exit 0 "$IPUCC" compile two.onnx --mode infer -o infer.ipuexe
}

test_cross_entropies_ipucc_does_not_train_are_refused() {
  need_onnx
  loss_model mlp sce.onnx --loss sce
  loss_model mlp sum.onnx --loss sce --reduction sum
  loss_model mlp none.onnx --loss nll --reduction none
  loss_model mlp weighted.onnx --loss sce --class-weights
  loss_model mlp ignoring.onnx --loss nll --ignore-index 3
  expect_error 2 "sce.onnx: the graph computes its loss ('loss') and trains on it: drop --loss" -- \
    "$IPUCC" compile sce.onnx --loss sparse_categorical_crossentropy
  expect_error 4 "sum.onnx: node 'xent': training on this loss needs reduction 'mean'" "got 'sum'" -- \
    "$IPUCC" compile sum.onnx
  expect_error 4 "none.onnx: node 'nll': training on this loss needs reduction 'mean'" "got 'none'" -- \
    "$IPUCC" compile none.onnx
  expect_error 4 "weighted.onnx: node 'xent': training on this loss takes no class weights" -- \
    "$IPUCC" compile weighted.onnx
  expect_error 4 "ignoring.onnx: node 'nll': training on this loss takes no ignore_index that is a class (3 of [0, 10))" -- \
    "$IPUCC" compile ignoring.onnx
  local model
  for model in sum none weighted ignoring; do
    expect_exit 0 "$IPUCC" compile $model.onnx --mode infer -o $model.ipuexe
  done
}

# The loss is keyed by the output it comes from: naming the output the model's loss node computes
# is the same executable as leaving it to the model.
test_loss_output_is_keyed() {
  need_onnx
  loss_model mlp sce.onnx --loss sce
  expect_exit 0 "$IPUCC" compile sce.onnx --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" compile sce.onnx --loss-output loss --json
  expect_eq "$(json_get "$STDOUT" 'd["key"]')" "$key" "the keys of the model's loss and --loss-output loss"
  expect_json "$STDOUT" 'd["cache"] == "hit"'
}

run_tests "$@"
