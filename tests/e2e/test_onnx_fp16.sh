#!/usr/bin/env bash
# ONNX models with float16 values (docs/onnx.md, "Float16"): float16 inputs, initializers, a
# Constant and Casts import; every value the model declares float16 is stored FLOAT16 and rounded
# where it is written, matching a numpy float16 reference that rounds each op's output. Float16
# host files are <f2: predictions, inputs and --weights files round-trip bit for bit, and a float32
# input or weights file is rounded to nearest. Training such a model, bfloat16 and a malformed
# float16 initializer are refused with their documented exit codes.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SMALL=(--tiles-per-ipu 16)

# fp16.onnx: y = Cast16(Cast32((x·W + B)·c)·third), z = the float32 value Cast16 reads, with
# x [N,4], W [4,3], B [3] and the Constant c = 0.1 float16, and third = 1/3 a float32 initializer:
# float16 and float32 values in one model. y.onnx: the same with y as its only output. x.npy: 256
# float16 samples.
make_fp16_model() {
  "$PYTHON" - fp16.onnx x.npy <<'PY' || fail "cannot write the float16 model"
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(5)
W = rng.normal(0, 0.5, (4, 3)).astype(np.float16)
B = rng.normal(0, 0.5, (3,)).astype(np.float16)
c = numpy_helper.from_array(np.array(0.1, np.float16))
nodes = [
    helper.make_node("MatMul", ["x", "W"], ["m"], name="matmul"),
    helper.make_node("Add", ["m", "B"], ["a"], name="add"),
    helper.make_node("Constant", [], ["c"], name="c", value=c),
    helper.make_node("Mul", ["a", "c"], ["s"], name="scale"),
    helper.make_node("Cast", ["s"], ["s32"], name="to_float", to=TensorProto.FLOAT),
    helper.make_node("Mul", ["s32", "third"], ["z"], name="third_of"),
    helper.make_node("Cast", ["z"], ["y"], name="to_half", to=TensorProto.FLOAT16),
]
graph = helper.make_graph(
    nodes, "fp16", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["N", 3]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 3])],
    [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B"),
     numpy_helper.from_array(np.array([1 / 3], np.float32), "third")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
model.graph.output.pop()
onnx.save(model, "y.onnx")
np.save(sys.argv[2], rng.normal(0, 2, (256, 4)).astype(np.float16))
PY
}

# check_prediction MODEL X Y Z [WEIGHTS_DIR]: Y (float16) and Z (float32) against the reference
# computed from MODEL's initializers, or from those of the checkpoint WEIGHTS_DIR.
check_prediction() {
  "$PYTHON" - "$@" <<'PY' || fail "the prediction does not match the float16 reference"
import json, sys
import numpy as np
import onnx
from onnx import numpy_helper
model, x_path, y_path, z_path = sys.argv[1:5]
w = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
if len(sys.argv) > 5:
    ckpt = sys.argv[5]
    w.update({n: np.load(ckpt + "/" + f) for n, f in json.load(open(ckpt + "/index.json")).items()})
x, y, z = np.load(x_path), np.load(y_path), np.load(z_path)
assert y.dtype == np.float16 and z.dtype == np.float32, (y.dtype, z.dtype)
f32, f16 = np.float32, np.float16
# Each float16 op's output rounded to float16 (as ONNX Runtime's float16 CPU kernels compute in
# float and round); the products of binary16 values are exact in float32, the sums in float64.
m = (x.astype(np.float64) @ w["W"].astype(np.float64)).astype(f16)
a = (m.astype(f32) + w["B"].astype(f32)).astype(f16)
s = (a.astype(f32) * f32(f16(0.1))).astype(f16)
z_ref = s.astype(f32) * w["third"].astype(f32)[0]
y_ref = z_ref.astype(f16)
unrounded = ((x.astype(f32) @ w["W"].astype(f32) + w["B"].astype(f32)) * f32(f16(0.1)) * w["third"][0]).astype(f16)
print("y differs from the reference in %d of %d elements" % ((y != y_ref).sum(), y.size))
assert (y == y_ref).all() and (z == z_ref).all()
# Cast to FLOAT16 rounds to nearest even, as numpy's astype does.
assert (y == z.astype(f16)).all()
# The reference's rounding of m, a and s matters: the model really rounds them.
assert (unrounded != y_ref).mean() > 0.2
PY
}

test_a_float16_model_predicts_each_op_rounded() {
  make_fp16_model
  expect_exit 0 "$IPUCC" compile fp16.onnx --mode infer "${SMALL[@]}" -o fp16.ipuexe
  expect_exit 0 "$IPURUN" predict fp16.ipuexe --input x=x.npy --output-dir out --json
  expect_json "$STDOUT" '[o["dtype"] for o in d["outputs"]] == ["f2", "f4"]' "output dtypes"
  check_prediction fp16.onnx x.npy out/y.npy out/z.npy
  # The .npy header says <f2 and <f4; a .pb output is a FLOAT16 TensorProto (data type 10).
  "$PYTHON" -c 'import sys; assert b"<f2" in open("out/y.npy", "rb").read(128)' || fail "y.npy is not <f2"
  "$PYTHON" -c 'import sys; assert b"<f4" in open("out/z.npy", "rb").read(128)' || fail "z.npy is not <f4"
  expect_exit 0 "$IPURUN" predict y.onnx --input x=x.npy "${SMALL[@]}" --output y.pb
  "$PYTHON" - y.pb out/y.npy <<'PY' || fail "the .pb output is not the float16 prediction"
import sys
import numpy as np
import onnx
from onnx import numpy_helper
t = onnx.load_tensor(sys.argv[1])
assert t.data_type == onnx.TensorProto.FLOAT16
assert (numpy_helper.to_array(t).view(np.uint16) == np.load(sys.argv[2]).view(np.uint16)).all()
PY
}

test_float16_inputs_round_trip_bit_for_bit() {
  # id.onnx: y = Abs(Neg(x)) over every float16 bit pattern but the NaNs (whose payloads float32
  # need not keep), -0 to +0 (as Abs makes it).
  "$PYTHON" - <<'PY' || fail "cannot write id.onnx"
import numpy as np
import onnx
from onnx import TensorProto, helper
bits = np.arange(0, 0x7c01, dtype=np.uint16)  # +0 .. +inf
np.save("all.npy", bits.view(np.float16).reshape(-1, 1))
nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Abs", ["n"], ["y"])]
graph = helper.make_graph(nodes, "id", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["N", 1])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "id.onnx")
PY
  expect_exit 0 "$IPURUN" predict id.onnx "${SMALL[@]}" --input x=all.npy --output y.npy
  cmp all.npy y.npy || fail "float16 values did not come back bit for bit"
}

test_float32_inputs_round_to_the_float16_input() {
  make_fp16_model
  expect_exit 0 "$IPUCC" compile fp16.onnx --mode infer "${SMALL[@]}" -o fp16.ipuexe
  # x32 holds x plus a third of a float16 step: not binary16 values; they round back to x.
  "$PYTHON" - <<'PY' || fail "cannot write x32.npy"
import numpy as np
x = np.load("x.npy")
step = np.spacing(np.abs(x)).astype(np.float32)
np.save("x32.npy", x.astype(np.float32) + step / 3)
PY
  expect_exit 0 "$IPURUN" predict fp16.ipuexe --input x=x.npy --output-dir out16
  expect_exit 0 "$IPURUN" predict fp16.ipuexe --input x=x32.npy --output-dir out32
  cmp out16/y.npy out32/y.npy || fail "a float32 input did not round to the float16 one"
  cmp out16/z.npy out32/z.npy || fail "a float32 input did not round to the float16 one (z)"
}

test_float16_weights_files_are_read_bit_for_bit() {
  make_fp16_model
  expect_exit 0 "$IPUCC" compile fp16.onnx --mode infer "${SMALL[@]}" -o fp16.ipuexe
  # A checkpoint with other weights: W and B <f2 (subnormals and the largest binary16 included),
  # third <f4; and the same W and B as <f4 holding the same values.
  "$PYTHON" - <<'PY' || fail "cannot write the checkpoints"
import json, os
import numpy as np
rng = np.random.default_rng(11)
W = rng.normal(0, 0.3, (4, 3)).astype(np.float16)
W[0, 0], W[0, 1] = np.float16(2.0**-24), np.float16(-3 * 2.0**-20)
B = rng.normal(0, 0.3, (3,)).astype(np.float16)
for name, dtype in (("ck16", np.float16), ("ck32", np.float32)):
    os.mkdir(name)
    np.save(name + "/W.npy", W.astype(dtype))
    np.save(name + "/B.npy", B.astype(dtype))
    np.save(name + "/third.npy", np.array([0.25], np.float32))
    json.dump({"W": "W.npy", "B": "B.npy", "third": "third.npy"}, open(name + "/index.json", "w"))
PY
  expect_exit 0 "$IPURUN" predict fp16.ipuexe --weights ck16 --input x=x.npy --output-dir out16
  check_prediction fp16.onnx x.npy out16/y.npy out16/z.npy ck16
  expect_exit 0 "$IPURUN" predict fp16.ipuexe --weights ck32 --input x=x.npy --output-dir out32
  cmp out16/y.npy out32/y.npy || fail "<f4 weights holding binary16 values predict otherwise than <f2 ones"
}

test_training_and_unsupported_types_are_refused() {
  make_fp16_model
  expect_error 4 "fp16.onnx: value 'x' is FLOAT16: models with float16 values compile for inference only (--mode infer)" -- \
    "$IPUCC" compile fp16.onnx --loss mse "${SMALL[@]}"
  "$PYTHON" - <<'PY' || fail "cannot write the bad models"
import onnx
from onnx import TensorProto, helper
m = onnx.load("fp16.onnx")
# W holds 11 bytes where its dims [4,3] need 12 values of 2 bytes.
for t in m.graph.initializer:
    if t.name == "W":
        t.raw_data = t.raw_data[:11]
onnx.save(m, "short.onnx")
m = onnx.load("fp16.onnx")
for t in m.graph.initializer:
    if t.name == "B":
        t.data_type = TensorProto.BFLOAT16
onnx.save(m, "bf16.onnx")
PY
  expect_error 3 "short.onnx: initializer 'W': holds 5 values, its dims need 12" -- \
    "$IPUCC" compile short.onnx --mode infer "${SMALL[@]}"
  expect_error 4 "bf16.onnx: initializer 'B': element type BFLOAT16 (16) is not supported" -- \
    "$IPUCC" compile bf16.onnx --mode infer "${SMALL[@]}"
}

run_tests "$@"
