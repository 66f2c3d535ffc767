#!/usr/bin/python3
"""Inference of torchvision models at batch 1: ipurun predict against torch in the same run (the
issue's bar: ipurun at 1.0x torch or better on every zoo model that compiles).

    /usr/bin/python3 scripts/bench/zoo_predict.py [MODEL...] [--all] [--samples N] [--trials T]
        [--build DIR] [--work DIR]

Each model is exported as scripts/zoo.py exports it (random weights, a fixed seed, eval mode,
a symbolic batch axis; kept in the work directory and reused), compiled for inference at batch 1 on one IPU and
predicted over N samples (default 32) with `ipurun predict --input`, whose own samples/s excludes
loading the executable. torch runs the same model with torch.no_grad() over as many samples after
a warm-up, at 1 thread and at 2 (the faster counts, as ../shared/peers advises: compare against
torch's best configuration). Trials alternate ipurun and torch, so both see the same load; each
side's figure is the median of T trials (default 3). Prints samples/s of each and the ratio
ipurun / torch; a model that does not compile (or does not fit) is listed with ipucc's message.
Default models: a subset that runs in a few minutes; --all takes zoo.py's whole list.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import zoo  # noqa: E402  (scripts/zoo.py: the export and the model list)

DEFAULT_MODELS = ["resnet18", "mobilenet_v2", "efficientnet_b0", "mnasnet1_0", "squeezenet1_1"]


def torch_samples_per_second(name, input_path, samples):
    """The faster of 1 and 2 threads, each after a warm-up, over `samples` batch-1 predictions."""
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.from_numpy(np.load(input_path))
    best = 0.0
    for threads in (1, 2):
        torch.set_num_threads(threads)
        with torch.no_grad():
            for _ in range(3):
                model(x)
            start = time.perf_counter()
            for _ in range(samples):
                model(x)
            best = max(best, samples / (time.perf_counter() - start))
    return best


def ipurun_samples_per_second(ipurun, exe, inputs):
    out = subprocess.run([ipurun, "predict", exe, "--input", inputs, "--json"], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)["samples_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="torchvision model names (default: %s)" % ",".join(DEFAULT_MODELS))
    parser.add_argument("--all", action="store_true", help="every model of scripts/zoo.py's list")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--build", default=os.path.join(root, "build"), help="the build with cli/ipucc and cli/ipurun")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ipucc-zoo"),
                        help="where exports are kept (shared with scripts/zoo.py)")
    parser.add_argument("--samples", type=int, default=32, help="predictions per trial (batch 1)")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    models = zoo.ZOO if args.all else (args.models or DEFAULT_MODELS)
    ipucc = os.path.join(args.build, "cli", "ipucc")
    ipurun = os.path.join(args.build, "cli", "ipurun")
    # torch runs on the OpenBLAS numpy loaded: run again with the kernels ipurun picks when
    # nothing is set, whatever the environment set (scripts/bench/blas_kernels.sh says why).
    unpinned = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    version = subprocess.run([ipurun, "--version"], capture_output=True, text=True, check=True, env=unpinned).stdout
    kernels = version.split("OpenBLAS kernels: ")[1].split()[0]
    if os.environ.get("OPENBLAS_CORETYPE") != kernels:
        os.environ["OPENBLAS_CORETYPE"] = kernels
        os.execv(sys.executable, [sys.executable] + sys.argv)

    print("%-20s %12s %12s %8s" % ("model (batch 1)", "ipurun", "torch", "ratio"))
    for name in models:
        # A symbolic batch axis, so an input of N samples is N batch-1 steps.
        directory = os.path.join(args.work, name + "-dynamic")
        try:
            onnx_path, input_path, _ = zoo.export(name, directory, opset=13, seed=0, dynamic_batch=True)
        except Exception as e:  # torch's exporter refuses some models; say so and go on
            print("%-20s %12s %12s %8s  export failed: %s" % (name, "n/a", "-", "-", str(e).splitlines()[0]))
            continue
        exe = os.path.join(directory, "bench-predict.ipuexe")
        compiled = subprocess.run([ipucc, "compile", onnx_path, "--mode", "infer", "--batch-size", "1", "--no-cache",
                                   "-o", exe], capture_output=True, text=True)
        if compiled.returncode != 0:
            print("%-20s %12s %12s %8s  %s" % (name, "n/a", "-", "-", zoo.last_line(compiled.stderr)))
            continue
        inputs = os.path.join(directory, "bench-input.npy")
        one = np.load(input_path)
        np.save(inputs, np.repeat(one, args.samples, axis=0))
        ours, theirs = [], []
        for _ in range(args.trials):
            ours.append(ipurun_samples_per_second(ipurun, exe, inputs))
            theirs.append(torch_samples_per_second(name, input_path, args.samples))
        o, t = statistics.median(ours), statistics.median(theirs)
        print("%-20s %12.1f %12.1f %7.2fx" % (name, o, t, o / t))
        sys.stdout.flush()
    print("(samples/s, batch 1, %d samples per trial, median of %d; torch: the faster of 1 and 2 threads; "
          "load %s)" % (args.samples, args.trials, " ".join(open("/proc/loadavg").read().split()[:3])))


if __name__ == "__main__":
    main()
