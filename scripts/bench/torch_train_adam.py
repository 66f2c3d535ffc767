#!/usr/bin/python3
"""The PyTorch peer of the Adam rows of scripts/bench/train_mlp.sh.

The shared peer script (../shared/peers/torch_train_bench.py) trains with SGD only. This one runs
its training loop unchanged but for the optimizer: the same MLP (make_models.build('mlp'), the same
initial weights), the same synthetic MNIST, batches in order, mean cross-entropy on logits, and
torch.optim.Adam with ipucc's defaults (Keras's: lr 0.001, betas 0.9 / 0.999, eps 1e-7), so both
sides do the same work per step. One warm-up epoch, then --epochs timed epochs.

    /usr/bin/python3 torch_train_adam.py --peers DIR --batch 32 --epochs 2 --threads 1 --json out.json
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peers", required=True, help="the peers folder (make_models.py, synthetic_mnist.py)")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs after the warm-up epoch")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()

    sys.path.insert(0, args.peers)
    import torch
    import torch.nn.functional as F
    import make_models
    import synthetic_mnist

    torch.set_num_threads(args.threads)
    images, labels = synthetic_mnist.make()
    X, y = torch.from_numpy(images), torch.from_numpy(labels).long()
    model = make_models.build("mlp").train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    n_batches = X.shape[0] // args.batch
    seconds = []
    for _ in range(args.epochs + 1):  # the first epoch is the warm-up
        t0 = time.perf_counter()
        for b in range(n_batches):
            xb = X[b * args.batch:(b + 1) * args.batch]
            yb = y[b * args.batch:(b + 1) * args.batch]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
        seconds.append(time.perf_counter() - t0)
    timed = seconds[1:]
    rate = len(timed) * n_batches * args.batch / sum(timed)
    with open(args.json, "w") as f:
        json.dump({"batch_size": args.batch, "samples_per_s": rate, "epoch_seconds": seconds}, f)


if __name__ == "__main__":
    main()
