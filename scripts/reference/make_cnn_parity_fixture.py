#!/usr/bin/env python3
"""Writes tests/data/torch_reference/cnn_onnx_sgd_b32.json: the loss of each of the first 50 steps
of training ../shared/peers/models/cnn.onnx (its initial weights) in PyTorch float64 on the
synthetic set, batch 32 in order, SGD lr 0.01 momentum 0.9, mean cross-entropy on the logits.

  /usr/bin/python3 scripts/reference/make_cnn_parity_fixture.py [SHARED_DIR]
"""
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared")
sys.path.insert(0, os.path.join(shared, "peers"))
import synthetic_mnist  # noqa: E402

STEPS, BATCH = 50, 32
torch.set_num_threads(1)
model = onnx.load(os.path.join(shared, "peers", "models", "cnn.onnx"))
w = {i.name: torch.tensor(numpy_helper.to_array(i).astype(np.float64)) for i in model.graph.initializer}
params = [w[k].requires_grad_() for k in w]
x, y = synthetic_mnist.make(STEPS * BATCH)
x = torch.tensor(x.reshape(-1, 1, 28, 28)).double()
y = torch.tensor(y).long()
F = torch.nn.functional
opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
losses = []
for s in range(STEPS):
    xb, yb = x[s * BATCH:(s + 1) * BATCH], y[s * BATCH:(s + 1) * BATCH]
    h = F.max_pool2d(F.relu(F.conv2d(xb, w["conv1.weight"], w["conv1.bias"])), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w["conv2.weight"], w["conv2.bias"])), 2)
    h = F.relu(F.linear(h.flatten(1), w["fc1.weight"], w["fc1.bias"]))
    loss = F.cross_entropy(F.linear(h, w["fc2.weight"], w["fc2.bias"]), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
out = os.path.join(root, "tests", "data", "torch_reference", "cnn_onnx_sgd_b32.json")
json.dump({"model": "cnn.onnx", "batch": BATCH, "learning_rate": 0.01, "momentum": 0.9, "steps": STEPS,
           "losses_fp64": losses}, open(out, "w"), indent=1)
print("wrote", out)
