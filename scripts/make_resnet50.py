#!/usr/bin/python3
"""Exports torchvision's ResNet-50 (random weights from a fixed seed, eval mode, each
BatchNormalization folded into the Conv before it) to ONNX at opset 13 with a dynamic batch, as
scripts/make_resnet18.py does ResNet-18:

    /usr/bin/python3 scripts/make_resnet50.py OUT_DIR [--image-size 224]
    ipucc compile OUT_DIR/resnet50.onnx --loss sparse_categorical_crossentropy --optimizer sgd \\
        --momentum 0.9 --batch-size 4 --recompute -o resnet50.ipuexe

Writes OUT_DIR/resnet50.onnx (98 MB at full size; not committed). Needs Debian's python3-torch and
python3-torchvision.
"""
import argparse
import os

import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = torchvision.models.resnet50(weights=None)
    model.eval()
    x = torch.randn(1, 3, args.image_size, args.image_size, dtype=torch.float32)
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "resnet50.onnx")
    torch.onnx.export(model, x, path, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13,
                      do_constant_folding=True)
    print(path)


if __name__ == "__main__":
    main()
