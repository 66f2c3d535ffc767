#!/usr/bin/python3
"""Exports torchvision's ResNet-18 (random weights from a fixed seed, eval mode) to ONNX at opset 13
with a dynamic batch, with an input and torch's float32 output for it, to check ipucc against:

    /usr/bin/python3 scripts/make_resnet18.py OUT_DIR [--batch 1] [--blocks 2,2,2,2] [--image-size 224]
    ipucc compile OUT_DIR/resnet18.onnx --mode infer --batch-size 1 -o resnet18.ipuexe
    ipurun predict resnet18.ipuexe --input OUT_DIR/resnet18.input.npy --output out.npy
    compare out.npy with OUT_DIR/resnet18.output.npy (tests/e2e/e2e_data.py compare: rel_to_max)

Writes OUT_DIR/resnet18.onnx, resnet18.input.npy ([batch, 3, size, size]) and resnet18.output.npy
([batch, 1000] logits). --blocks and --image-size make a smaller ResNet of the same layers (Conv,
folded BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool, Flatten, Gemm) for fast tests:
--blocks 1,1,1,1 has one BasicBlock per stage instead of two. Needs Debian's python3-torch and
python3-torchvision (scripts/setup-peers.sh). The .onnx (45 MB at full size) is not committed.
"""
import argparse
import os

import numpy as np
import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--batch", type=int, default=1, help="samples in the reference input")
    parser.add_argument("--blocks", default="2,2,2,2", help="BasicBlocks per stage (ResNet-18: 2,2,2,2)")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    blocks = [int(b) for b in args.blocks.split(",")]
    if blocks == [2, 2, 2, 2]:
        model = torchvision.models.resnet18(weights=None)
    else:
        model = torchvision.models.resnet.ResNet(torchvision.models.resnet.BasicBlock, blocks)
    model.eval()
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, dtype=torch.float32)
    with torch.no_grad():
        y = model(x)

    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "resnet18.onnx")
    # Constant folding fuses each eval-mode BatchNormalization into the Conv before it, as
    # torchvision's exported models usually are.
    torch.onnx.export(model, x, path, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13,
                      do_constant_folding=True)
    np.save(os.path.join(args.out_dir, "resnet18.input.npy"), x.numpy())
    np.save(os.path.join(args.out_dir, "resnet18.output.npy"), y.numpy())
    print(path)


if __name__ == "__main__":
    main()
