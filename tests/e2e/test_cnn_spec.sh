#!/usr/bin/env bash
# Keras convolution layers in the JSON graph spec: models/cnn_sequential.json (Conv2D,
# BatchNormalization, MaxPooling2D, AveragePooling2D, Flatten, Dense) trains on the synthetic set,
# its inference executable predicts, Dropout is the identity at inference only, and Add and
# Concatenate of convolution outputs keep Keras's channels-last meaning.
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

# Merges of Conv2D outputs run on the channels-first values inside; what a user sees must be
# Keras's channels-last result. With the same convolution (same layer index, so same seed), the
# flattened output of Concatenate([c, c]) on the channel axis is each pixel's channels twice, on
# the height axis the whole map twice, and Add([c, c]) is twice the map.
test_merges_of_convolutions_keep_keras_order() {
  local merge
  write_spec() {  # NAME MERGE_NODE_JSON (empty: no merge)
    "$PYTHON" - "$1" "$2" <<'PYEOF'
import json, sys
name, merge = sys.argv[1], sys.argv[2]
nodes = [{"name": "c", "type": "Conv2D", "inputs": ["image"], "filters": 3, "kernel_size": 1}]
if merge:
    nodes.append(dict(json.loads(merge), name="m", inputs=["c", "c"]))
nodes.append({"name": "f", "type": "Flatten", "inputs": [nodes[-1]["name"]]})
json.dump({"name": name, "type": "functional", "inputs": [{"name": "image", "shape": [4, 5, 2]}],
           "nodes": nodes, "outputs": ["f"]}, open(name + ".json", "w"))
PYEOF
  }
  write_spec plain ''
  write_spec channels '{"type": "Concatenate"}'
  write_spec rows '{"type": "Concatenate", "axis": 1}'
  write_spec sum '{"type": "Add"}'
  e2e_data npy x.npy --shape 2,4,5,2 --fill random
  for merge in plain channels rows sum; do
    expect_exit 0 "$IPUCC" compile $merge.json --mode infer --batch-size 2 --no-cache -o $merge.ipuexe
    expect_exit 0 "$IPURUN" predict $merge.ipuexe --input x.npy --output $merge.npy
  done
  "$PYTHON" - <<'PYEOF' || fail "merged outputs are not Keras's channels-last results"
import struct
def load(path):
    data = open(path, "rb").read()
    header = 10 + struct.unpack("<H", data[8:10])[0]
    values = struct.unpack("<%df" % ((len(data) - header) // 4), data[header:])
    n = len(values) // 2
    return [list(values[:n]), list(values[n:])]
plain, channels, rows, summed = (load(m + ".npy") for m in ("plain", "channels", "rows", "sum"))
for s in range(2):
    c = plain[s]
    pixels = [c[i:i + 3] for i in range(0, len(c), 3)]
    assert channels[s] == [v for p in pixels for v in p + p], "Concatenate on channels"
    assert rows[s] == c + c, "Concatenate on rows"
    assert summed[s] == [2 * v for v in c], "Add"
PYEOF
}

run_tests "$@"
