#!/usr/bin/python3
"""A user's own PyTorch training job, as tsum runs it: in an image (workload {"image", "command", "dataset"}), or
as a folder job (job.yaml: this folder, its setup and its run).

tsum gives the data set (read-only) in TSUM_DATA_DIR and a writable TSUM_OUT_DIR (every file there is uploaded as
an artifact): /tsum/data and /tsum/out in an image. TSUM_EVENTS names a path where the job writes its phase marks
as JSON lines. What it prints reaches `tsumd runs logs ID -f` as it is printed. This job trains
the seed's MNIST CNN on the IDX files it finds and marks start (model built, data in memory), learn (the epochs,
one "epoch" event each) and verify (the test pass); a job that writes no marks is timed as one learn phase.
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

EVENTS = os.environ.get("TSUM_EVENTS")


def mark(**line):
    """One JSON line to tsum (nothing when run outside tsum)."""
    if EVENTS:
        with open(EVENTS, "a") as f:
            f.write(json.dumps(line) + "\n")


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = struct.unpack(">I", data[:4])[0] & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load(data_dir, prefix, limit):
    def find(name):
        for p in (os.path.join(data_dir, name + ".gz"), os.path.join(data_dir, name)):
            if os.path.exists(p):
                return p
        raise SystemExit(f"no {name} in {data_dir}")
    x = read_idx(find(prefix + "-images-idx3-ubyte"))[:limit].unsqueeze(1).float().div_(255.0)
    y = read_idx(find(prefix + "-labels-idx1-ubyte"))[:limit].long()
    return x, y


class MnistCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(64 * 12 * 12, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = F.dropout(x, 0.25, self.training)
        x = F.dropout(F.relu(self.fc1(torch.flatten(x, 1))), 0.5, self.training)
        return self.fc2(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("TSUM_DATA_DIR", "/tsum/data"))
    ap.add_argument("--out", default=os.environ.get("TSUM_OUT_DIR", "/tsum/out"))
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=60000)
    ap.add_argument("--test-limit", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; reading {a.data}")
    torch.manual_seed(1)
    x, y = load(a.data, "train", a.limit)
    tx, ty = load(a.data, "t10k", a.test_limit)
    model = MnistCnn()
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    mark(phase="start", mark="end", attrs={"threads": torch.get_num_threads()})

    mark(phase="learn", mark="begin")
    t0 = time.monotonic()
    for epoch in range(1, a.epochs + 1):
        model.train()
        perm = torch.randperm(len(x))
        total = 0.0
        for i in range(0, len(x), a.batch):
            idx = perm[i:i + a.batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            step = i // a.batch + 1
            if step % 20 == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
        mark(event="epoch", epoch=epoch, loss=total / len(x))
        print(f"epoch {epoch}: mean loss {total / len(x):.4f}")
    seconds = time.monotonic() - t0
    mark(phase="learn", mark="end", attrs={"images_per_s": a.epochs * len(x) / seconds})

    mark(phase="verify", mark="begin")
    model.eval()
    with torch.no_grad():
        acc = (model(tx).argmax(1) == ty).float().mean().item()
    mark(phase="verify", mark="end", attrs={"test_accuracy": acc})
    torch.save(model.state_dict(), os.path.join(a.out, "model.pt"))
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump({"test_accuracy": acc, "images_per_s": a.epochs * len(x) / seconds}, f)
    print(f"test accuracy {acc:.4f}, {a.epochs * len(x) / seconds:.1f} images/s")


if __name__ == "__main__":
    main()
