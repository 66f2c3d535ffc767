#!/usr/bin/env bash
# Keras convolution layers in the JSON graph spec: models/cnn_sequential.json (Conv2D,
# BatchNormalization, MaxPooling2D, AveragePooling2D, Flatten, Dense) trains on the synthetic set,
# its inference executable predicts, and Dropout is the identity at inference only.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CNN=$MODELS/cnn_sequential.json

test_cnn_spec_trains() {
  expect_exit 0 "$IPUCC" compile "$CNN" --batch-size 32 -o cnn.ipuexe
  # The synthetic labels are a random linear function of pixel noise: over a few thousand samples
  # no model leaves the ln(10) plateau quickly, so training shows by fitting 320 samples.
  expect_exit 0 "$IPURUN" train cnn.ipuexe --data synthetic:320 --epochs 40 --step-log steps.json --progress none --json
  "$PYTHON" - steps.json <<'PYEOF' || fail "the spec CNN's loss does not fall"
import json, sys
losses = json.load(open(sys.argv[1]))["losses"]
assert len(losses) == 400, len(losses)
first, last = sum(losses[:20]) / 20, sum(losses[-20:]) / 20
print("first 20 steps %.4f, last 20 steps %.4f" % (first, last))
assert last < first - 0.1, (first, last)
PYEOF
  # The trained weights predict with an inference executable of the same spec.
  expect_exit 0 "$IPURUN" train cnn.ipuexe --data synthetic:640 --save-weights w.ckpt --progress none
  expect_exit 0 "$IPUCC" compile "$CNN" --mode infer --batch-size 8 -o infer.ipuexe
  expect_exit 0 "$IPURUN" predict infer.ipuexe --data synthetic:16 --weights w.ckpt --output p.npy
  expect_file p.npy
}

# Dropout: the identity in --mode infer; refused, naming the layer, when training.
test_dropout_is_inference_only() {
  "$PYTHON" - "$CNN" <<'PYEOF'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["layers"].insert(6, {"name": "drop", "type": "Dropout", "rate": 0.25})
json.dump(spec, open("dropout.json", "w"))
PYEOF
  expect_exit 0 "$IPUCC" compile dropout.json --mode infer --batch-size 4 -o infer.ipuexe
  expect_error 3 "dropout.json: layer 'drop' (Dropout): Dropout is applied at inference only" -- \
    "$IPUCC" compile dropout.json --batch-size 4
}

run_tests "$@"
