#!/usr/bin/python3
"""Exports torchvision models (random weights, a fixed seed, eval mode, batch 1 as torch exports by
default), compiles each for inference with ipucc, predicts with ipurun and compares with torch's
own float32 output: does the model fit, where is its fullest tile, what does a step cost, and is
the answer right.

    /usr/bin/python3 scripts/zoo.py resnet18 squeezenet1_1 [--build build] [--work DIR]
        [--num-ipus N] [--precision fp32|fp16] [--tolerance T] [--json FILE] [-- IPUCC_FLAGS...]
    /usr/bin/python3 scripts/zoo.py --all
    /usr/bin/python3 scripts/zoo.py --train [--batch B] [--image-size S] [--dynamic-batch] mobilenet_v2

With --train each model is exported in torch's training mode instead (batch norm with batch
statistics; every Dropout's and StochasticDepth's probability set to 0, since ipucc does not draw
torch's random masks),
at batch B (4) and S x S images (64), with a fixed batch axis unless --dynamic-batch. It is
compiled for training (sparse categorical cross-entropy, SGD) at that batch, trains one step on
the exported batch with random labels, and the error is that step's loss against torch's float64
train-mode loss, relative (tolerance 1e-5); cycles/step is the train step's.

Prints one row per model: whether it compiled and fits (ipucc's exit code: 5 is out of tile
memory), the fullest tile's planned bytes, the estimated cycles of one predict step, the error
max |ipurun - torch| / max |torch| (the reference checks' rel_to_max), and the verdict: `ok` when
it compiled and the error is within the tolerance (1e-4 in fp32; in fp16 2^-7, a few binary16
roundings of the largest logit). With more than one IPU the model is split automatically into
that many pipeline stages (--pipeline-stages). Exports are kept in the work directory (default
$TMPDIR/ipucc-zoo) and reused. Exits 1 if any model is not `ok`. Needs Debian's python3-torch,
python3-torchvision and python3-onnx (scripts/setup.sh installs them). IPUCC and IPURUN, when set,
name the binaries instead of the build's.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# Issue 25's list, in its order: the models Graphcore engineers run, at the input size torchvision
# trained them at.
ZOO = ["resnet18", "resnet50", "wide_resnet50_2", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
       "regnet_y_400mf", "mnasnet1_0", "squeezenet1_1", "googlenet", "densenet121", "inception_v3", "alexnet",
       "convnext_tiny", "shufflenet_v2_x1_0", "vit_b_16", "swin_t", "vgg11"]
IMAGE_SIZE = {"inception_v3": 299}
TOLERANCE = {"fp32": 1e-4, "fp16": 2.0 ** -7}


def export(name, directory, opset, seed, batch=1, dynamic_batch=False):
    """Writes model.onnx, input.npy and output.npy (torch's float32 logits) once: batch `batch`,
    and with `dynamic_batch` a symbolic batch axis (what training at another --batch-size needs)."""
    paths = [os.path.join(directory, f) for f in ("model.onnx", "input.npy", "output.npy")]
    if all(os.path.exists(p) for p in paths):
        return paths
    import torch
    import torchvision
    os.makedirs(directory, exist_ok=True)
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None).eval()
    if name.startswith("vit_"):
        # torchvision starts ViT's head at zero, which makes every logit 0 and the comparison
        # empty: it is drawn at random like the other layers.
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    size = IMAGE_SIZE.get(name, 224)
    x = torch.randn(batch, 3, size, size, dtype=torch.float32)
    with torch.no_grad():
        y = model(x)
    tmp = paths[0] + ".tmp"
    axes = {"input": {0: "batch"}, "logits": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, x, tmp, input_names=["input"], output_names=["logits"], opset_version=opset,
                      dynamic_axes=axes, do_constant_folding=True)
    np.save(paths[1], x.numpy())
    np.save(paths[2], y.numpy())
    os.replace(tmp, paths[0])
    return paths


def export_training(name, directory, args):
    """Writes model.onnx (torch's training-mode export), x.npy, labels.npy and loss.txt (torch's
    float64 train-mode loss of that batch) once."""
    paths = [os.path.join(directory, f) for f in ("model.onnx", "x.npy", "labels.npy", "loss.txt")]
    if all(os.path.exists(p) for p in paths):
        return paths
    import copy
    import torch
    import torchvision
    os.makedirs(directory, exist_ok=True)
    torch.manual_seed(args.seed)
    model = getattr(torchvision.models, name)(weights=None)
    for module in model.modules():
        if isinstance(module, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
            module.p = 0.0
    model.train()
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, dtype=torch.float32)
    labels = torch.randint(0, 1000, (args.batch,))
    # The reference is a copy: tracing for the export runs the model, which moves its running
    # statistics (the loss does not read them in training mode, but the export should be untouched).
    reference = copy.deepcopy(model).double()
    loss = torch.nn.functional.cross_entropy(reference(x.double()), labels)
    tmp = paths[0] + ".tmp"
    axes = {"input": {0: "batch"}, "logits": {0: "batch"}} if args.dynamic_batch else None
    torch.onnx.export(model, x, tmp, input_names=["input"], output_names=["logits"], opset_version=args.opset,
                      dynamic_axes=axes, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    np.save(paths[1], x.numpy())
    np.save(paths[2], labels.numpy())
    with open(paths[3], "w") as f:
        f.write(repr(float(loss)))
    os.replace(tmp, paths[0])
    return paths


def compile_into(row, command, program, args):
    """Runs `command` (ipucc compile) on the IPUs asked for, with the flags after --, and fills
    the row's exit, peak tile and cycles per step of `program`; False if it failed."""
    command = command + ["--no-cache", "--json", "--num-ipus", str(args.num_ipus), "--precision", args.precision]
    if args.num_ipus > 1:
        command += ["--pipeline-stages", str(args.num_ipus)]
    compiled = run(command + args.ipucc_flags)
    row["exit"] = compiled.returncode
    if compiled.returncode != 0:
        row["message"] = last_line(compiled.stderr)
        return False
    report = json.loads(compiled.stdout)
    row["peak_tile_bytes"] = report["estimates"]["peak_tile_bytes"]
    row["cycles_per_step"] = report["estimates"]["cycles_per_step"].get(program)
    return True


def check_training(name, args, ipucc, ipurun):
    row = {"model": name, "exit": None, "peak_tile_bytes": None, "cycles_per_step": None, "error": None,
           "ok": False, "message": ""}
    directory = os.path.join(args.work, "%s-train-b%d-%d%s" % (
        name, args.batch, args.image_size, "-dynamic" if args.dynamic_batch else ""))
    try:
        onnx_path, x_path, labels_path, loss_path = export_training(name, directory, args)
    except Exception as e:  # torch's exporter refuses some models; say so and go on
        row["message"] = "export failed: " + str(e).splitlines()[0]
        return row
    exe = os.path.join(directory, "train-%s-%d.ipuexe" % (args.precision, args.num_ipus))
    if not compile_into(row, [ipucc, "compile", onnx_path, "--mode", "train", "--loss",
                              "sparse_categorical_crossentropy", "--optimizer", "sgd", "--learning-rate", "0.01",
                              "--batch-size", str(args.batch), "-o", exe], "train", args):
        return row
    steps = os.path.join(directory, "steps-%s-%d.json" % (args.precision, args.num_ipus))
    trained = run([ipurun, "train", exe, "--data", "npy:%s,%s" % (x_path, labels_path), "--step-log", steps,
                   "--progress", "none"])
    if trained.returncode != 0:
        row["message"] = "ipurun exit %d: %s" % (trained.returncode, last_line(trained.stderr))
        return row
    with open(steps) as f:
        loss = json.load(f)["losses"][0]
    with open(loss_path) as f:
        want = float(f.read())
    row["error"] = abs(loss - want) / abs(want)
    row["ok"] = row["error"] <= args.tolerance
    return row


def run(command):
    return subprocess.run(command, capture_output=True, text=True)


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def check(name, args, ipucc, ipurun):
    row = {"model": name, "exit": None, "peak_tile_bytes": None, "cycles_per_step": None, "error": None,
           "ok": False, "message": ""}
    directory = os.path.join(args.work, name)
    try:
        onnx_path, input_path, output_path = export(name, directory, args.opset, args.seed)
    except Exception as e:  # torch's exporter refuses some models; say so and go on
        row["message"] = "export failed: " + str(e).splitlines()[0]
        return row
    exe = os.path.join(directory, "model-%s-%d.ipuexe" % (args.precision, args.num_ipus))
    if not compile_into(row, [ipucc, "compile", onnx_path, "--mode", "infer", "--batch-size", "1", "-o", exe],
                        "predict", args):
        return row
    got = os.path.join(directory, "got-%s-%d.npy" % (args.precision, args.num_ipus))
    predicted = run([ipurun, "predict", exe, "--input", input_path, "--output", got])
    if predicted.returncode != 0:
        row["message"] = "ipurun exit %d: %s" % (predicted.returncode, last_line(predicted.stderr))
        return row
    want = np.load(output_path).astype(np.float64)
    have = np.load(got).astype(np.float64)
    if have.shape != want.shape:
        row["message"] = "shape %s, torch's %s" % (have.shape, want.shape)
        return row
    row["error"] = float(np.max(np.abs(have - want)) / max(np.max(np.abs(want)), 1e-30))
    row["ok"] = row["error"] <= args.tolerance
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="torchvision model names (torchvision.models.NAME)")
    parser.add_argument("--all", action="store_true", help="every model of issue 25's list")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--build", default=os.path.join(root, "build"), help="the build with cli/ipucc and cli/ipurun")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ipucc-zoo"))
    parser.add_argument("--num-ipus", type=int, default=1)
    parser.add_argument("--precision", choices=sorted(TOLERANCE), default="fp32")
    parser.add_argument("--tolerance", type=float, help="largest error passed (default by precision)")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as a JSON list")
    parser.add_argument("--train", action="store_true", help="export in training mode, train a step, compare the loss")
    parser.add_argument("--batch", type=int, default=4, help="with --train: the batch size")
    parser.add_argument("--image-size", type=int, default=64, help="with --train: the image side")
    parser.add_argument("--dynamic-batch", action="store_true", help="with --train: a symbolic batch axis")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.ipucc_flags = argv[split + 1:]  # after --: more ipucc compile flags
    if args.tolerance is None:
        args.tolerance = 1e-5 if args.train else TOLERANCE[args.precision]
    models = ZOO if args.all else args.models
    if not models:
        parser.error("name at least one model, or --all")
    # The e2e suites name the binaries of the build under test in IPUCC and IPURUN.
    ipucc = os.environ.get("IPUCC", os.path.join(args.build, "cli", "ipucc"))
    ipurun = os.environ.get("IPURUN", os.path.join(args.build, "cli", "ipurun"))
    print("%-20s %5s %16s %14s %10s  %s" % ("model", "exit", "peak tile bytes", "cycles/step", "error", "verdict"))
    rows = []
    for name in models:
        row = (check_training if args.train else check)(name, args, ipucc, ipurun)
        rows.append(row)
        print("%-20s %5s %16s %14s %10s  %s" % (
            name, "-" if row["exit"] is None else row["exit"],
            "-" if row["peak_tile_bytes"] is None else "{:,}".format(row["peak_tile_bytes"]),
            "-" if row["cycles_per_step"] is None else "{:,.0f}".format(row["cycles_per_step"]),
            "-" if row["error"] is None else "%.2e" % row["error"],
            "ok" if row["ok"] else row["message"] or "error above %.0e" % args.tolerance), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
