#!/usr/bin/env python3
"""Test-data helper for the e2e suites: Python standard library only (no numpy in CI).

    e2e_data.py npy PATH --dtype f4 --shape 300,28,28,1 [--fill random|const:V|mod:K|iota]
                         [--seed S] [--set I=V ...] [--trailing N]
        Writes an NPY v1.0 file (header padded to 64 bytes, like numpy). --fill mod:K gives
        element i the value i % K (labels); --set overrides flat element I; --trailing cuts
        (negative) or pads (positive) N bytes at the end of the data.
    e2e_data.py npy-json PATH
        Prints {"descr", "fortran_order", "shape", "header_len", "values"} of an NPY file,
        parsing the header by hand.
    e2e_data.py idx DIR --count N [--prefix train|t10k] [--gzip] [--set-label I=V]
        Writes MNIST-style IDX files DIR/PREFIX-images-idx3-ubyte and -labels-idx1-ubyte
        (.gz with --gzip): N images of 28x28 deterministic pixels, labels i % 10.
    e2e_data.py flip PATH OFFSET        XOR the byte at OFFSET with 0xff (negative: from the end)
    e2e_data.py poke PATH OFFSET HEX    overwrite bytes at OFFSET with the given hex string
    e2e_data.py compare GOT.npy WANT.npy
        Prints {"shape_equal", "max_abs", "max_rel", "rel_to_max"}: max_rel is the largest
        |got - want| / max(|want|, 1e-6), rel_to_max is max |got - want| / max |want| (the
        relative error of the reference checks: elementwise ratios blow up on outputs near zero).
    e2e_data.py gemm-onnx PATH --in K --out N [--seed S]
        Writes an ONNX model, protobuf encoded by hand: input "input" [batch, K] (batch a
        dim_param), one Gemm (transB=1) with FLOAT initializers "weight" [N, K] and "bias" [N]
        (seeded values in [-1, 1)), output "output". Prints {"weight": [...], "bias": [...]}.
    e2e_data.py gemm-ref INPUT.npy MODEL_JSON OUT.npy
        Writes the predictions input @ weight^T + bias (MODEL_JSON is what gemm-onnx printed).
    e2e_data.py reduce-sum-onnx PATH
        Writes an ONNX model (opset 13): inputs "x" FLOAT [2, 3] and "axes" INT64 [1], one
        ReduceSum (keepdims 1) of x over axes, output "y": axes is a shape parameter given as a
        graph input, as in ONNX's node tests.
    e2e_data.py ssa-onnx PATH two-writers|shadow-input|shadow-initializer
        Writes an ONNX model (opset 13) that onnx.checker refuses for breaking SSA form: input "x"
        FLOAT [N, 4], initializer "w" [4], output "y"; nodes "first" and "second" both write "y"
        (two-writers), or node "first" writes "x" (shadow-input) or "w" (shadow-initializer) before
        "second" computes y.
    e2e_data.py int64-pb PATH NAME V[,V...]
        Writes an ONNX TensorProto (.pb, like ONNX's test data) named NAME: int64 [count] values.
    e2e_data.py xent PRED.npy LABELS.npy
        Prints {"loss", "accuracy"}: mean cross-entropy of predicted probabilities vs labels.
"""
import argparse
import ast
import gzip
import json
import math
import os
import random
import struct
import sys

FORMATS = {"f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q",
           "u1": "B", "u2": "H", "u4": "I", "u8": "Q", "b1": "?"}


def write_npy(path, dtype, shape, values, trailing=0):
    descr = ("|" if dtype in ("i1", "u1", "b1") else "<") + dtype
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = FORMATS[dtype]
    if code in "fd":
        data = struct.pack("<%d%s" % (len(values), code), *values)
    else:
        data = struct.pack("<%d%s" % (len(values), code), *[int(v) for v in values])
    if trailing < 0:
        data = data[:trailing]
    elif trailing > 0:
        data += b"\0" * trailing
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data)


def read_npy(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY":
        raise SystemExit(path + ": not an npy file")
    major = raw[6]
    if major == 1:
        header_len = struct.unpack("<H", raw[8:10])[0]
        start = 10
    else:
        header_len = struct.unpack("<I", raw[8:12])[0]
        start = 12
    header = ast.literal_eval(raw[start:start + header_len].decode("latin1"))
    descr = header["descr"]
    body = raw[start + header_len:]
    code = FORMATS[descr[1:]]
    size = struct.calcsize(code)
    values = list(struct.unpack("<%d%s" % (len(body) // size, code), body[:len(body) // size * size]))
    return {"descr": descr, "fortran_order": header["fortran_order"], "shape": list(header["shape"]),
            "header_len": start + header_len, "data_bytes": len(body), "values": values}


def cmd_npy(a):
    shape = [int(d) for d in a.shape.split(",") if d != ""]
    count = 1
    for d in shape:
        count *= d
    rng = random.Random(a.seed)
    if a.fill == "random":
        values = [rng.random() for _ in range(count)]
    elif a.fill == "iota":
        values = list(range(count))
    elif a.fill.startswith("const:"):
        values = [float(a.fill[6:])] * count
    elif a.fill.startswith("mod:"):
        k = int(a.fill[4:])
        values = [i % k for i in range(count)]
    else:
        raise SystemExit("unknown --fill " + a.fill)
    for item in a.set or []:
        index, value = item.split("=")
        values[int(index)] = float(value) if a.dtype[0] == "f" else int(value)
    write_npy(a.path, a.dtype, shape, values, a.trailing)


def cmd_idx(a):
    os.makedirs(a.dir, exist_ok=True)
    n = a.count
    images = struct.pack(">IIII", 0x00000803, n, 28, 28) + bytes((i * 31 + j * 7) % 256 for i in range(n) for j in range(784))
    labels = [i % 10 for i in range(n)]
    for item in a.set_label or []:
        index, value = item.split("=")
        labels[int(index)] = int(value)
    labels_raw = struct.pack(">II", 0x00000801, n) + bytes(labels)
    for name, raw in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", labels_raw)):
        path = os.path.join(a.dir, "%s-%s" % (a.prefix, name))
        if a.gzip:
            with open(path + ".gz", "wb") as f:
                f.write(gzip.compress(raw))
        else:
            with open(path, "wb") as f:
                f.write(raw)


def cmd_flip(a):
    with open(a.path, "r+b") as f:
        f.seek(a.offset, os.SEEK_SET if a.offset >= 0 else os.SEEK_END)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))


def cmd_poke(a):
    with open(a.path, "r+b") as f:
        f.seek(a.offset)
        f.write(bytes.fromhex(a.hex))


def pb_varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def pb_int(field, n):
    return pb_varint(field << 3) + pb_varint(n)


def pb_bytes(field, data):
    data = data.encode() if isinstance(data, str) else data
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def onnx_value_info(name, dims):
    # ValueInfoProto{name, type: TypeProto{tensor_type{elem_type FLOAT, shape{dim...}}}}
    shape = b"".join(pb_bytes(1, pb_bytes(2, d) if isinstance(d, str) else pb_int(1, d)) for d in dims)
    return pb_bytes(1, name) + pb_bytes(2, pb_bytes(1, pb_int(1, 1) + pb_bytes(2, shape)))


def onnx_typed_value_info(name, elem_type, dims):
    # ValueInfoProto with any element type (1 FLOAT, 7 INT64)
    shape = b"".join(pb_bytes(1, pb_bytes(2, d) if isinstance(d, str) else pb_int(1, d)) for d in dims)
    return pb_bytes(1, name) + pb_bytes(2, pb_bytes(1, pb_int(1, elem_type) + pb_bytes(2, shape)))


def cmd_reduce_sum_onnx(a):
    node = pb_bytes(1, "x") + pb_bytes(1, "axes") + pb_bytes(2, "y") + pb_bytes(3, "sum") + pb_bytes(4, "ReduceSum")
    graph = (pb_bytes(1, node) + pb_bytes(2, "reduce_sum") +
             pb_bytes(11, onnx_typed_value_info("x", 1, [2, 3])) +
             pb_bytes(11, onnx_typed_value_info("axes", 7, [1])) +
             pb_bytes(12, onnx_typed_value_info("y", 1, ["r0", "r1"])))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 13))
    with open(a.path, "wb") as f:
        f.write(model)


def cmd_two_outputs_onnx(a):
    # y1 = Relu(x), y2 = Neg(x), the outputs named as given (names a file system would confuse).
    relu = pb_bytes(1, "x") + pb_bytes(2, a.first) + pb_bytes(3, "relu") + pb_bytes(4, "Relu")
    neg = pb_bytes(1, "x") + pb_bytes(2, a.second) + pb_bytes(3, "neg") + pb_bytes(4, "Neg")
    graph = (pb_bytes(1, relu) + pb_bytes(1, neg) + pb_bytes(2, "two_outputs") +
             pb_bytes(11, onnx_typed_value_info("x", 1, ["batch", 3])) +
             pb_bytes(12, onnx_typed_value_info(a.first, 1, ["batch", 3])) +
             pb_bytes(12, onnx_typed_value_info(a.second, 1, ["batch", 3])))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 13))
    with open(a.path, "wb") as f:
        f.write(model)


def cmd_momentum_onnx(a):
    # ONNX's own test_momentum model: one Momentum node of ai.onnx.preview.training, whose domain
    # is the only one it imports. NodeProto field 7 is the domain; OperatorSetIdProto{domain 1, version 2}.
    node = (pb_bytes(1, "r") + pb_bytes(1, "t") + pb_bytes(1, "x") + pb_bytes(1, "g") + pb_bytes(1, "v") +
            pb_bytes(2, "x_new") + pb_bytes(2, "v_new") + pb_bytes(3, "step") + pb_bytes(4, "Momentum") +
            pb_bytes(7, "ai.onnx.preview.training"))
    graph = pb_bytes(1, node) + pb_bytes(2, "momentum")
    for name, dims in (("r", []), ("t", []), ("x", [2]), ("g", [2]), ("v", [2])):
        graph += pb_bytes(11, onnx_value_info(name, dims))
    graph += pb_bytes(12, onnx_value_info("x_new", [2])) + pb_bytes(12, onnx_value_info("v_new", [2]))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_bytes(1, "ai.onnx.preview.training") + pb_int(2, 1))
    with open(a.path, "wb") as f:
        f.write(model)


def cmd_opset6_onnx(a):
    # An opset-6 model of the versions that broadcast explicitly, and its reference output:
    #   x [N,3,2] -Add-6(B [3], broadcast, axis 1)-> -Mul-6(s [1], broadcast)-> -Sum-6(itself)->
    #   -Flatten-1-> [N,6] -Gemm-6(W [6,4], C [4], broadcast)-> y [N,4]
    rng = random.Random(a.seed)
    rnd = lambda n: [struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1)))[0] for _ in range(n)]
    B, s, W, C = rnd(3), [2.0], rnd(24), rnd(4)

    def node(op, name, inputs, outputs, attrs=b""):
        return (b"".join(pb_bytes(1, i) for i in inputs) + b"".join(pb_bytes(2, o) for o in outputs) +
                pb_bytes(3, name) + pb_bytes(4, op) + attrs)

    def int_attr(name, v):  # AttributeProto{name, i, type INT}
        return pb_bytes(5, pb_bytes(1, name) + pb_int(3, v) + pb_int(20, 2))

    nodes = [node("Add", "add", ["x", "B"], ["a"], int_attr("broadcast", 1) + int_attr("axis", 1)),
             node("Mul", "mul", ["a", "s"], ["m"], int_attr("broadcast", 1)),
             node("Sum", "sum", ["m", "m"], ["t"]),
             node("Flatten", "flat", ["t"], ["f"]),
             node("Gemm", "fc", ["f", "W", "C"], ["y"], int_attr("broadcast", 1))]
    graph = b"".join(pb_bytes(1, n) for n in nodes) + pb_bytes(2, "opset6")
    for name, dims, values in (("B", [3], B), ("s", [1], s), ("W", [6, 4], W), ("C", [4], C)):
        graph += pb_bytes(5, onnx_float_initializer(name, dims, values))
    graph += pb_bytes(11, onnx_value_info("x", ["N", 3, 2])) + pb_bytes(12, onnx_value_info("y", ["N", 4]))
    model = pb_int(1, 3) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 6))
    with open(a.path, "wb") as f:
        f.write(model)
    x = read_npy(a.input)
    n = x["shape"][0]
    out = []
    for r in range(n):
        row = x["values"][r * 6:(r + 1) * 6]
        t = [2 * ((row[i] + B[i // 2]) * s[0]) for i in range(6)]
        out += [sum(t[k] * W[k * 4 + j] for k in range(6)) + C[j] for j in range(4)]
    write_npy(a.reference, "f4", [n, 4], out)


def onnx_node(op, name, inputs, outputs, attrs=b""):
    return (b"".join(pb_bytes(1, i) for i in inputs) + b"".join(pb_bytes(2, o) for o in outputs) +
            pb_bytes(3, name) + pb_bytes(4, op) + attrs)


def cmd_norm_prelu_onnx(a):
    # x [N,2,3] -InstanceNormalization(scale, B, epsilon 0.01)-> -PRelu(slope [2,1])-> y [N,2,3],
    # and its reference output.
    scale, bias, slope, eps = [1.5, 0.5], [0.25, -1.0], [0.1, -2.0], 0.01
    eps32 = struct.unpack("<f", struct.pack("<f", eps))[0]
    # AttributeProto{name, f (field 2, 32-bit), type FLOAT}
    epsilon = pb_bytes(5, pb_bytes(1, "epsilon") + pb_varint(2 << 3 | 5) + struct.pack("<f", eps) + pb_int(20, 1))
    nodes = [onnx_node("InstanceNormalization", "norm", ["x", "scale", "B"], ["n"], epsilon),
             onnx_node("PRelu", "act", ["n", "slope"], ["y"])]
    graph = b"".join(pb_bytes(1, n) for n in nodes) + pb_bytes(2, "norm_prelu")
    for name, dims, values in (("scale", [2], scale), ("B", [2], bias), ("slope", [2, 1], slope)):
        graph += pb_bytes(5, onnx_float_initializer(name, dims, values))
    graph += pb_bytes(11, onnx_value_info("x", ["N", 2, 3])) + pb_bytes(12, onnx_value_info("y", ["N", 2, 3]))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 17))
    with open(a.path, "wb") as f:
        f.write(model)
    x = read_npy(a.input)
    out = []
    for p in range(len(x["values"]) // 3):  # one (sample, channel) plane of 3 values
        c = p % 2
        v = x["values"][3 * p:3 * p + 3]
        mean = sum(v) / 3
        var = sum((t - mean) ** 2 for t in v) / 3
        for t in v:
            n = scale[c] * (t - mean) / math.sqrt(var + eps32) + bias[c]
            out.append(n if n >= 0 else slope[c] * n)
    write_npy(a.reference, "f4", x["shape"], out)


def cmd_softsign_onnx(a):
    # x [N,2,3] -Softsign-> y = x / (1 + |x|), and its reference output (docs/adding_an_op.md's
    # worked example; the shared ONNX node tests have none for it).
    graph = (pb_bytes(1, onnx_node("Softsign", "act", ["x"], ["y"])) + pb_bytes(2, "softsign") +
             pb_bytes(11, onnx_value_info("x", ["N", 2, 3])) + pb_bytes(12, onnx_value_info("y", ["N", 2, 3])))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 13))
    with open(a.path, "wb") as f:
        f.write(model)
    x = read_npy(a.input)
    write_npy(a.reference, "f4", x["shape"], [v / (1 + abs(v)) for v in x["values"]])


def cmd_ssa_onnx(a):
    first_output = {"two-writers": "y", "shadow-input": "x", "shadow-initializer": "w"}[a.case]
    nodes = [onnx_node("Relu", "first", ["x"], [first_output]), onnx_node("Add", "second", ["x", "w"], ["y"])]
    graph = (b"".join(pb_bytes(1, n) for n in nodes) + pb_bytes(2, "ssa") +
             pb_bytes(5, onnx_float_initializer("w", [4], [0.5, -0.5, 1.0, 2.0])) +
             pb_bytes(11, onnx_value_info("x", ["N", 4])) + pb_bytes(12, onnx_value_info("y", ["N", 4])))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 13))
    with open(a.path, "wb") as f:
        f.write(model)


def ints_attr(name, values):  # AttributeProto{name, ints, type INTS}
    return pb_bytes(5, pb_bytes(1, name) + b"".join(pb_int(8, v) for v in values) + pb_int(20, 7))


def cmd_conv_transpose_onnx(a):
    # x [N,4,3,2] -ConvTranspose(W [4,1,3,2], B [2], group 2, strides [2,1], dilations [1,2],
    # pads [1,0,0,1], output_padding [1,0])-> y [N,2,7,3], and its reference, by scattering every
    # input value times the kernel (ONNX's definition: output index = input·stride + tap·dilation − pad).
    rng = random.Random(a.seed)
    W = [struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1)))[0] for _ in range(4 * 1 * 3 * 2)]
    B = [0.5, -0.25]
    strides, dilations, pads, extra, group = [2, 1], [1, 2], [1, 0, 0, 1], [1, 0], 2
    attrs = (ints_attr("strides", strides) + ints_attr("dilations", dilations) + ints_attr("pads", pads) +
             ints_attr("output_padding", extra) + pb_bytes(5, pb_bytes(1, "group") + pb_int(3, group) + pb_int(20, 2)))
    graph = pb_bytes(1, onnx_node("ConvTranspose", "up", ["x", "W", "B"], ["y"], attrs)) + pb_bytes(2, "conv_transpose")
    graph += pb_bytes(5, onnx_float_initializer("W", [4, 1, 3, 2], W)) + pb_bytes(5, onnx_float_initializer("B", [2], B))
    graph += pb_bytes(11, onnx_value_info("x", ["N", 4, 3, 2])) + pb_bytes(12, onnx_value_info("y", ["N", 2, 7, 3]))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 17))
    with open(a.path, "wb") as f:
        f.write(model)
    x = read_npy(a.input)
    n_samples, H, Wd, OH, OW = x["shape"][0], 3, 2, 7, 3
    y = [0.0] * (n_samples * 2 * OH * OW)
    for n in range(n_samples):
        for c in range(2):
            for i in range(OH * OW):
                y[(n * 2 + c) * OH * OW + i] = B[c]
        for m in range(4):
            c = m // 2  # group m // 2 holds output channel c (one per group)
            for h in range(H):
                for w in range(Wd):
                    t = x["values"][((n * 4 + m) * H + h) * Wd + w]
                    for kh in range(3):
                        for kw in range(2):
                            i = h * strides[0] + kh * dilations[0] - pads[0]
                            j = w * strides[1] + kw * dilations[1] - pads[1]
                            if 0 <= i < OH and 0 <= j < OW:
                                y[((n * 2 + c) * OH + i) * OW + j] += t * W[(m * 3 + kh) * 2 + kw]
    write_npy(a.reference, "f4", [n_samples, 2, OH, OW], y)


def cmd_conv3d_onnx(a):
    # x [N,2,4,3,3] -Conv(W [3,2,2,2,2], B [3], strides [1,2,1], dilations [2,1,1],
    # pads [1,1,0,1,0,1])-> y [N,3,4,2,3], and its reference by the definition.
    rng = random.Random(a.seed)
    W = [struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1)))[0] for _ in range(3 * 2 * 8)]
    B = [0.5, -0.25, 0.125]
    strides, dilations, pads = [1, 2, 1], [2, 1, 1], [1, 1, 0, 1, 0, 1]
    attrs = ints_attr("strides", strides) + ints_attr("dilations", dilations) + ints_attr("pads", pads)
    graph = pb_bytes(1, onnx_node("Conv", "conv3d", ["x", "W", "B"], ["y"], attrs)) + pb_bytes(2, "conv3d")
    graph += pb_bytes(5, onnx_float_initializer("W", [3, 2, 2, 2, 2], W)) + pb_bytes(5, onnx_float_initializer("B", [3], B))
    graph += pb_bytes(11, onnx_value_info("x", ["N", 2, 4, 3, 3])) + pb_bytes(12, onnx_value_info("y", ["N", 3, 4, 2, 3]))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 17))
    with open(a.path, "wb") as f:
        f.write(model)
    x = read_npy(a.input)
    n_samples, (D, H, Wd), out = x["shape"][0], (4, 3, 3), (4, 2, 3)
    y = []
    for n in range(n_samples):
        for m in range(3):
            for od in range(out[0]):
                for oh in range(out[1]):
                    for ow in range(out[2]):
                        acc = B[m]
                        for c in range(2):
                            for kd in range(2):
                                for kh in range(2):
                                    for kw in range(2):
                                        d = od * strides[0] + kd * dilations[0] - pads[0]
                                        h = oh * strides[1] + kh * dilations[1] - pads[1]
                                        w = ow * strides[2] + kw * dilations[2] - pads[2]
                                        if 0 <= d < D and 0 <= h < H and 0 <= w < Wd:
                                            acc += (x["values"][(((n * 2 + c) * D + d) * H + h) * Wd + w] *
                                                    W[(((m * 2 + c) * 2 + kd) * 2 + kh) * 2 + kw])
                        y.append(acc)
    write_npy(a.reference, "f4", [n_samples, 3] + list(out), y)


def cmd_pool_onnx(a):
    # A 1-D or 2-D MaxPool or AveragePool over x [N, C, L] or [N, C, H, W] with the given window,
    # and its reference by ONNX's definition (count_include_pad 0: an average over the taps
    # inside the input).
    kernel, dil, stride, pads = ([int(v) for v in t.split(",")] for t in (a.kernel, a.dilations, a.strides, a.pads))
    attrs = (ints_attr("kernel_shape", kernel) + ints_attr("dilations", dil) + ints_attr("strides", stride) +
             ints_attr("pads", pads))
    x = read_npy(a.input)
    planes, dims = x["shape"][0] * x["shape"][1], x["shape"][2:]
    r = len(dims)
    if r == 1:  # as a 2-D pool of one row
        dims, kernel, dil, stride, pads = [1] + dims, [1] + kernel, [1] + dil, [1] + stride, [0, pads[0], 0, pads[1]]
    H, W = dims
    OH = (H + pads[0] + pads[2] - ((kernel[0] - 1) * dil[0] + 1)) // stride[0] + 1
    OW = (W + pads[1] + pads[3] - ((kernel[1] - 1) * dil[1] + 1)) // stride[1] + 1
    out_dims = [OW] if r == 1 else [OH, OW]
    graph = pb_bytes(1, onnx_node(a.op, "pool", ["x"], ["y"], attrs)) + pb_bytes(2, "pool")
    graph += pb_bytes(11, onnx_value_info("x", ["N"] + x["shape"][1:]))
    graph += pb_bytes(12, onnx_value_info("y", ["N", x["shape"][1]] + out_dims))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 19))
    with open(a.path, "wb") as f:
        f.write(model)
    if a.reference == "-":
        return
    y = []
    for plane in range(planes):
        for oh in range(OH):
            for ow in range(OW):
                taps = [x["values"][(plane * H + h) * W + w]
                        for h in (oh * stride[0] + kh * dil[0] - pads[0] for kh in range(kernel[0])) if 0 <= h < H
                        for w in (ow * stride[1] + kw * dil[1] - pads[1] for kw in range(kernel[1])) if 0 <= w < W]
                y.append(max(taps) if a.op == "MaxPool" else sum(taps) / len(taps))
    write_npy(a.reference, "f4", x["shape"][:2] + out_dims, y)


def cmd_layer_norm_onnx(a):
    # LayerNormalization over the last axis of x [N, R, C] (scale 2, bias 0.5, epsilon 1e-5), and
    # its reference: a ReduceMean chain whose input may be far larger than a tile.
    x = read_npy(a.input)
    C = x["shape"][-1]
    scale, bias = [2.0] * C, [0.5] * C
    epsilon = pb_bytes(5, pb_bytes(1, "epsilon") + pb_varint(2 << 3 | 5) + struct.pack("<f", 1e-5) + pb_int(20, 1))
    graph = pb_bytes(1, onnx_node("LayerNormalization", "norm", ["x", "scale", "bias"], ["y"], epsilon)) + pb_bytes(2, "ln")
    graph += pb_bytes(5, onnx_float_initializer("scale", [C], scale)) + pb_bytes(5, onnx_float_initializer("bias", [C], bias))
    graph += pb_bytes(11, onnx_value_info("x", ["N"] + x["shape"][1:])) + pb_bytes(12, onnx_value_info("y", ["N"] + x["shape"][1:]))
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 17))
    with open(a.path, "wb") as f:
        f.write(model)
    eps = struct.unpack("<f", struct.pack("<f", 1e-5))[0]
    y = []
    for r in range(len(x["values"]) // C):
        row = x["values"][r * C:(r + 1) * C]
        mean = sum(row) / C
        var = sum((v - mean) ** 2 for v in row) / C
        y += [2.0 * (v - mean) / math.sqrt(var + eps) + 0.5 for v in row]
    write_npy(a.reference, "f4", x["shape"], y)


def cmd_int64_pb(a):
    values = [int(v) for v in a.values.split(",")]
    # TensorProto{dims, data_type INT64, name, raw_data}
    tensor = pb_int(1, len(values)) + pb_int(2, 7) + pb_bytes(8, a.name) + pb_bytes(9, struct.pack("<%dq" % len(values), *values))
    with open(a.path, "wb") as f:
        f.write(tensor)


def cmd_float_pb(a):
    # A float32 .npy as an ONNX TensorProto, named only if --name is given (ONNX's test data may
    # leave tensors unnamed: they are then positional).
    x = read_npy(a.npy)
    tensor = (b"".join(pb_int(1, d) for d in x["shape"]) + pb_int(2, 1) + (pb_bytes(8, a.name) if a.name else b"") +
              pb_bytes(9, struct.pack("<%df" % len(x["values"]), *x["values"])))
    with open(a.path, "wb") as f:
        f.write(tensor)


def onnx_float_initializer(name, dims, values):
    # TensorProto{dims, data_type FLOAT, name, raw_data}
    return (b"".join(pb_int(1, d) for d in dims) + pb_int(2, 1) + pb_bytes(8, name) +
            pb_bytes(9, struct.pack("<%df" % len(values), *values)))


def cmd_gemm_onnx(a):
    rng = random.Random(a.seed)
    weight = [struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1)))[0] for _ in range(a.out * a.inp)]
    bias = [struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1)))[0] for _ in range(a.out)]
    # NodeProto{input, output, name, op_type, attribute{name "transB", i 1, type INT}}
    node = (pb_bytes(1, "input") + pb_bytes(1, "weight") + pb_bytes(1, "bias") + pb_bytes(2, "output") +
            pb_bytes(3, "fc") + pb_bytes(4, "Gemm") + pb_bytes(5, pb_bytes(1, "transB") + pb_int(3, 1) + pb_int(20, 2)))
    graph = (pb_bytes(1, node) + pb_bytes(2, "gemm") +
             pb_bytes(5, onnx_float_initializer("weight", [a.out, a.inp], weight)) +
             pb_bytes(5, onnx_float_initializer("bias", [a.out], bias)) +
             pb_bytes(11, onnx_value_info("input", [a.fixed_batch or "batch", a.inp])) +
             pb_bytes(12, onnx_value_info("output", [a.fixed_batch or "batch", a.out])))
    # ModelProto{ir_version 8, producer_name, graph, opset_import{domain "", version 13}}
    model = pb_int(1, 8) + pb_bytes(2, "e2e_data.py") + pb_bytes(7, graph) + pb_bytes(8, pb_int(2, 13))
    with open(a.path, "wb") as f:
        f.write(model)
    print(json.dumps({"weight": weight, "bias": bias, "in": a.inp, "out": a.out}))


def cmd_gemm_ref(a):
    x = read_npy(a.input)
    with open(a.model) as f:
        m = json.load(f)
    k, n = m["in"], m["out"]
    rows = len(x["values"]) // k
    values = []
    for r in range(rows):
        row = x["values"][r * k:(r + 1) * k]
        values += [sum(row[i] * m["weight"][j * k + i] for i in range(k)) + m["bias"][j] for j in range(n)]
    write_npy(a.out, "f4", [rows, n], values)


def cmd_xent(a):
    pred = read_npy(a.pred)
    labels = read_npy(a.labels)["values"]
    classes = pred["shape"][1]
    p = pred["values"]
    n = len(labels)
    loss = sum(-math.log(max(p[i * classes + labels[i]], 1e-30)) for i in range(n)) / n
    correct = sum(1 for i in range(n) if max(range(classes), key=lambda k: p[i * classes + k]) == labels[i])
    print(json.dumps({"loss": loss, "accuracy": correct / n}))


def cmd_compare(a):
    got, want = read_npy(a.got), read_npy(a.want)
    pairs = list(zip(got["values"], want["values"]))
    print(json.dumps({"shape_equal": got["shape"] == want["shape"],
                      "max_abs": max(abs(g - w) for g, w in pairs),
                      "max_rel": max(abs(g - w) / max(abs(w), 1e-6) for g, w in pairs),
                      "rel_to_max": max(abs(g - w) for g, w in pairs) / max(max(abs(w) for _, w in pairs), 1e-30)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("npy")
    p.add_argument("path")
    p.add_argument("--dtype", default="f4", choices=sorted(FORMATS))
    p.add_argument("--shape", required=True)
    p.add_argument("--fill", default="random")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--set", action="append")
    p.add_argument("--trailing", type=int, default=0)
    p.set_defaults(func=cmd_npy)
    p = sub.add_parser("npy-json")
    p.add_argument("path")
    p.set_defaults(func=lambda a: print(json.dumps(read_npy(a.path))))
    p = sub.add_parser("idx")
    p.add_argument("dir")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--prefix", default="train")
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--set-label", action="append")
    p.set_defaults(func=cmd_idx)
    p = sub.add_parser("gemm-onnx")
    p.add_argument("path")
    p.add_argument("--in", dest="inp", type=int, required=True)
    p.add_argument("--out", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fixed-batch", type=int, default=0, help="a fixed first dimension, as torch exports by default")
    p.set_defaults(func=cmd_gemm_onnx)
    p = sub.add_parser("gemm-ref")
    p.add_argument("input")
    p.add_argument("model")
    p.add_argument("out")
    p.set_defaults(func=cmd_gemm_ref)
    p = sub.add_parser("flip")
    p.add_argument("path")
    p.add_argument("offset", type=int)
    p.set_defaults(func=cmd_flip)
    p = sub.add_parser("poke")
    p.add_argument("path")
    p.add_argument("offset", type=int)
    p.add_argument("hex")
    p.set_defaults(func=cmd_poke)
    p = sub.add_parser("compare")
    p.add_argument("got")
    p.add_argument("want")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("reduce-sum-onnx")
    p.add_argument("path")
    p.set_defaults(func=cmd_reduce_sum_onnx)
    p = sub.add_parser("two-outputs-onnx")
    p.add_argument("path")
    p.add_argument("first")
    p.add_argument("second")
    p.set_defaults(func=cmd_two_outputs_onnx)
    p = sub.add_parser("momentum-onnx")
    p.add_argument("path")
    p.set_defaults(func=cmd_momentum_onnx)
    # Models built with their reference output: NAME-onnx MODEL INPUT.npy REFERENCE.npy [--seed S].
    for name, func in (("opset6", cmd_opset6_onnx), ("norm-prelu", cmd_norm_prelu_onnx),
                       ("conv-transpose", cmd_conv_transpose_onnx), ("conv3d", cmd_conv3d_onnx),
                       ("layer-norm", cmd_layer_norm_onnx), ("softsign", cmd_softsign_onnx)):
        p = sub.add_parser(name + "-onnx")
        p.add_argument("path")
        p.add_argument("input")
        p.add_argument("reference")
        p.add_argument("--seed", type=int, default=1)
        p.set_defaults(func=func)
    p = sub.add_parser("pool-onnx")
    p.add_argument("op", choices=["MaxPool", "AveragePool"])
    p.add_argument("path")
    p.add_argument("input")
    p.add_argument("reference", help="where to write the reference output; - for none")
    p.add_argument("--kernel", required=True)
    p.add_argument("--dilations", required=True)
    p.add_argument("--strides", required=True)
    p.add_argument("--pads", default="0,0,0,0")
    p.set_defaults(func=cmd_pool_onnx)
    p = sub.add_parser("ssa-onnx")
    p.add_argument("path")
    p.add_argument("case", choices=["two-writers", "shadow-input", "shadow-initializer"])
    p.set_defaults(func=cmd_ssa_onnx)
    p = sub.add_parser("int64-pb")
    p.add_argument("path")
    p.add_argument("name")
    p.add_argument("values")
    p.set_defaults(func=cmd_int64_pb)
    p = sub.add_parser("float-pb")
    p.add_argument("npy")
    p.add_argument("path")
    p.add_argument("--name")
    p.set_defaults(func=cmd_float_pb)
    p = sub.add_parser("xent")
    p.add_argument("pred")
    p.add_argument("labels")
    p.set_defaults(func=cmd_xent)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
