#!/usr/bin/env bash
# ipucc compile --precision fp16: the tutorial MLP predicts in IEEE half (each op's output rounded
# to binary16, matching a numpy reference that rounds the same way), on half the tile memory,
# keyed apart from fp32; ipurun --stochastic-rounding is reproducible per seed. Training in fp16
# and mixed precision: test_mixed_precision.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TUTORIAL=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)
QUIET=(--progress none)

# trained_weights: a checkpoint of the tutorial MLP trained in fp32 (ckpt/), and 200 samples (x.npy).
trained_weights() {
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" -o train.ipuexe
  expect_exit 0 "$IPURUN" train train.ipuexe --data synthetic:1024 --save-weights ckpt "${QUIET[@]}"
  e2e_data npy x.npy --shape 200,28,28,1 --fill random --seed 7
}

predict_with() { # OUT PRECISION [ipurun flags...]
  local out=$1 precision=$2
  shift 2
  expect_exit 0 "$IPURUN" predict "$TUTORIAL" "${SMALL[@]}" --precision "$precision" --data npy:x.npy \
    --weights ckpt --output "$out" "${QUIET[@]}" "$@"
}

# The reference: every layer's output (x, the fused Dense+Relu, the logits, the softmax) rounded
# to np.float16, from float16 weights, summed in float64. The device sums in float32 in another
# order, so a value within float32 rounding of a binary16 rounding boundary may land on the other
# side: the fp16 prediction must be within one fp16 ulp of the reference everywhere and equal to
# it in at least 99 % of the elements. The fp32 prediction is in no element a binary16 rounding
# of the reference, so the rounding really happens.
test_fp16_predict_matches_a_float16_reference() {
  trained_weights
  predict_with p16.npy fp16
  predict_with p32.npy fp32
  "$PYTHON" - ckpt x.npy p16.npy p32.npy <<'PY' || fail "the fp16 prediction does not match the float16 reference"
import json, sys
import numpy as np
ckpt, x_path, p16_path, p32_path = sys.argv[1:5]
index = json.load(open(ckpt + "/index.json"))
w = {name: np.load(ckpt + "/" + file) for name, file in index.items()}
half = lambda a: a.astype(np.float16).astype(np.float32)
h = half(np.load(x_path).reshape(-1, 784))
for i in range(1, 6):
    z = half(h.astype(np.float64) @ half(w["dense%d/kernel" % i]) + half(w["dense%d/bias" % i]))
    h = half(np.maximum(z, 0)) if i < 5 else z
e = np.exp(h.astype(np.float64) - h.max(axis=1, keepdims=True))
ref = half(e / e.sum(axis=1, keepdims=True))
p16, p32 = np.load(p16_path), np.load(p32_path)
# FLOAT16 predictions come as float16 (<f2), fp32 ones as float32.
assert p16.dtype == np.float16 and p32.dtype == np.float32 and p16.shape == ref.shape == (200, 10)
p16 = p16.astype(np.float32)
ulp = np.spacing(np.maximum(np.abs(ref), 2.0**-14).astype(np.float16)).astype(np.float32)
err = np.abs(p16 - ref) / ulp
print("fp16 vs reference: max %.2f ulp, %.2f %% of elements differ" % (err.max(), 100 * (p16 != ref).mean()))
assert err.max() <= 1.0, err.max()
assert (p16 == ref).mean() >= 0.99, (p16 == ref).mean()
assert (p32 != ref).all(), "fp32 predictions equal the float16 reference somewhere"
assert (p32 != p16).mean() > 0.99
PY
}

# The CNN (Conv, BatchNorm, pools, Dense, softmax) predicts in fp16 too: binary16 values, close to
# but not equal to its fp32 predictions.
test_cnn_predicts_in_fp16() {
  expect_exit 0 "$IPUCC" compile "$MODELS/cnn_sequential.json" "${SMALL[@]}" -o cnn.ipuexe
  expect_exit 0 "$IPURUN" train cnn.ipuexe --data synthetic:256 --save-weights ckpt "${QUIET[@]}"
  e2e_data npy x.npy --shape 64,28,28,1 --fill random --seed 3
  local p
  for p in fp32 fp16; do
    expect_exit 0 "$IPURUN" predict "$MODELS/cnn_sequential.json" "${SMALL[@]}" --precision "$p" --data npy:x.npy \
      --weights ckpt --output "$p.npy" "${QUIET[@]}"
  done
  "$PYTHON" - fp16.npy fp32.npy <<'PY' || fail "the CNN's fp16 predictions are not binary16 values near its fp32 ones"
import sys
import numpy as np
h, f = np.load(sys.argv[1]), np.load(sys.argv[2])
assert h.dtype == np.float16 and f.dtype == np.float32, (h.dtype, f.dtype)
assert (h != f).mean() > 0.9 and np.abs(h - f).max() < 0.02, np.abs(h - f).max()
PY
}

test_fp16_halves_tile_memory_and_is_keyed_apart() {
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --mode infer --json -o f32.ipuexe
  cp "$STDOUT" f32.json
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --mode infer --precision fp16 --json -o f16.ipuexe
  cp "$STDOUT" f16.json
  expect_json f16.json 'd["cache"] == "miss" and d["key"] != json.load(open("f32.json"))["key"]' "fp16 has its own key"
  local f32_peak f32_total f32_cycles
  f32_peak=$(json_get f32.json 'd["estimates"]["peak_tile_bytes"]')
  f32_total=$(json_get f32.json 'd["estimates"]["total_bytes"]')
  f32_cycles=$(json_get f32.json 'd["estimates"]["cycles_per_step"]["predict"]')
  expect_json f16.json "0.45 < d['estimates']['peak_tile_bytes'] / $f32_peak < 0.6" "peak tile bytes about halve"
  expect_json f16.json "0.45 < d['estimates']['total_bytes'] / $f32_total < 0.6" "planned bytes about halve"
  expect_json f16.json "d['estimates']['cycles_per_step']['predict'] < 0.75 * $f32_cycles" "fp16 steps are faster"
  # The same options again: a hit on the fp16 entry.
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --mode infer --precision fp16 --json
  expect_json "$STDOUT" 'd["cache"] == "hit" and d["key"] == json.load(open("f16.json"))["key"]'
}

test_stochastic_rounding_is_reproducible_per_seed() {
  trained_weights
  predict_with nearest.npy fp16
  predict_with s1.npy fp16 --stochastic-rounding --rounding-seed 1
  predict_with s1_again.npy fp16 --stochastic-rounding --rounding-seed 1 --threads 1
  predict_with s2.npy fp16 --stochastic-rounding --rounding-seed 2
  cmp -s s1.npy s1_again.npy || fail "the same seed gave different predictions (threads 1 vs all)"
  ! cmp -s s1.npy s2.npy || fail "seeds 1 and 2 gave the same predictions"
  ! cmp -s s1.npy nearest.npy || fail "stochastic rounding gave the nearest-rounded predictions"
  "$PYTHON" - s1.npy nearest.npy <<'PY' || fail "stochastic predictions are not binary16 values near the nearest-rounded ones"
import sys
import numpy as np
s, n = np.load(sys.argv[1]), np.load(sys.argv[2])
assert (s.astype(np.float16).astype(np.float32) == s).all()
assert np.abs(s - n).max() < 0.05, np.abs(s - n).max()
PY
}

# Integers stay exact: binary16 holds them only up to 2048, so an ONNX integer value (token ids)
# and the indices the importer makes stay FLOAT32 in an fp16 program.
test_integer_values_stay_exact_in_fp16() {
  "$PYTHON" -c 'import onnx' 2>/dev/null || skip "no onnx Python package"
  "$PYTHON" - <<'PY' || fail "could not write the model"
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
table = np.arange(10000, dtype=np.float32).reshape(5000, 2) / 8
# Pad (edge) gathers rows 0, 0, 0, 0, 1, ..., 4999 of the table: indices past 2048.
nodes = [helper.make_node("Pad", ["table", "pads"], ["padded"], name="pad", mode="edge"),
         helper.make_node("Gather", ["padded", "ids"], ["out"], name="lookup", axis=0)]
graph = helper.make_graph(
    nodes, "ids", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 3])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3, 2])],
    [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([3, 0, 0, 0], np.int64), "pads")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "ids.onnx")
np.save("ids.npy", np.array([[4097, 2049, 3], [5002, 2051, 0]], np.int64))
PY
  expect_exit 0 "$IPURUN" predict ids.onnx --precision fp16 --batch-size 2 --input ids=ids.npy --output out.npy
  "$PYTHON" - <<'PY' || fail "the fp16 lookup read other rows than the ids name"
import numpy as np
table = (np.arange(10000, dtype=np.float32).reshape(5000, 2) / 8).astype(np.float16)
want = np.pad(table, [(3, 0), (0, 0)], mode="edge")[np.load("ids.npy")]
got = np.load("out.npy")
assert got.dtype == np.float16 and np.array_equal(got, want), np.argwhere(got != want)[:5]
PY
}

test_unknown_precisions_are_refused() {
  expect_error 2 "--precision" -- "$IPUCC" compile "$TUTORIAL" --precision bf16
  expect_error 2 "--rounding-seed" -- "$IPURUN" predict "$TUTORIAL" --data synthetic:10 --rounding-seed 3
}

run_tests "$@"
