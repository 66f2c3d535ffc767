#!/usr/bin/env python3
"""Autocast-style fp16 training reference for test_mixed_precision.sh (torch, /usr/bin/python3).

    mixed_reference.py MODEL CKPT X.npy Y.npy STEPS OUT_DIR [--loss-scale S]

Trains models/mlp_functional.json (MODEL "mlp") or models/cnn_sequential.json ("cnn") with SGD
(lr 0.01, momentum 0.9, Keras's form) from the checkpoint CKPT (weights and momentum, as ipurun
--save-weights writes them) on X, Y in order, batch 32, for STEPS steps, as ipucc's --precision
mixed does (docs/training.md, "Precision"):

- fp32 master weights; each step every layer reads an fp16 copy (rounded to nearest even);
- the input and each op's output are rounded to fp16 as the op writes it, in the forward and in
  the backward (the gradient an op's backward gives its input); sums accumulate in float64
  (ipucc: fp32 partial sums), so the only roundings are those of the fp16 values;
- the output softmax, the loss and the loss's gradient of the probabilities stay fp32, as do
  the weight gradients (no rounding), which are unscaled by 1/S and update the masters in fp32.

Writes OUT_DIR/<name>.npy per weight (float32) and OUT_DIR/losses.json (the loss of every step).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def half(t):
    return t.to(torch.float16).to(torch.float64)


class RoundBoth(torch.autograd.Function):
    """An fp16 value: rounded as its op writes it, and so is the gradient written for it."""

    @staticmethod
    def forward(ctx, x):
        return half(x)

    @staticmethod
    def backward(ctx, g):
        return half(g)


class WeightCopy(torch.autograd.Function):
    """The cast of an fp32 master to its fp16 copy; its gradient reaches the master unrounded."""

    @staticmethod
    def forward(ctx, w):
        return half(w)

    @staticmethod
    def backward(ctx, g):
        return g


R = RoundBoth.apply
C = WeightCopy.apply


def mlp_probabilities(w, x):
    h = R(x.reshape(x.shape[0], -1))
    for i in range(1, 6):
        z = h @ C(w["dense%d/kernel" % i]) + C(w["dense%d/bias" % i])
        h = R(torch.relu(z)) if i < 5 else R(z)
    return torch.softmax(h, dim=1)


def cnn_probabilities(w, x):
    h = R(x.permute(0, 3, 1, 2))
    h = R(torch.relu(F.conv2d(h, C(w["conv1/kernel"]), C(w["conv1/bias"]), padding=1)))
    scale = C(w["norm1/gamma"]) / torch.sqrt(torch.tensor(1.0 + 1e-3))  # moving stats 0 and 1
    h = R(h * scale[None, :, None, None] + C(w["norm1/beta"])[None, :, None, None])
    h = R(F.max_pool2d(h, 2))
    h = R(torch.relu(F.conv2d(h, C(w["conv2/kernel"]), C(w["conv2/bias"]))))
    h = R(F.avg_pool2d(h, 2))
    h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)
    h = R(torch.relu(h @ C(w["dense1/kernel"]) + C(w["dense1/bias"])))
    h = R(h @ C(w["dense2/kernel"]) + C(w["dense2/bias"]))
    return torch.softmax(h, dim=1)


def main():
    args = sys.argv[1:]
    loss_scale = 32768.0
    if "--loss-scale" in args:
        i = args.index("--loss-scale")
        loss_scale = float(args[i + 1])
        del args[i : i + 2]
    model, ckpt, x_path, y_path, steps, out_dir = args
    probabilities = {"mlp": mlp_probabilities, "cnn": cnn_probabilities}[model]
    index = json.load(open(os.path.join(ckpt, "index.json")))
    arrays = {name: np.load(os.path.join(ckpt, f)) for name, f in index.items()}
    weights = {n: torch.tensor(a, dtype=torch.float64, requires_grad=True)
               for n, a in arrays.items() if not n.endswith("/momentum")}
    velocity = {n: torch.tensor(arrays.get(n + "/momentum", np.zeros_like(arrays[n])), dtype=torch.float64)
                for n in weights}
    x_all, y_all = np.load(x_path), np.load(y_path)
    batch, lr, momentum, eps = 32, np.float32(0.01), np.float32(0.9), 1e-7
    losses = []
    for step in range(int(steps)):
        x = torch.tensor(x_all[step * batch : (step + 1) * batch], dtype=torch.float64)
        y = torch.tensor(y_all[step * batch : (step + 1) * batch], dtype=torch.int64)
        p = probabilities(weights, x)
        loss = -torch.log(torch.clamp(p[torch.arange(batch), y], eps, 1 - eps)).mean()
        losses.append(float(np.float32(loss.item())))
        for t in weights.values():
            t.grad = None
        (loss * loss_scale).backward()
        with torch.no_grad():
            for n, t in weights.items():
                # fp32 as the device computes the update: V = m·V − lr·g, W = W + V.
                g = (t.grad / loss_scale).to(torch.float32)
                v = (momentum * velocity[n].to(torch.float32) - lr * g).to(torch.float32)
                velocity[n] = v.to(torch.float64)
                t.copy_((t.to(torch.float32) + v).to(torch.float64))
    os.makedirs(out_dir, exist_ok=True)
    for n, t in weights.items():
        np.save(os.path.join(out_dir, n.replace("/", ".") + ".npy"), t.detach().numpy().astype(np.float32))
    json.dump({"losses": losses}, open(os.path.join(out_dir, "losses.json"), "w"))


if __name__ == "__main__":
    main()
