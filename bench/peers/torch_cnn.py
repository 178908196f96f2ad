#!/usr/bin/python3
"""PyTorch peer for `geomx bench kernels`: training samples/s of GeoMX's demo CNN on random Fashion-MNIST-shaped
batches (the same architecture, loss, optimizer and batch sizes as the geomx side). Prints one JSON object per
configuration on stdout. Run with Debian's /usr/bin/python3 (python3-torch)."""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn


def geomx_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(512, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10))


def measure(batch, threads, iterations, warmup):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = geomx_cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    for i in range(warmup + iterations):
        if i == warmup:
            t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    return batch * iterations / dt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-sizes", default="32,64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    a = p.parse_args()
    params = sum(p.numel() for p in geomx_cnn().parameters())
    for b in [int(v) for v in a.batch_sizes.split(",")]:
        for t in [int(v) for v in a.threads.split(",")]:
            sps = measure(b, t, a.iterations, a.warmup)
            print(json.dumps({"batch": b, "threads": t, "samples_per_second": sps,
                              "torch": torch.__version__, "parameters": params}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
