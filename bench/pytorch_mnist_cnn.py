#!/usr/bin/python3
"""PyTorch (Python) twin of `tsum-train --model mnist_cnn`, for benchmarking.

Same network (Keras mnist_cnn), same data subset (first --limit training images of Fashion-MNIST,
normalized x/255 once, preloaded as tensors), same batch size, optimizer, learning rate and intra-op
thread count, same per-epoch bookkeeping (loss and train accuracy), same precision (fp32, or bf16 CPU autocast
with the loss in fp32). Prints one JSON line per epoch, a learn_end line with images_per_s and a
verify line with the test accuracy, like tsum-train.

Run with Debian's Python, which has torch:  /usr/bin/python3 bench/pytorch_mnist_cnn.py --limit 10000
"""
import argparse
import gzip
import json
import os
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    payload = data[4 + 4 * ndim:]
    return torch.frombuffer(bytearray(payload), dtype=torch.uint8).reshape(dims)


def find(data_dir, name):
    for candidate in (os.path.join(data_dir, name + ".gz"), os.path.join(data_dir, name)):
        if os.path.exists(candidate):
            return candidate
    raise FileNotFoundError(os.path.join(data_dir, name + ".gz"))


def load(data_dir, prefix, limit):
    images = read_idx(find(data_dir, prefix + "-images-idx3-ubyte"))
    labels = read_idx(find(data_dir, prefix + "-labels-idx1-ubyte"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = images.unsqueeze(1).to(torch.float32).div_(255.0).contiguous()
    y = labels.to(torch.int64)
    return x, y


class MnistCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(64 * 12 * 12, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = F.dropout(x, 0.25, self.training)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, 0.5, self.training)
        return self.fc2(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--test-limit", type=int, default=0)
    a = p.parse_args()

    torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = MnistCnn()
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    bf16 = a.precision == "bf16"
    x, y = load(a.data, "train", a.limit)
    n = x.shape[0]
    print(json.dumps({"event": "ready", "threads": torch.get_num_threads(), "train_images": n,
                      "torch": torch.__version__}), flush=True)

    total = 0.0
    for epoch in range(1, a.epochs + 1):
        model.train()
        start = time.perf_counter()
        order = torch.randperm(n)
        loss_sum, correct = 0.0, 0
        for begin in range(0, n, a.batch):
            idx = order[begin:begin + a.batch]
            xb, yb = x.index_select(0, idx), y.index_select(0, idx)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(xb).float()
            loss = F.cross_entropy(logits, yb)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * idx.numel()
            correct += (logits.argmax(1) == yb).sum().item()
        seconds = time.perf_counter() - start
        total += seconds
        print(json.dumps({"event": "epoch", "epoch": epoch, "loss": loss_sum / n,
                          "train_accuracy": correct / n, "images_per_s": n / seconds,
                          "seconds": seconds}), flush=True)
    print(json.dumps({"event": "learn_end", "epochs": a.epochs, "seconds": total,
                      "images_per_s": n * a.epochs / total}), flush=True)

    tx, ty = load(a.data, "t10k", a.test_limit)
    model.eval()
    correct = 0
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for begin in range(0, tx.shape[0], a.batch):
            logits = model(tx[begin:begin + a.batch]).float()
            correct += (logits.argmax(1) == ty[begin:begin + a.batch]).sum().item()
    print(json.dumps({"event": "verify", "test_accuracy": correct / tx.shape[0],
                      "test_images": tx.shape[0]}), flush=True)


if __name__ == "__main__":
    main()
