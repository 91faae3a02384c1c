#!/bin/sh
# GPU builds only (the Dockerfile with --build-arg TSUM_GPU=cuda, or a GPU machine by hand): installs
# NVIDIA's CUDA toolkit for Debian 12 from NVIDIA's apt repository and PyTorch's C++ distribution
# (libtorch, cxx11 ABI, CUDA runtime and cuDNN bundled) into /opt/libtorch. Then configure with
#   cmake -S . -B build -DTSUM_CUDA=ON -DTorch_DIR=/opt/libtorch/share/cmake/Torch
# A machine that already has a CUDA PyTorch needs none of this: point Torch_DIR at
#   $(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch
#   CUDA_VERSION   apt suffix of the toolkit, e.g. 12-4 (default)
#   LIBTORCH_URL   the libtorch zip built for that CUDA (default: 2.5.1+cu124)
set -eu
cuda="${CUDA_VERSION:-12-4}"
url="${LIBTORCH_URL:-https://download.pytorch.org/libtorch/cu124/libtorch-cxx11-abi-shared-with-deps-2.5.1%2Bcu124.zip}"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends curl ca-certificates unzip gnupg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --retry 5 -o "$tmp/keyring.deb" \
  https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb
$sudo dpkg -i "$tmp/keyring.deb"
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "cuda-toolkit-$cuda"

curl -fsSL --retry 5 -o "$tmp/libtorch.zip" "$url"
$sudo rm -rf /opt/libtorch
$sudo unzip -q "$tmp/libtorch.zip" -d /opt
test -f /opt/libtorch/share/cmake/Torch/TorchConfig.cmake
echo "install-cuda-libtorch: CUDA $cuda in /usr/local/cuda, libtorch in /opt/libtorch"
