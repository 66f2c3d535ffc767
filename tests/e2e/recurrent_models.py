#!/usr/bin/python3
"""Recurrent models for tests/e2e/test_recurrent.sh, with their references.

    recurrent_models.py torch KIND DIR [--bidirectional] [--layers N]
        torch.nn.KIND (LSTM, GRU or RNN; 5 features, hidden 7, batch_first) under a Linear head,
        exported at opset 13 with a dynamic batch: DIR/model.onnx, x.npy [12, 4, 5], labels.npy,
        predictions.npy (torch's float32 logits of x) and losses.json (the float64 loss of each of
        3 SGD steps, learning rate 0.1, batches of 4 in order).
    recurrent_models.py onnx VARIANT DIR
        One ONNX RNN, GRU or LSTM node with the attributes torch never writes (VARIANTS below),
        random weights as initializers: DIR/model.onnx, x.npy and, per graph output NAME,
        DIR/want/NAME.npy computed by reference() below in float64 from ONNX's equations.

Needs Debian's python3-onnx and numpy (torch for `torch`).
"""
import argparse
import json
import os

import numpy as np

# name: (op, attributes, options). layout 1 puts the batch first (X [B, T, I]; opset 14).
VARIANTS = {
    "lstm_peepholes_batch_first": ("LSTM", {"direction": "bidirectional", "layout": 1, "clip": 1.5},
                                   {"peepholes": True, "initial": True}),
    "lstm_input_forget_reverse": ("LSTM", {"direction": "reverse", "input_forget": 1,
                                           "activations": ["HardSigmoid", "Tanh", "Softsign"],
                                           "activation_alpha": [0.3], "activation_beta": [0.4]},
                                  {"sequence_lens": True}),
    "gru_reset_before_linear": ("GRU", {"direction": "bidirectional", "linear_before_reset": 0},
                                {"initial": True}),
    "rnn_relu_reverse": ("RNN", {"direction": "reverse", "activations": ["Relu"]}, {}),
}
STEPS, BATCH, FEATURES, HIDDEN = 4, 3, 5, 6


def activation(name, x, alpha, beta):
    if name == "Sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "Tanh":
        return np.tanh(x)
    if name == "Relu":
        return np.maximum(x, 0)
    if name == "Softsign":
        return x / (1 + np.abs(x))
    if name == "HardSigmoid":
        return np.clip(alpha * x + beta, 0, 1)
    raise SystemExit("no reference for " + name)


def functions(op, attrs, directions):
    per = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[op]
    names = attrs.get("activations", per)
    if len(names) == len(per) and directions == 2:
        names = names * 2
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    out = []
    for name in names:
        alpha = alphas.pop(0) if name == "HardSigmoid" and alphas else 0.2
        beta = betas.pop(0) if name == "HardSigmoid" and betas else 0.5
        out.append(lambda x, n=name, a=alpha, b=beta: activation(n, x, a, b))
    return [out[d * len(per):(d + 1) * len(per)] for d in range(directions)]


def reference(op, attrs, x, w, r, b, h0, c0, p):
    """ONNX's equations (the operator's documentation), step by step in float64."""
    if attrs.get("layout", 0):
        x, h0, c0 = x.transpose(1, 0, 2), h0.transpose(1, 0, 2), c0.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    directions, hidden = r.shape[0], r.shape[2]
    gates = w.shape[1] // hidden
    clip = attrs.get("clip")
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    y = np.zeros((steps, directions, batch, hidden))
    last_h, last_c = np.zeros((directions, batch, hidden)), np.zeros((directions, batch, hidden))
    for d, fs in enumerate(functions(op, attrs, directions)):
        reverse = d == 1 or attrs.get("direction") == "reverse"
        h, c = h0[d], c0[d]
        wb, rb = b[d, :gates * hidden], b[d, gates * hidden:]
        for t in (reversed(range(steps)) if reverse else range(steps)):
            xw = x[t] @ w[d].T + wb
            if op == "RNN":
                h = fs[0](cl(xw + h @ r[d].T + rb))
            elif op == "GRU":
                rz, rr, rh = np.split(r[d], 3)
                bz, br, bh = np.split(rb, 3)
                xz, xr, xh = np.split(xw, 3, axis=1)
                z = fs[0](cl(xz + h @ rz.T + bz))
                reset = fs[0](cl(xr + h @ rr.T + br))
                if attrs.get("linear_before_reset", 0):
                    n = fs[1](cl(xh + reset * (h @ rh.T + bh)))
                else:
                    n = fs[1](cl(xh + (reset * h) @ rh.T + bh))
                h = (1 - z) * n + z * h
            else:
                pi, po, pf = np.split(p[d], 3)
                xi, xo, xf, xc = np.split(xw + h @ r[d].T + rb, 4, axis=1)
                i = fs[0](cl(xi + pi * c))
                f = 1 - i if attrs.get("input_forget", 0) else fs[0](cl(xf + pf * c))
                c = f * c + i * fs[1](cl(xc))
                o = fs[0](cl(xo + po * c))
                h = o * fs[2](c)
            y[t, d] = h
        last_h[d], last_c[d] = h, c
    if attrs.get("layout", 0):
        return y.transpose(2, 0, 1, 3), last_h.transpose(1, 0, 2), last_c.transpose(1, 0, 2)
    return y, last_h, last_c


def make_onnx(variant, directory):
    import onnx
    from onnx import helper, numpy_helper
    op, attrs, options = VARIANTS[variant]
    rng = np.random.default_rng(7)
    directions = 2 if attrs.get("direction") == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    batch_first = attrs.get("layout", 0) == 1
    x = rng.standard_normal((BATCH, STEPS, FEATURES) if batch_first else (STEPS, BATCH, FEATURES))
    w = rng.standard_normal((directions, gates * HIDDEN, FEATURES)) * 0.5
    r = rng.standard_normal((directions, gates * HIDDEN, HIDDEN)) * 0.5
    b = rng.standard_normal((directions, 2 * gates * HIDDEN)) * 0.5
    state = (BATCH, directions, HIDDEN) if batch_first else (directions, BATCH, HIDDEN)
    h0 = rng.standard_normal(state) if options.get("initial") else np.zeros(state)
    c0 = rng.standard_normal(state) if options.get("initial") and op == "LSTM" else np.zeros(state)
    p = rng.standard_normal((directions, 3 * HIDDEN)) if options.get("peepholes") else np.zeros((directions, 3 * HIDDEN))
    arrays = {"W": w, "R": r, "B": b}
    inputs = ["x", "W", "R", "B", "", "", "", ""]
    if options.get("sequence_lens"):
        inputs[4] = "sequence_lens"
    if options.get("initial"):
        arrays["initial_h"] = h0
        inputs[5] = "initial_h"
        if op == "LSTM":
            arrays["initial_c"] = c0
            inputs[6] = "initial_c"
    if options.get("peepholes"):
        arrays["P"] = p
        inputs[7] = "P"
    while inputs[-1] == "":
        inputs.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    # The reference reads the float32 values the model holds.
    as32 = [a.astype(np.float32).astype(np.float64) for a in (x, w, r, b, h0, c0, p)]
    want = dict(zip(outputs, reference(op, attrs, *as32)))
    initializers = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in arrays.items()]
    if options.get("sequence_lens"):
        initializers.append(numpy_helper.from_array(np.full(BATCH, STEPS, dtype=np.int32), "sequence_lens"))
    node = helper.make_node(op, inputs, outputs, name="recurrent", hidden_size=HIDDEN, **attrs)
    graph = helper.make_graph(
        [node], variant, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, list(want[o].shape)) for o in outputs],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(directory, "want"), exist_ok=True)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    np.save(os.path.join(directory, "x.npy"), x.astype(np.float32))
    for name, value in want.items():
        np.save(os.path.join(directory, "want", name + ".npy"), value)

def make_torch(kind, directory, bidirectional, layers):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(5, 7, num_layers=layers, batch_first=True,
                                               bidirectional=bidirectional)
            self.head = torch.nn.Linear(7 * (2 if bidirectional else 1), 3)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.head(y[:, -1])

    torch.manual_seed(0)
    net = Net()
    x, labels = torch.randn(12, 4, 5), torch.randint(0, 3, (12,))
    os.makedirs(directory, exist_ok=True)
    torch.onnx.export(net, x[:2], os.path.join(directory, "model.onnx"), opset_version=13, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    np.save(os.path.join(directory, "x.npy"), x.numpy())
    np.save(os.path.join(directory, "labels.npy"), labels.numpy())
    with torch.no_grad():
        np.save(os.path.join(directory, "predictions.npy"), net(x).numpy())
    net = net.double()
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for step in range(3):
        sgd.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x[4 * step:4 * step + 4].double()), labels[4 * step:4 * step + 4])
        loss.backward()
        sgd.step()
        losses.append(float(loss))
    with open(os.path.join(directory, "losses.json"), "w") as f:
        json.dump(losses, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("torch")
    t.add_argument("kind", choices=["LSTM", "GRU", "RNN"])
    t.add_argument("directory")
    t.add_argument("--bidirectional", action="store_true")
    t.add_argument("--layers", type=int, default=1)
    o = sub.add_parser("onnx")
    o.add_argument("variant", choices=sorted(VARIANTS))
    o.add_argument("directory")
    args = parser.parse_args()
    if args.command == "torch":
        make_torch(args.kind, args.directory, args.bidirectional, args.layers)
    else:
        make_onnx(args.variant, args.directory)


if __name__ == "__main__":
    main()
