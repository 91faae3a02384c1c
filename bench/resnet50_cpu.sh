#!/usr/bin/env bash
# ResNet-50 inference on the CPU, tsum-train against PyTorch-Python (issue 53): `tsum-train infer --model resnet50
# --mode sync --source memory` and bench/pytorch_resnet50.py (the same network, written out, as a Python user runs
# it) on the same cores with the same threads, images/s at each batch. ROUNDS pairs run back to back, each side
# the same number of batches after 3 unmeasured ones, so both sides' figures come from the same minutes (this
# machine's speed drifts 10-25% within an hour); the ratio is the median of the rounds' ratios.
#
# usage: bench/resnet50_cpu.sh [path/to/tsum-train]        (default build/bin/tsum-train)
# env:   BATCHES="1" ROUNDS=5 ITERATIONS=60 THREADS (default: the usable CPUs) PYTHON=/usr/bin/python3
# Goal: at batch 1, tsum-train / PyTorch-Python >= 1.10. Exit status 0 whether or not it is met; 1 when a run fails.
set -euo pipefail
bin="${1:-build/bin/tsum-train}"
py="${PYTHON:-/usr/bin/python3}"
here="$(cd "$(dirname "$0")" && pwd)"
rounds="${ROUNDS:-5}"
iterations="${ITERATIONS:-60}"
threads="${THREADS:-$(nproc)}"
[[ -x "$bin" ]] || { echo "resnet50_cpu: $bin is not an executable (build tsum-train first)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
torch="$("$py" -c 'import torch; print(torch.__version__)')"
echo "resnet50_cpu: $(nproc) cores, $cpu, $threads threads, PyTorch $torch, $(date -u +%F)"
"$bin" gen-images "$tmp/img" --n 32 >/dev/null
echo
echo "| batch | tsum-train img/s | PyTorch-Python img/s | ratio (median of $rounds rounds) | rounds |"
echo "|---|---|---|---|---|"
for b in ${BATCHES:-1}; do
  : > "$tmp/pairs"
  for r in $(seq "$rounds"); do
    "$bin" infer --model resnet50 --batch "$b" --mode sync --source memory --iterations "$iterations" --warmup 3 \
      --threads "$threads" --images "$tmp/img" > "$tmp/tsum.$r" 2> "$tmp/tsum.err" || { cat "$tmp/tsum.err" >&2; exit 1; }
    "$py" "$here/pytorch_resnet50.py" --batch "$b" --iterations "$iterations" --warmup 3 --threads "$threads" \
      > "$tmp/py.$r" 2> "$tmp/py.err" || { cat "$tmp/py.err" >&2; exit 1; }
    "$py" - "$tmp/tsum.$r" "$tmp/py.$r" >> "$tmp/pairs" <<'PY'
import json, sys
def ips(path):
    return [json.loads(l) for l in open(path) if l.startswith("{") and '"infer"' in l][-1]["images_per_s"]
print(ips(sys.argv[1]), ips(sys.argv[2]))
PY
  done
  "$py" - "$b" "$tmp/pairs" <<'PY'
import statistics, sys
b, path = sys.argv[1], sys.argv[2]
pairs = [tuple(map(float, l.split())) for l in open(path)]
ratios = [t / p for t, p in pairs]
t, p, r = (statistics.median(v) for v in ([t for t, _ in pairs], [p for _, p in pairs], ratios))
goal = "" if b != "1" else (" (goal >= 1.10: met)" if r >= 1.10 else " (goal >= 1.10: NOT met)")
print(f"| {b} | {t:.2f} | {p:.2f} | {r:.3f}{goal} | " + ", ".join(f"{x:.3f}" for x in ratios) + " |")
PY
done
