#!/usr/bin/python3
"""PyTorch DDP peer for `geomx bench RECIPE --configs ...,ddp` (bench/bench_runner.cc starts one process per
worker; run with Debian's /usr/bin/python3 and python3-torch).

Trains GeoMX's demo CNN (the same layers as nn/models/geomx_cnn.cc, 178,762 parameters) on Fashion-MNIST read from
the same IDX files, with the same per-worker batch size, optimizer (SGD with momentum and weight decay, or
Adam/AdamW), learning rate, cosine schedule with linear warm-up, number of epochs and evaluation cadence as the
recipe. The training set is split IID into `world` equal shares (a seeded shuffle; the indices differ from
geomx's because the random generators differ, the statistics do not). Gradients are all-reduced (mean) by
DistributedDataParallel over gloo every iteration, dense FP32. Weights start as geomx's do (Kaiming uniform, zero
biases; DDP broadcasts rank 0's).

Rank 0 prints JSON lines on stdout that the harness parses:
  {"event": "eval", "time_s": ..., "iteration": ..., "test_accuracy": ...}
  {"event": "done", "final_accuracy": ..., "iterations": ..., "train_seconds": ...}
time_s counts from the first training step (after the process group is up), like geomx's metrics.csv.
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_cnn import geomx_cnn  # noqa: E402  (the same layers for both peers)

MEAN, STD = 0.2860, 0.3530  # datasets/idx.cc, Fashion-MNIST


def geomx_init(model):
    """geomx's default `model.init: kaiming` (nn/init.h): weights U(-b, b), b = sqrt(6 / fan_in); biases zero."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_uniform_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    return model


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(directory, stem):
    for name in (stem + "-ubyte.gz", stem + "-ubyte", stem + ".gz", stem):
        p = os.path.join(directory, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{directory}: no {stem}[-ubyte][.gz]")


def load(directory, split):
    x = read_idx(find(directory, f"{split}-images-idx3"))
    y = read_idx(find(directory, f"{split}-labels-idx1"))
    x = (torch.from_numpy(x.astype(np.float32)) / 255.0 - MEAN) / STD
    return x.unsqueeze(1), torch.from_numpy(y.astype(np.int64))


def evaluate(model, x, y, limit):
    model.eval()
    n = len(y) if limit <= 0 else min(limit, len(y))
    correct = 0
    with torch.no_grad():
        for i in range(0, n, 500):
            correct += (model(x[i:min(i + 500, n)]).argmax(1) == y[i:min(i + 500, n)]).sum().item()
    model.train()
    return correct / n


def lr_at(args, it, total):
    lr = args.lr
    if args.schedule == "cosine":
        span = total - args.warmup
        if span > 0:
            t = min(max(it - args.warmup, 0), span)
            lr = args.lr * 0.5 * (1 + math.cos(math.pi * t / span))
    if it < args.warmup:
        lr *= (it + 1) / args.warmup
    return lr


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", default="29517")
    p.add_argument("--data", required=True)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--optimizer", default="momentum")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--schedule", default="constant")
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-limit", type=int, default=0)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    if a.optimizer not in ("momentum", "sgd", "nesterov", "adam", "adamw"):
        print(f"ddp_train.py: optimizer {a.optimizer!r} is not mirrored (momentum, sgd, nesterov, adam, adamw)",
              file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    dist.init_process_group("gloo", init_method=f"tcp://{a.master_addr}:{a.master_port}", rank=a.rank,
                            world_size=a.world)
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    perm = torch.randperm(len(ytr), generator=torch.Generator().manual_seed(a.seed))
    share = len(ytr) // a.world
    mine = perm[a.rank * share:(a.rank + 1) * share]
    model = nn.parallel.DistributedDataParallel(geomx_init(geomx_cnn(nn)))
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    elif a.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.0 if a.optimizer == "sgd" else a.momentum,
                              nesterov=a.optimizer == "nesterov", weight_decay=a.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    per_epoch = share // a.batch_size
    total = per_epoch * a.epochs
    gen = torch.Generator().manual_seed(a.seed + a.rank)
    it = 0
    dist.barrier()
    t0 = time.perf_counter()
    eval_s = 0.0

    def report(full):
        nonlocal eval_s
        if a.rank != 0:
            return 0.0
        e0 = time.perf_counter()
        acc = evaluate(model.module, xte, yte, 0 if full else a.eval_limit)
        eval_s += time.perf_counter() - e0
        print(json.dumps({"event": "eval", "time_s": time.perf_counter() - t0, "iteration": it,
                          "test_accuracy": acc}), flush=True)
        return acc

    acc = 0.0
    for epoch in range(a.epochs):
        order = mine[torch.randperm(len(mine), generator=gen)]
        for b in range(per_epoch):
            idx = order[b * a.batch_size:(b + 1) * a.batch_size]
            for g in opt.param_groups:
                g["lr"] = lr_at(a, it, total)
            opt.zero_grad()
            loss_fn(model(xtr[idx]), ytr[idx]).backward()
            opt.step()
            it += 1
            if a.eval_every > 0 and it % a.eval_every == 0 and b + 1 != per_epoch:
                report(False)
        acc = report(True)
    train_s = time.perf_counter() - t0 - eval_s
    if a.rank == 0:
        print(json.dumps({"event": "done", "final_accuracy": acc, "iterations": it, "train_seconds": train_s,
                          "torch": torch.__version__, "world": a.world}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
