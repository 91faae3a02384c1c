#!/usr/bin/env bash
# Compares tsum-train with the same model trained by PyTorch from Python (bench/pytorch_mnist_cnn.py)
# on the same cores, data subset, batch size, optimizer and thread count. Builds nothing.
#
# usage: bench/train_vs_pytorch.sh [path/to/tsum-train]        (default build/bin/tsum-train)
# env:   LIMIT=10000 EPOCHS=1 THREADS="1 2" REPEATS=2 BATCH=128 OPTIMIZER=adam LR=0.001
#        DATA=/usr/share/datasets/fashion-mnist PYTHON=/usr/bin/python3
#        CORES_1=0 CORES_2=0,1 ...  (cores for T threads; default 0..T-1)
# Prints training images/s (learn_end) of each, best of REPEATS, and the ratio tsum/pytorch.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-build/bin/tsum-train}"
limit="${LIMIT:-10000}"
epochs="${EPOCHS:-1}"
threads_list="${THREADS:-1 2}"
repeats="${REPEATS:-2}"
batch="${BATCH:-128}"
optimizer="${OPTIMIZER:-adam}"
lr="${LR:-0.001}"  # both sides get it: tsum-train's default depends on the optimizer
data="${DATA:-/usr/share/datasets/fashion-mnist}"
python="${PYTHON:-/usr/bin/python3}"

[[ -x "$bin" ]] || { echo "train_vs_pytorch: $bin is not an executable (build tsum-train first)" >&2; exit 2; }
"$python" -c 'import torch' 2>/dev/null || { echo "train_vs_pytorch: $python has no torch" >&2; exit 2; }
ncpu="$(nproc)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# images_per_s of the learn_end line in file $1
learn_rate() {
  sed -n 's/.*"event": *"learn_end".*"images_per_s": *\([0-9.eE+-]*\).*/\1/p' "$1" | tail -n 1
}

best() { printf '%s\n' "$@" | sort -g | tail -n 1; }

printf '%-8s %-7s %14s %14s %8s\n' threads cores tsum_img_s pytorch_img_s ratio
for t in $threads_list; do
  if (( t > ncpu )); then echo "skip threads=$t: only $ncpu CPUs" >&2; continue; fi
  var="CORES_$t"
  cores="${!var:-$(seq -s, 0 $((t - 1)))}"
  tsum_rates=() torch_rates=()
  for ((r = 0; r < repeats; r++)); do
    taskset -c "$cores" "$bin" --data "$data" --limit "$limit" --epochs "$epochs" --batch "$batch" \
      --optimizer "$optimizer" --lr "$lr" --threads "$t" --test-limit 1000 --checkpoint "$tmp/model.pt" \
      >"$tmp/tsum.jsonl" 2>"$tmp/tsum.err" || { cat "$tmp/tsum.err" >&2; exit 1; }
    tsum_rates+=("$(learn_rate "$tmp/tsum.jsonl")")
    taskset -c "$cores" "$python" "$here/pytorch_mnist_cnn.py" --data "$data" --limit "$limit" \
      --epochs "$epochs" --batch "$batch" --optimizer "$optimizer" --lr "$lr" --threads "$t" \
      >"$tmp/torch.jsonl" 2>"$tmp/torch.err" || { cat "$tmp/torch.err" >&2; exit 1; }
    torch_rates+=("$(learn_rate "$tmp/torch.jsonl")")
  done
  a="$(best "${tsum_rates[@]}")"
  b="$(best "${torch_rates[@]}")"
  awk -v t="$t" -v c="$cores" -v a="$a" -v b="$b" \
    'BEGIN { printf "%-8s %-7s %14.1f %14.1f %8.2f\n", t, c, a, b, a / b }'
done
echo "(limit=$limit epochs=$epochs batch=$batch optimizer=$optimizer, best of $repeats; load: $(cut -d' ' -f1-3 /proc/loadavg))"
