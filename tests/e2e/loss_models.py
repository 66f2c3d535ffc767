#!/usr/bin/env python3
"""ONNX models whose graph computes its loss, for tests/e2e/test_graph_loss.sh (needs the onnx
package and numpy: Debian's python3-onnx, run with /usr/bin/python3).

    loss_models.py mlp PATH --loss none|sce|nll [--sizes 784,32,10] [--reduction mean|sum|none]
                   [--class-weights] [--ignore-index I] [--seed S]
        The tutorial MLP: input "input" [batch, 28, 28, 1], Flatten, then a Gemm (transB=1) per
        pair of --sizes with Relu between them, giving "logits" [batch, C]. With --loss sce it
        ends in SoftmaxCrossEntropyLoss(logits, "labels" int64 [batch]) -> "loss"; with nll in
        LogSoftmax(axis 1) -> "log_probs", NegativeLogLikelihoodLoss(log_probs, labels) -> "loss";
        with none it returns the logits; with softmax it returns Softmax(axis 1) of them,
        "probabilities", and with sigmoid their Sigmoid, "probabilities" (a model trained with a
        Keras loss, as a model exported for inference ends). Weights are seeded, so equal seeds
        and sizes give equal initial weights whatever --loss is.
    loss_models.py regression PATH --in K --out N --kind none|mse|mse-only|two-labels|
                   no-gradient [--flat] [--seed S]
        input "x" [batch, K], one Gemm to "prediction" [batch, N]. none returns the prediction;
        mse also "loss" = ReduceMean((prediction - y)^2) over every element, y "targets"
        [batch, N]; mse-only returns only the loss; two-labels a loss reading "targets" and
        "targets2"; no-gradient a loss of the targets alone, ReduceMean(targets^2). --flat
        (with --out 1) reshapes the prediction to [batch], and the targets are [batch] too.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def gemm_layers(nodes, inits, rng, first, sizes):
    x = first
    for i in range(len(sizes) - 1):
        w = (rng.standard_normal((sizes[i + 1], sizes[i])) * np.sqrt(2.0 / sizes[i])).astype(np.float32)
        b = (rng.standard_normal(sizes[i + 1]) * 0.01).astype(np.float32)
        inits += [numpy_helper.from_array(w, "fc%d.weight" % (i + 1)), numpy_helper.from_array(b, "fc%d.bias" % (i + 1))]
        last = i == len(sizes) - 2
        out = "logits" if last else "fc%d" % (i + 1)
        nodes.append(helper.make_node("Gemm", [x, "fc%d.weight" % (i + 1), "fc%d.bias" % (i + 1)], [out],
                                      name="fc%d" % (i + 1), transB=1))
        if not last:
            nodes.append(helper.make_node("Relu", [out], ["relu%d" % (i + 1)], name="relu%d" % (i + 1)))
            out = "relu%d" % (i + 1)
        x = out
    return x


def save(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "loss_models", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="loss_models.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def cmd_mlp(a):
    rng = np.random.default_rng(a.seed)
    sizes = [int(s) for s in a.sizes.split(",")]
    nodes = [helper.make_node("Flatten", ["input"], ["flat"], name="flatten", axis=1)]
    inits = []
    logits = gemm_layers(nodes, inits, rng, "flat", sizes)
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 28, 28, 1])]
    if a.loss in ("none", "softmax", "sigmoid"):
        output = logits
        if a.loss != "none":
            output = "probabilities"
            squash = {"axis": 1} if a.loss == "softmax" else {}
            nodes.append(helper.make_node(a.loss.capitalize(), [logits], [output], name=a.loss, **squash))
        save(a.path, nodes, inputs, [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", sizes[-1]])], inits)
        return
    inputs.append(helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch"]))
    attrs = {"reduction": a.reduction}
    if a.ignore_index is not None:
        attrs["ignore_index"] = a.ignore_index
    loss_inputs = [logits, "labels"]
    if a.class_weights:
        inits.append(numpy_helper.from_array(np.linspace(0.5, 1.5, sizes[-1]).astype(np.float32), "class_weights"))
        loss_inputs.append("class_weights")
    if a.loss == "sce":
        nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", loss_inputs, ["loss"], name="xent", **attrs))
    else:
        nodes.append(helper.make_node("LogSoftmax", [logits], ["log_probs"], name="log_softmax", axis=1))
        loss_inputs[0] = "log_probs"
        nodes.append(helper.make_node("NegativeLogLikelihoodLoss", loss_inputs, ["loss"], name="nll", **attrs))
    loss_shape = ["batch"] if a.reduction == "none" else []
    save(a.path, nodes, inputs, [helper.make_tensor_value_info("loss", TensorProto.FLOAT, loss_shape)], inits)


def cmd_regression(a):
    rng = np.random.default_rng(a.seed)
    nodes, inits = [], []
    w = rng.uniform(-1, 1, (a.out, a.inputs)).astype(np.float32)
    b = rng.uniform(-1, 1, a.out).astype(np.float32)
    inits += [numpy_helper.from_array(w, "weight"), numpy_helper.from_array(b, "bias")]
    shape = ["batch"] if a.flat else ["batch", a.out]
    if a.flat:
        inits.append(numpy_helper.from_array(np.array([-1], np.int64), "flat"))
        nodes += [helper.make_node("Gemm", ["x", "weight", "bias"], ["dense_out"], name="dense", transB=1),
                  helper.make_node("Reshape", ["dense_out", "flat"], ["prediction"], name="flatten")]
    else:
        nodes.append(helper.make_node("Gemm", ["x", "weight", "bias"], ["prediction"], name="dense", transB=1))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", a.inputs])]
    prediction = helper.make_tensor_value_info("prediction", TensorProto.FLOAT, shape)
    if a.kind == "none":
        save(a.path, nodes, inputs, [prediction], inits)
        return
    inputs.append(helper.make_tensor_value_info("targets", TensorProto.FLOAT, shape))
    if a.kind == "two-labels":
        inputs.append(helper.make_tensor_value_info("targets2", TensorProto.FLOAT, ["batch", a.out]))
        nodes += [helper.make_node("Sub", ["prediction", "targets"], ["error"], name="error"),
                  helper.make_node("Sub", ["prediction", "targets2"], ["error2"], name="error2"),
                  helper.make_node("Mul", ["error", "error2"], ["squared"], name="square")]
    elif a.kind == "no-gradient":
        nodes.append(helper.make_node("Mul", ["targets", "targets"], ["squared"], name="square"))
    else:
        nodes += [helper.make_node("Sub", ["prediction", "targets"], ["error"], name="error"),
                  helper.make_node("Mul", ["error", "error"], ["squared"], name="square")]
    nodes.append(helper.make_node("ReduceMean", ["squared"], ["loss"], name="mean", keepdims=0))
    loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    save(a.path, nodes, inputs, [loss] if a.kind == "mse-only" else [prediction, loss], inits)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mlp")
    m.add_argument("path")
    m.add_argument("--loss", choices=["none", "sce", "nll", "softmax", "sigmoid"], required=True)
    m.add_argument("--sizes", default="784,32,10")
    m.add_argument("--reduction", choices=["mean", "sum", "none"], default="mean")
    m.add_argument("--class-weights", action="store_true")
    m.add_argument("--ignore-index", type=int)
    m.add_argument("--seed", type=int, default=1)
    m.set_defaults(run=cmd_mlp)
    r = sub.add_parser("regression")
    r.add_argument("path")
    r.add_argument("--in", dest="inputs", type=int, required=True)
    r.add_argument("--out", type=int, required=True)
    r.add_argument("--kind", choices=["none", "mse", "mse-only", "two-labels", "no-gradient"], required=True)
    r.add_argument("--flat", action="store_true")
    r.add_argument("--seed", type=int, default=1)
    r.set_defaults(run=cmd_regression)
    a = p.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
