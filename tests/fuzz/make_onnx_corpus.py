#!/usr/bin/python3
"""Writes the seed corpus of fuzz_onnx_import: small ONNX models covering every op the importer
knows, PopART stage attributes, constants and a dynamic batch. Needs Debian's python3-onnx and
numpy (scripts/setup-peers.sh):  /usr/bin/python3 tests/fuzz/make_onnx_corpus.py"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)


def weights(name, *shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def save(name, nodes, inits, in_shape, out_name="y", opset=13):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + in_shape)],
                              [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


save("mlp", [helper.make_node("Flatten", ["x"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "W", "b"], ["g"], name="fc", transB=1),
             helper.make_node("Relu", ["g"], ["h"], name="relu"),
             helper.make_node("MatMul", ["h", "W2"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b2"], ["a"], name="add"),
             helper.make_node("Softmax", ["a"], ["y"], name="sm")],
     [weights("W", 4, 6), weights("b", 4), weights("W2", 4, 3), weights("b2", 3)], [2, 3])
save("staged", [helper.make_node("Gemm", ["x", "W"], ["g"], name="fc", __pipeline_stage=0, __ipu_number=0),
                helper.make_node("Tanh", ["g"], ["t"], name="tanh", __pipeline_stage=1, __ipu_number=1),
                helper.make_node("Sigmoid", ["t"], ["y"], name="sig", __pipeline_stage=1, __ipu_number=1)],
     [weights("W", 5, 2)], [5])
save("reshape", [helper.make_node("Constant", [], ["shape"], name="c",
                                  value=numpy_helper.from_array(np.array([0, -1], np.int64))),
                 helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
                 helper.make_node("Identity", ["r"], ["i"], name="id"),
                 helper.make_node("Dropout", ["i"], ["y"], name="drop")],
     [], [2, 2, 2], opset=14)
