#!/usr/bin/python3
"""ResNet-50 inference in PyTorch-Python, the same network as tsum-train's (workload/models/resnet50.cpp: torchvision's
ResNet-50 v1.5, stride on the 3x3 convolution, 1000 classes, 224 x 224), for bench/resnet50_cpu.sh. Written out
here because Debian has no torchvision. Run as a user would: eval(), inference_mode(), the default memory format.
Prints one JSON line: {"event": "infer", "batch", "iterations", "images_per_s", "p50_ms", "p99_ms", "threads"}.

    /usr/bin/python3 bench/pytorch_resnet50.py [--batch 1] [--iterations 100] [--warmup 3] [--threads N]
"""
import argparse
import json
import math
import time

import torch
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, width, stride):
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return self.relu(h + identity)


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        layers, inplanes = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(Bottleneck(inplanes, width, stride if i == 0 else 1))
                inplanes = width * 4
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = ResNet50().eval()
    x = torch.randn(a.batch, 3, 224, 224)
    latencies = []
    with torch.inference_mode():
        for _ in range(a.warmup):
            model(x)
        begin = time.perf_counter()
        for _ in range(a.iterations):
            t0 = time.perf_counter()
            model(x)
            latencies.append(time.perf_counter() - t0)
        seconds = time.perf_counter() - begin
    latencies.sort()

    def pct(q):
        return latencies[max(0, math.ceil(q / 100 * len(latencies)) - 1)] * 1e3

    print(json.dumps({"event": "infer", "batch": a.batch, "iterations": a.iterations,
                      "images_per_s": a.batch * a.iterations / seconds, "p50_ms": pct(50), "p99_ms": pct(99),
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
