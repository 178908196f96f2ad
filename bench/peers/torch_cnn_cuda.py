#!/usr/bin/env python3
"""PyTorch side of the GPU throughput tables in docs/benchmarks.md ("GPU").

--model cnn: the geomx-cnn network (torch_cnn.py's geomx_cnn) trained on cuda:0 with SGD, momentum 0.9 and weight
decay 5e-4 (recipes/quickstart.yaml's optimizer). --model rnn: geomx's `rnn` model (recipes/fashion_rnn.yaml), an
LSTM with 128 hidden units over the 28 rows of each image and a linear layer on its last hidden state (cuDNN's
LSTM through torch.nn.LSTM), trained with Adam; --model gru: the same with a GRU (model.cell: gru). All on real
Fashion-MNIST batches in a fixed random order, each built on the host and copied to the GPU; the loss and the
batch accuracy are read every step, as geomx reads them.
Prints one JSON line per batch size: {"peer", "model", "batch", "samples_per_second"}. The geomx side is
`geomx train RECIPE --set device=cuda --set data.batch_size=B --set training.max_iterations=N` (summary.json:
samples / train_seconds).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_cnn as tc  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="directory with train-images-idx3-ubyte[.gz] and its labels")
    p.add_argument("--model", choices=["cnn", "rnn", "gru"], default="cnn")
    p.add_argument("--batch-sizes", default="32,64,256")
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=50)
    a = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit("torch_cnn_cuda.py: PyTorch sees no CUDA device")
    images = tc.read_idx(tc.find_idx(a.data, "images", "idx3"), 3)
    labels = tc.read_idx(tc.find_idx(a.data, "labels", "idx1"), 1).astype(np.int64)
    order = np.random.default_rng(0).permutation(images.shape[0])
    lut = (np.arange(256, dtype=np.float32) / np.float32(255.0) - tc.MEAN) / tc.STD
    dev = torch.device("cuda:0")
    for batch in (int(b) for b in a.batch_sizes.split(",")):
        torch.manual_seed(0)
        if a.model == "cnn":
            model = tc.geomx_cnn(torch.nn).to(dev)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
        else:
            model = tc.row_rnn(torch.nn, torch.nn.LSTM if a.model == "rnn" else torch.nn.GRU).to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=0.002)
        loss_fn = torch.nn.CrossEntropyLoss()
        for i in range(a.warmup + a.iterations):
            if i == a.warmup:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            xa, ya = tc.batch_arrays(images, labels, order, lut, i, batch)
            x, y = torch.from_numpy(xa).to(dev), torch.from_numpy(ya).to(dev)
            opt.zero_grad(set_to_none=True)
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            opt.step()
            loss.item()
            (logits.detach().argmax(1) == y).sum().item()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        print(json.dumps({"peer": "torch " + torch.__version__, "model": a.model, "batch": batch,
                          "samples_per_second": batch * a.iterations / dt}), flush=True)


if __name__ == "__main__":
    main()
