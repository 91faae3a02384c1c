#!/usr/bin/python3
"""PyTorch (Python) twin of `tsum-train --model mnist_cnn` and `--model cifar10_cnn`, for benchmarking.

Same network (Keras mnist_cnn or cifar10_cnn), same data (the first --limit training images of Fashion-MNIST, or a
CIFAR-10 binary directory such as `tsum-train gen-cifar` writes; normalized x/255 once and preloaded as tensors on
the device), same batch size, optimizer, learning rate and intra-op thread count, same per-epoch bookkeeping (loss
and train accuracy summed on the device and read once an epoch), same precision (fp32; bf16 autocast on the CPU or
CUDA with the loss in fp32; fp16 CUDA autocast with torch.amp.GradScaler). Prints one JSON line per epoch, a
learn_end line with images_per_s and a verify line with the test accuracy, like tsum-train.

Run with a Python that has torch (Debian's /usr/bin/python3 here; the GPU machine's python3 there):
  /usr/bin/python3 bench/pytorch_cnn.py --limit 10000
  python3 bench/pytorch_cnn.py --model cifar10_cnn --data DIR --device cuda --precision bf16
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


def load_cifar(data_dir, split, limit):
    """CIFAR-10 binary batches: records of one label byte and 3x32x32 pixel bytes (CHW)."""
    names = ["data_batch_%d.bin" % i for i in range(1, 6)] if split == "train" else ["test_batch.bin"]
    raw = b"".join(open(os.path.join(data_dir, n), "rb").read() for n in names)
    records = torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(-1, 3073)
    if limit:
        records = records[:limit]
    x = records[:, 1:].reshape(-1, 3, 32, 32).to(torch.float32).div_(255.0).contiguous()
    y = records[:, 0].to(torch.int64)
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


class Cifar10Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 3)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv4 = nn.Conv2d(64, 64, 3)
        self.fc1 = nn.Linear(64 * 6 * 6, 512)
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.dropout(x, 0.25, self.training)
        x = F.relu(self.conv3(x))
        x = F.max_pool2d(F.relu(self.conv4(x)), 2)
        x = F.dropout(x, 0.25, self.training)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = F.dropout(x, 0.5, self.training)
        return self.fc2(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mnist_cnn", choices=["mnist_cnn", "cifar10_cnn"])
    p.add_argument("--data", default=None, help="default: /usr/share/datasets/fashion-mnist (mnist_cnn)")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--test-limit", type=int, default=0)
    a = p.parse_args()

    device = torch.device(a.device)
    cuda = device.type == "cuda"
    if a.precision == "fp16" and not cuda:
        p.error("--precision fp16 runs on cuda only")
    torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = (MnistCnn() if a.model == "mnist_cnn" else Cifar10Cnn()).to(device)
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    low = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[a.precision]
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):  # PyTorch 2.3 on
        scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")
    else:
        scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "fp16")
    if a.model == "mnist_cnn":
        data = a.data or "/usr/share/datasets/fashion-mnist"
        x, y = load(data, "train", a.limit)
    else:
        data = a.data
        x, y = load_cifar(data, "train", a.limit)
    x, y = x.to(device), y.to(device)
    n = x.shape[0]
    print(json.dumps({"event": "ready", "model": a.model, "device": str(device), "precision": a.precision,
                      "threads": torch.get_num_threads(), "train_images": n, "torch": torch.__version__}),
          flush=True)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    total = 0.0
    for epoch in range(1, a.epochs + 1):
        model.train()
        sync()
        start = time.perf_counter()
        order = torch.randperm(n, device=device)
        loss_sum = torch.zeros((), dtype=torch.float64, device=device)
        correct = torch.zeros((), dtype=torch.int64, device=device)
        for begin in range(0, n, a.batch):
            idx = order[begin:begin + a.batch]
            xb, yb = x.index_select(0, idx), y.index_select(0, idx)
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=low, enabled=low is not None):
                logits = model(xb).float()
            loss = F.cross_entropy(logits, yb)
            if scaler.is_enabled():
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            loss_sum += loss.detach() * idx.numel()
            correct += (logits.argmax(1) == yb).sum()
        loss_mean, right = loss_sum.item() / n, correct.item()
        seconds = time.perf_counter() - start
        total += seconds
        print(json.dumps({"event": "epoch", "epoch": epoch, "loss": loss_mean,
                          "train_accuracy": right / n, "images_per_s": n / seconds,
                          "seconds": seconds}), flush=True)
    print(json.dumps({"event": "learn_end", "epochs": a.epochs, "seconds": total,
                      "images_per_s": n * a.epochs / total}), flush=True)

    if a.model == "mnist_cnn":
        tx, ty = load(data, "t10k", a.test_limit)
    else:
        tx, ty = load_cifar(data, "test", a.test_limit)
    tx, ty = tx.to(device), ty.to(device)
    model.eval()
    correct = 0
    with torch.inference_mode(), torch.autocast(device.type, dtype=low, enabled=low is not None):
        for begin in range(0, tx.shape[0], a.batch):
            logits = model(tx[begin:begin + a.batch]).float()
            correct += (logits.argmax(1) == ty[begin:begin + a.batch]).sum().item()
    print(json.dumps({"event": "verify", "test_accuracy": correct / tx.shape[0],
                      "test_images": tx.shape[0]}), flush=True)


if __name__ == "__main__":
    main()
