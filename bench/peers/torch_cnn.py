#!/usr/bin/python3
"""PyTorch peer for `geomx bench kernels`: training samples/s of GeoMX's demo CNN (--model cnn), of geomx's `rnn`
model with an LSTM or GRU of 128 units over the 28 rows (--model lstm|gru) or of the gan algorithm's step (--model
gan: two MLPs, see measure_gan) on real Fashion-MNIST batches, with
the same architecture, loss, optimizer (Adam, lr 1e-3), batch sizes, threads, warm-up and iterations as the
geomx side, and the same batches in the same order (bench/kernels_data.h):

  - the training images and labels are read from the IDX files in --data (gzip or raw, as geomx finds them) with
    gzip + numpy; pixels stay uint8 until a batch is built, as in geomx's data set;
  - --order is the example order geomx computed (a permutation of the n training examples, raw little-endian
    int64); batch b of size B holds examples order[(b*B + j) mod n], j < B, and every configuration starts at b = 0;
  - each step assembles its batch inside the timed loop, like geomx's loader: gather the uint8 images and the labels
    of the batch's examples, normalise through a 256-entry float32 table (x/255 - 0.2860)/0.3530 (geomx's table,
    bit for bit), then torch.from_numpy (no copy);
  - then zero_grad, forward, cross-entropy, backward, Adam step, and the loss and correct count read back (geomx's
    TrainStep reads both too).

Prints one JSON object per configuration on stdout. With --checksum K it trains nothing and does not import torch:
it prints the labels and pixel sums of the first K batches of the first --batch-sizes value, for the test that
checks both sides see the same data (tests/bench/kernels_data_test.cc). Run with Debian's /usr/bin/python3
(python3-torch, python3-numpy)."""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np

MEAN, STD = np.float32(0.2860), np.float32(0.3530)  # geomx's fashion-mnist constants (datasets/idx.cc)


def find_idx(data_dir, kind, idx_n):
    """train-<kind>-<idx_n>-ubyte[.gz], or the train-<kind>.<idx_n>-ubyte spelling, as geomx looks for it."""
    for sep in ("-", "."):
        for ext in (".gz", ""):
            path = os.path.join(data_dir, "train-%s%s%s-ubyte%s" % (kind, sep, idx_n, ext))
            if os.path.isfile(path):
                return path
    sys.exit("torch_cnn.py: %s: no train-%s-%s-ubyte[.gz]" % (data_dir, kind, idx_n))


def read_idx(path, ndims):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 + 4 * ndims or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08 or raw[3] != ndims:
        sys.exit("torch_cnn.py: %s: not a %d-d uint8 IDX file" % (path, ndims))
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims)
    if data.size != int(np.prod(dims)):
        sys.exit("torch_cnn.py: %s: %d bytes of data for dims %s" % (path, data.size, dims))
    return data.reshape(dims)


def load(data_dir, order_path):
    images = read_idx(find_idx(data_dir, "images", "idx3"), 3)
    labels = read_idx(find_idx(data_dir, "labels", "idx1"), 1).astype(np.int64)
    if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28):
        sys.exit("torch_cnn.py: %s: expected N 28x28 images and N labels, got %s and %s"
                 % (data_dir, images.shape, labels.shape))
    order = np.fromfile(order_path, dtype="<i8")
    n = images.shape[0]
    if order.size != n or order.min() < 0 or order.max() >= n or np.bincount(order, minlength=n).max() != 1:
        sys.exit("torch_cnn.py: %s: expected a permutation of the %d training examples"
                 % (order_path, n))
    lut = (np.arange(256, dtype=np.float32) / np.float32(255.0) - MEAN) / STD
    return images, labels, order.astype(np.intp), lut


def batch_arrays(images, labels, order, lut, b, batch):
    """Batch b of size `batch`: x float32 [batch, 1, 28, 28] (normalised), y int64 [batch]."""
    n = order.size
    start = (b * batch) % n
    if start + batch <= n:
        idx = order[start:start + batch]
    else:
        idx = order[(np.arange(batch) + b * batch) % n]
    x = lut[images[idx]].reshape(batch, 1, 28, 28)
    return x, labels[idx]


def geomx_cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(512, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10))


def row_rnn(nn, layer):
    """geomx's `rnn` model: [N, 1, 28, 28] -> 28 steps of 28 values -> LSTM or GRU(128) -> last h -> Linear(10)."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = layer(28, 128, batch_first=True)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            out, _ = self.rnn(x.reshape(x.shape[0], 28, 28))
            return self.fc(out[:, -1, :])
    return Net()


def gan_nets(nn):
    """The gan algorithm's networks (algorithms/estimators/gan.h): G 100-256-512-784 (ReLU, ReLU, tanh) and
    D 784-512-256-1 (leaky ReLU 0.2, a logit)."""
    g = nn.Sequential(nn.Linear(100, 256), nn.ReLU(), nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 784), nn.Tanh())
    d = nn.Sequential(nn.Linear(784, 512), nn.LeakyReLU(0.2), nn.Linear(512, 256), nn.LeakyReLU(0.2),
                      nn.Linear(256, 1))
    return g, d


def measure_gan(torch, data, batch, threads, iterations, warmup, intra_op=None):
    """(samples/s, mean D loss): the gan step as geomx's GanTrainer::Step runs it, PyTorch's DCGAN example loop.
    fake = G(z); D step on cat(x, fake.detach()) against (1, 0) targets (the sum of the two mean BCEs); then the G
    step, BCE(D(fake), 1), with D's parameters not requiring grad; Adam (2e-4, betas 0.5, 0.999) for each. The real
    batch is the cnn's, mapped back to [-1, 1] ((x * 0.3530 + 0.2860) * 2 - 1)."""
    images, labels, order, lut = data
    set_threads(torch, threads, intra_op)
    torch.manual_seed(0)
    g, d = gan_nets(torch.nn)
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = torch.nn.BCEWithLogitsLoss()
    d_targets = torch.cat([torch.ones(batch, 1), torch.zeros(batch, 1)])
    g_targets = torch.ones(batch, 1)
    loss_sum = 0.0
    for i in range(warmup + iterations):
        if i == warmup:
            t0 = time.perf_counter()
        xa, _ = batch_arrays(images, labels, order, lut, i, batch)
        x = (torch.from_numpy(xa).reshape(batch, 784) * STD + MEAN) * 2 - 1
        z = torch.randn(batch, 100)
        fake = g(z)
        opt_d.zero_grad(set_to_none=True)
        loss_d = bce(d(torch.cat([x, fake.detach()])), d_targets) * 2
        loss_d.backward()
        opt_d.step()
        for p in d.parameters():
            p.requires_grad_(False)
        opt_g.zero_grad(set_to_none=True)
        loss_g = bce(d(fake), g_targets)
        loss_g.backward()
        opt_g.step()
        for p in d.parameters():
            p.requires_grad_(True)
        step_loss = loss_d.item()
        _g_loss = loss_g.item()
        if i >= warmup:
            loss_sum += step_loss
    dt = time.perf_counter() - t0
    return batch * iterations / dt, loss_sum / iterations


def build(nn, model):
    """--model: cnn (geomx-cnn), lstm or gru (geomx's rnn model with model.cell lstm / gru, 128 hidden units)."""
    if model == "cnn":
        return geomx_cnn(nn)
    return row_rnn(nn, nn.LSTM if model == "lstm" else nn.GRU)


def set_threads(torch, threads, intra_op=None):
    """torch's intra-op threads (`intra_op`, default `threads`) and, when torch's GEMMs run on OpenBLAS, OpenBLAS's
    own pool (torch.set_num_threads does not reach it: it would start one thread per core). threadpoolctl comes
    with python3-sklearn."""
    torch.set_num_threads(intra_op or threads)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=threads, user_api="blas")
    except ImportError:
        pass


# With more than one thread the peer is measured in two thread layouts and keeps the faster: "shared" (torch's
# intra-op pool and the BLAS pool both `threads` wide, what torch.set_num_threads gives) and "blas" (one intra-op
# thread, the BLAS pool `threads` wide). With Debian's torch, whose GEMMs run on OpenBLAS's pthreads pool, the
# intra-op OpenMP threads spin while OpenBLAS's threads run, and on a 2-core machine the recurrent models' many
# small GEMMs slow down 2-3x in the shared layout (docs/benchmarks.md); a wheel with MKL has one pool and no such
# clash. Each side is thus compared with the peer's best use of the same number of cores.
LAYOUTS = {"shared": None, "blas": 1}


def best_layout(run, threads):
    """run(intra_op) -> (samples/s, loss); returns (samples/s, loss, layout name) of the faster layout."""
    if threads == 1:
        return run(None) + ("shared",)
    results = [run(intra) + (name,) for name, intra in LAYOUTS.items()]
    return max(results, key=lambda r: r[0])


def measure(torch, data, batch, threads, iterations, warmup, model_name="cnn", intra_op=None):
    """(samples/s, mean loss of the timed steps)."""
    images, labels, order, lut = data
    set_threads(torch, threads, intra_op)
    torch.manual_seed(0)
    model = build(torch.nn, model_name)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    loss_sum = 0.0
    for i in range(warmup + iterations):
        if i == warmup:
            t0 = time.perf_counter()
        xa, ya = batch_arrays(images, labels, order, lut, i, batch)
        x, y = torch.from_numpy(xa), torch.from_numpy(ya)
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        opt.step()
        step_loss = loss.item()
        _correct = (logits.detach().argmax(1) == y).sum().item()
        if i >= warmup:
            loss_sum += step_loss
    dt = time.perf_counter() - t0
    return batch * iterations / dt, loss_sum / iterations


def checksum(data, batch, batches):
    """What the data test compares with geomx's batches: labels, sums and the first values of batch 0."""
    images, labels, order, lut = data
    out = {"batch": batch, "batches": batches, "labels": [], "sum": 0.0, "weighted_sum": 0.0, "first": [],
           "dtypes": ""}
    weights = np.arange(1, batch * 28 * 28 + 1, dtype=np.float64)
    for b in range(batches):
        x, y = batch_arrays(images, labels, order, lut, b, batch)
        flat = x.reshape(-1).astype(np.float64)
        out["labels"] += [int(v) for v in y]
        out["sum"] += float(flat.sum())
        out["weighted_sum"] += float(np.dot(flat, weights))
        if b == 0:
            out["first"] = [float(v) for v in x.reshape(-1)[:16]]
            out["dtypes"] = "%s %s %s" % (x.dtype, y.dtype, list(x.shape))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True, help="directory with train-images-idx3-ubyte[.gz] and its labels")
    p.add_argument("--order", required=True, help="the example order geomx wrote (raw little-endian int64)")
    p.add_argument("--batch-sizes", default="32,64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--checksum", type=int, default=0, help="print the checksum of this many batches and exit")
    p.add_argument("--model", choices=["cnn", "lstm", "gru", "gan"], default="cnn")
    a = p.parse_args()
    data = load(a.data, a.order)
    batch_sizes = [int(v) for v in a.batch_sizes.split(",")]
    if a.checksum > 0:
        print(json.dumps(checksum(data, batch_sizes[0], a.checksum)), flush=True)
        return 0
    import torch
    torch.set_num_interop_threads(1)
    if a.model == "gan":
        params = sum(q.numel() for net in gan_nets(torch.nn) for q in net.parameters())
    else:
        params = sum(q.numel() for q in build(torch.nn, a.model).parameters())
    for b in batch_sizes:
        for t in [int(v) for v in a.threads.split(",")]:
            if a.model == "gan":
                run = lambda intra: measure_gan(torch, data, b, t, a.iterations, a.warmup, intra)  # noqa: E731
            else:
                run = lambda intra: measure(torch, data, b, t, a.iterations, a.warmup, a.model, intra)  # noqa: E731
            sps, loss, layout = best_layout(run, t)
            print(json.dumps({"batch": b, "threads": t, "samples_per_second": sps, "mean_loss": loss,
                              "torch": torch.__version__, "parameters": params, "layout": layout}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
