#!/bin/sh
# tsum-train against PyTorch-Python on one GPU (bench/pytorch_cnn.py, same model, data, batch, optimizer and
# precision), the ResNet-50 inference sweep, and what the GPU achieves (tsum-train probe-gpu). Run after
# scripts/gpu-check.sh, which builds BUILD_DIR:
#   sh bench/gpu.sh [BUILD_DIR]          (default build-gpu)
# Environment: PYTHON (python3, with a CUDA torch), DATA (Fashion-MNIST; default .gpu/data/fashion-mnist where
# scripts/gpu-deps.sh put it, else Debian's), EPOCHS (3; images/s is the mean of the epochs after the first, which
# pays for cuDNN's algorithm search and the allocator's warm-up), CIFAR_N (20000 generated CIFAR-10 images),
# RESULTS (BUILD_DIR/gpu-bench: every run's events); to try the script on a CPU: DEVICE (cuda), LIMIT (0: all of
# Fashion-MNIST), MODELS ("mnist_cnn cifar10_cnn"), PRECISIONS ("fp32 bf16 fp16"), BATCHES (the sweep's,
# 1,2,...,256), INFER (0: leave out the sweep and the probe).
# Prints Markdown tables with the GPU's and CPU's names; the goal line compares the MNIST CNN in fp32 with 1.2x.
set -eu
build=${1:-build-gpu}
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
train="$build/bin/tsum-train"
results=${RESULTS:-$build/gpu-bench}
epochs=${EPOCHS:-3}
device=${DEVICE:-cuda}
data=${DATA:-}
[ -n "$data" ] || { [ -d .gpu/data/fashion-mnist ] && data=.gpu/data/fashion-mnist || data=/usr/share/datasets/fashion-mnist; }
if [ -d .gpu/prefix/lib ]; then
  LD_LIBRARY_PATH="$(pwd)/.gpu/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi
mkdir -p "$results"

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo none)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
torch=$($py -c 'import torch; print(torch.__version__)')
echo "GPU: $gpu; CPU: $cpu, $(nproc) CPUs; PyTorch $torch (both sides use its libtorch)"

# mean images/s of the epochs after the first, from a run's events
rate() {
  $py -c 'import json, sys
rates = [e["images_per_s"] for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "epoch" and e["epoch"] > 1]
print("%.0f" % (sum(rates) / len(rates)) if rates else "failed")' "$1"
}

"$train" gen-cifar "$results/cifar" --n "${CIFAR_N:-20000}" > /dev/null
echo
echo "| model | precision | tsum-train images/s | PyTorch-Python images/s | ratio |"
echo "|---|---|---|---|---|"
goal="-"
for model in ${MODELS:-mnist_cnn cifar10_cnn}; do
  if [ "$model" = mnist_cnn ]; then dir=$data; else dir=$results/cifar; fi
  for precision in ${PRECISIONS:-fp32 bf16 fp16}; do
    common="--epochs $epochs --batch 128 --lr 0.001 --optimizer adam --device $device --precision $precision"
    common="$common --data $dir${LIMIT:+ --limit $LIMIT}"
    log="$results/$model-$precision"
    # shellcheck disable=SC2086  # common is a list of flags
    "$train" --model "$model" $common --decay 0 --test-limit 1000 --checkpoint "$results/model.pt" \
      > "$log-tsum.jsonl" 2> "$log-tsum.err" || true
    # shellcheck disable=SC2086
    $py "$here/pytorch_cnn.py" --model "$model" $common --test-limit 1000 > "$log-python.jsonl" 2> "$log-python.err" ||
      true
    t=$(rate "$log-tsum.jsonl"); p=$(rate "$log-python.jsonl")
    ratio=$($py -c 'import sys; t, p = sys.argv[1:]; print("%.2fx" % (float(t) / float(p)) if t != "failed" != p else "-")' "$t" "$p")
    echo "| $model | $precision | $t | $p | $ratio |"
    [ "$model-$precision" = mnist_cnn-fp32 ] && goal="$ratio"
  done
done
echo
echo "Goal: tsum-train >= 1.2x PyTorch-Python on the MNIST CNN (fp32): $goal"

[ "${INFER:-1}" = 1 ] || exit 0
echo
"$train" gen-images "$results/images" --n 256 --size 224 > /dev/null
echo "ResNet-50 inference (fp32, 1000 classes, 224x224 JPEGs; images/s by batch size):"
echo
echo "| mode | source | 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128 | 256 |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for run in "sync files" "async files" "async memory"; do
  # shellcheck disable=SC2086  # two words: mode and source
  set -- $run
  "$train" infer --model resnet50 --device "$device" --batch "${BATCHES:-1,2,4,8,16,32,64,128,256}" --mode "$1" --source "$2" \
    --images "$results/images" --iterations 5 --warmup 2 > "$results/infer-$1-$2.jsonl" 2> "$results/infer-$1-$2.err" || true
  row=$($py -c 'import json, sys
r = {e["batch"]: e["images_per_s"] for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "infer"}
print(" | ".join("%.0f" % r[b] if b in r else "-" for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)))' "$results/infer-$1-$2.jsonl")
  echo "| $1 | $2 | $row |"
done

echo
"$train" probe-gpu --budget-s 2 > "$results/probe.jsonl" || { echo "GPU probe: failed"; exit 0; }
$py -c 'import json, sys
e = json.loads(open(sys.argv[1]).readline())
print("GPU probe (%s, %d SMs, %.0f GiB): matmul bf16 %.0f TFLOP/s, fp32 %.1f TFLOP/s; device copy %.0f GB/s (read + write); %.1f s"
      % (e["name"], e["multiprocessors"], e["memory_bytes"] / 2**30, e["matmul_bf16_tflops"] or 0,
         e["matmul_fp32_tflops"] or 0, e["copy_gbps"], e["seconds"]))' "$results/probe.jsonl"
