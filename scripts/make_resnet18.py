#!/usr/bin/python3
"""Exports torchvision's ResNet-18 (random weights from a fixed seed, eval mode) to ONNX at opset 13
with a dynamic batch, with an input and torch's float32 output for it, to check ipucc against:

    /usr/bin/python3 scripts/make_resnet18.py OUT_DIR [--batch 1] [--blocks 2,2,2,2] [--image-size 224]
    ipucc compile OUT_DIR/resnet18.onnx --mode infer --batch-size 1 -o resnet18.ipuexe
    ipurun predict resnet18.ipuexe --input OUT_DIR/resnet18.input.npy --output out.npy
    compare out.npy with OUT_DIR/resnet18.output.npy (tests/e2e/e2e_data.py compare: rel_to_max)

Writes OUT_DIR/resnet18.onnx, resnet18.input.npy ([batch, 3, size, size]) and resnet18.output.npy
([batch, 1000] logits).

With --training the model is exported as torch.onnx.export(..., training=TrainingMode.TRAINING,
do_constant_folding=False) writes it (opset 15, BatchNormalization with training_mode 1 and its
running statistics as initializers), with --classes outputs, and OUT_DIR holds a float64 torch
reference of training it from those initializers: --steps SGD steps (--learning-rate, momentum
0.9) of batch --batch on train.x.npy / train.y.npy in order, cross-entropy on the logits;
reference.json has each step's train-mode loss, reference/NAME.npy every initializer after the
steps (weights and running statistics), and eval.output.npy torch's eval-mode logits for
input.npy afterwards (and in reference.json eval_loss, the eval-mode loss on the training samples). --blocks and --image-size make a smaller ResNet of the same layers (Conv,
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
    parser.add_argument("--training", action="store_true", help="export in training mode, with a reference")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    args = parser.parse_args()
    if args.training:
        export_training(args)
        return

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


def make_model(blocks, classes):
    if blocks == [2, 2, 2, 2]:
        return torchvision.models.resnet18(weights=None, num_classes=classes)
    return torchvision.models.resnet.ResNet(torchvision.models.resnet.BasicBlock, blocks, num_classes=classes)


def export_training(args):
    import json

    import onnx
    from onnx import numpy_helper

    torch.manual_seed(args.seed)
    blocks = [int(b) for b in args.blocks.split(",")]
    model = make_model(blocks, args.classes)
    # Running statistics other than torch's 0 and 1, so that the update's arithmetic shows.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    model.train()
    size = (args.batch, 3, args.image_size, args.image_size)
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "resnet18.onnx")
    # Exporting traces a forward pass in training mode, which moves the running statistics: the
    # reference starts from what the file holds.
    torch.onnx.export(model, torch.randn(*size), path, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=15,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    initial = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    reference = make_model(blocks, args.classes).double()
    state = reference.state_dict()
    for name in state:
        if name in initial:
            state[name] = torch.tensor(initial[name].astype(np.float64))
        elif not name.endswith("num_batches_tracked"):
            raise SystemExit("the export has no initializer " + name)
    reference.load_state_dict(state)
    reference.train()
    x = torch.randn(args.steps * args.batch, *size[1:])
    y = torch.randint(0, args.classes, (args.steps * args.batch,))
    opt = torch.optim.SGD(reference.parameters(), lr=args.learning_rate, momentum=0.9)
    losses = []
    for s in range(args.steps):
        xb, yb = x[s * args.batch:(s + 1) * args.batch].double(), y[s * args.batch:(s + 1) * args.batch]
        loss = torch.nn.functional.cross_entropy(reference(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    reference.eval()
    probe = torch.randn(*size)
    with torch.no_grad():
        eval_logits = reference(probe.double()).numpy()
        eval_loss = torch.nn.functional.cross_entropy(reference(x.double()), y).item()
    np.save(os.path.join(args.out_dir, "train.x.npy"), x.numpy())
    np.save(os.path.join(args.out_dir, "train.y.npy"), y.numpy().astype(np.int32))
    np.save(os.path.join(args.out_dir, "input.npy"), probe.numpy())
    np.save(os.path.join(args.out_dir, "eval.output.npy"), eval_logits)
    out = os.path.join(args.out_dir, "reference")
    os.makedirs(out, exist_ok=True)
    after = reference.state_dict()
    for name in initial:
        np.save(os.path.join(out, name + ".npy"), after[name].numpy())
        np.save(os.path.join(out, name + ".initial.npy"), initial[name].astype(np.float64))
    json.dump({"losses": losses, "batch": args.batch, "steps": args.steps, "learning_rate": args.learning_rate,
               "momentum": 0.9, "eval_loss": eval_loss,
               "initializers": sorted(initial)}, open(os.path.join(args.out_dir, "reference.json"), "w"))
    print(path)


if __name__ == "__main__":
    main()
