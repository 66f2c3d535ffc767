#!/usr/bin/python3
"""An MLP through every activation torch exports onto a Unary kind with a gradient, for
tests/e2e/test_activation_training.sh (needs Debian's python3-torch and python3-onnx):

    activation_mlp.py OUT_DIR [--opset 13] [--batch 8] [--steps 3] [--learning-rate 0.05] [--seed 0]

Linear layers of width 16 between ReLU6 (Clip 0, 6), Hardswish (HardSigmoid, Mul; from opset 14
HardSwish), ELU (alpha 0.7), SELU, LeakyReLU (0.2), Softplus, GELU in its tanh form (spelt out in
Mul, Add, Tanh), Hardtanh (Clip -1, 1), PReLU (a trained slope per feature), Mish (Softplus, Tanh,
Mul), CELU (alpha 0.8) and Hardsigmoid, ending in 4 logits; exported at --opset with a dynamic
batch (OUT_DIR/model.onnx).
OUT_DIR also holds a float64 torch reference of training it from the exported initializers:
--steps SGD steps (momentum 0.9) of batch --batch on train.x.npy / train.y.npy in order,
cross-entropy on the logits; reference.json has each step's loss, the initializers' names and the
smallest distance of a pre-activation from a kink over the steps (float32 and float64 take
different sides of a kink closer than float32's noise), reference/NAME.npy every initializer
after the steps and reference/NAME.initial.npy before.
"""
import argparse
import json
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

WIDTH = 16
# Each activation and the pre-activation values where its derivative jumps.
ACTIVATIONS = [
    (lambda: nn.ReLU6(), [0.0, 6.0]),
    (lambda: nn.Hardswish(), [-3.0, 3.0]),
    (lambda: nn.ELU(alpha=0.7), [0.0]),
    (lambda: nn.SELU(), [0.0]),
    (lambda: nn.LeakyReLU(0.2), [0.0]),
    (lambda: nn.Softplus(), []),
    (lambda: nn.GELU(approximate="tanh"), []),
    (lambda: nn.Hardtanh(-1.0, 1.0), [-1.0, 1.0]),
    (lambda: nn.PReLU(WIDTH, init=0.25), [0.0]),
    (lambda: nn.Mish(), []),
    (lambda: nn.CELU(alpha=0.8), [0.0]),
    (lambda: nn.Hardsigmoid(), [-3.0, 3.0]),
]


class ActivationMlp(nn.Module):
    def __init__(self, features, classes):
        super().__init__()
        self.linears = nn.ModuleList(
            [nn.Linear(features if i == 0 else WIDTH, WIDTH) for i in range(len(ACTIVATIONS))] +
            [nn.Linear(WIDTH, classes)])
        self.activations = nn.ModuleList([make() for make, _ in ACTIVATIONS])

    def forward(self, x, margins=None):
        for linear, activation, (_, kinks) in zip(self.linears, self.activations, ACTIVATIONS):
            x = linear(x)
            if margins is not None and kinks:
                margins.append(min(float((x - k).abs().min()) for k in kinks))
            x = activation(x)
        return self.linears[-1](x)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    features, classes = 8, 4
    torch.manual_seed(args.seed)
    model = ActivationMlp(features, classes)
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "model.onnx")
    torch.onnx.export(model, torch.randn(args.batch, features), path, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=args.opset, do_constant_folding=True)
    initial = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    reference = ActivationMlp(features, classes).double()
    state = reference.state_dict()
    for name in state:
        if name not in initial:
            raise SystemExit("the export has no initializer " + name)
        state[name] = torch.tensor(initial[name].astype(np.float64))
    reference.load_state_dict(state)
    # Inputs of scale 4 reach every region: beyond ReLU6's 6, both sides of Hardswish's ±3.
    x = 4 * torch.randn(args.steps * args.batch, features)
    y = torch.randint(0, classes, (args.steps * args.batch,))
    opt = torch.optim.SGD(reference.parameters(), lr=args.learning_rate, momentum=0.9)
    losses, margins = [], []
    for s in range(args.steps):
        xb, yb = x[s * args.batch:(s + 1) * args.batch].double(), y[s * args.batch:(s + 1) * args.batch]
        loss = nn.functional.cross_entropy(reference(xb, margins), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.save(os.path.join(args.out_dir, "train.x.npy"), x.numpy())
    np.save(os.path.join(args.out_dir, "train.y.npy"), y.numpy().astype(np.int32))
    out = os.path.join(args.out_dir, "reference")
    os.makedirs(out, exist_ok=True)
    after = reference.state_dict()
    for name in initial:
        np.save(os.path.join(out, name + ".npy"), after[name].numpy())
        np.save(os.path.join(out, name + ".initial.npy"), initial[name].astype(np.float64))
    json.dump({"losses": losses, "batch": args.batch, "steps": args.steps, "learning_rate": args.learning_rate,
               "momentum": 0.9, "kink_margin": min(margins), "initializers": sorted(initial)},
              open(os.path.join(args.out_dir, "reference.json"), "w"))
    print(path)


if __name__ == "__main__":
    main()
