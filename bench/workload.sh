#!/usr/bin/env bash
# tsum-train against PyTorch-Python (bench/pytorch_cnn.py, run by Debian's /usr/bin/python3) on
# the seed's MNIST CNN and Fashion-MNIST: same data subset, batch, optimizer, learning rate, epochs and
# thread count, pinned to the same cores. Builds nothing.
#
# usage: bench/workload.sh [path/to/tsum-train]        (default build/bin/tsum-train)
# env:   LIMIT=10000 EPOCHS=2 THREADS="1 2" REPEATS=2 BATCH=128 OPTIMIZER=adam LR=0.001
#        PRECISIONS="fp32 bf16" DATA=/usr/share/datasets/fashion-mnist PYTHON=/usr/bin/python3
#        CORES_1=0 CORES_2=0,1 ...  (cores for T threads; default 0..T-1)
#
# For each thread count it prints training images/s (learn_end; best of REPEATS) and peak RSS of
# tsum-train and of Python in fp32 with their ratio, then tsum-train in bf16 against Python's fp32.
# Then the targets: fp32 ratio >= 1.10 at every thread count; bf16 >= 1.9x Python's fp32 images/s
# with test accuracy within 1 point of fp32 (after EPOCHS); data loading (reading + normalizing the
# files, and gathering batches) under 3% of learn time; tsum-train's peak RSS <= Python's.
# Exit status 0 whether or not targets are met (it is a measurement); 1 when a run fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-build/bin/tsum-train}"
limit="${LIMIT:-10000}"
epochs="${EPOCHS:-2}"
threads_list="${THREADS:-1 2}"
repeats="${REPEATS:-2}"
batch="${BATCH:-128}"
optimizer="${OPTIMIZER:-adam}"
lr="${LR:-0.001}"  # both sides get it: tsum-train's default depends on the optimizer
precisions="${PRECISIONS:-fp32 bf16}"
data="${DATA:-/usr/share/datasets/fashion-mnist}"
python="${PYTHON:-/usr/bin/python3}"

[[ -x "$bin" ]] || { echo "workload: $bin is not an executable (build tsum-train first)" >&2; exit 2; }
"$python" -c 'import torch' 2>/dev/null || { echo "workload: $python has no torch" >&2; exit 2; }
ncpu="$(nproc)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Runs "$@" with stdout to $out; prints the child's peak RSS in bytes (getrusage of the children).
measured() {
  local out="$1"; shift
  "$python" -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    rc = subprocess.call(sys.argv[2:], stdout=out, stderr=open(sys.argv[1] + ".err", "wb"))
if rc:
    sys.stderr.write(open(sys.argv[1] + ".err").read())
    sys.exit(rc)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)' "$out" "$@"
}

# field NAME of the last EVENT line in file $1
field() { sed -n "s/.*\"event\": *\"$2\".*\"$3\": *\([0-9.eE+-]*\).*/\1/p" "$1" | tail -n 1; }
best() { printf '%s\n' "$@" | sort -g | tail -n 1; }
least() { printf '%s\n' "$@" | sort -g | head -n 1; }

declare -A rate acc rss frac
for t in $threads_list; do
  if (( t > ncpu )); then echo "skip threads=$t: only $ncpu CPUs" >&2; continue; fi
  var="CORES_$t"
  cores="${!var:-$(seq -s, 0 $((t - 1)))}"
  for side in $(for p in $precisions; do echo "tsum-$p"; done) python-fp32; do
    rates=() rsses=() fracs=()
    for ((r = 0; r < repeats; r++)); do
      out="$tmp/$side-$t.jsonl"
      common=(--data "$data" --limit "$limit" --epochs "$epochs" --batch "$batch" --optimizer "$optimizer"
              --lr "$lr" --threads "$t")
      if [[ "$side" == python-* ]]; then
        rsses+=("$(measured "$out" taskset -c "$cores" "$python" "$here/pytorch_cnn.py" "${common[@]}" \
                   --precision "${side#python-}")") || exit 1
      else
        rsses+=("$(measured "$out" taskset -c "$cores" "$bin" "${common[@]}" --precision "${side#tsum-}" \
                   --checkpoint "$tmp/model.pt")") || exit 1
        fracs+=("$(field "$out" learn_end data_fraction)")
      fi
      rates+=("$(field "$out" learn_end images_per_s)")
    done
    rate[$side,$t]="$(best "${rates[@]}")"
    rss[$side,$t]="$(least "${rsses[@]}")"
    acc[$side,$t]="$(field "$out" verify test_accuracy)"
    [[ ${#fracs[@]} -gt 0 ]] && frac[$side,$t]="$(least "${fracs[@]}")"
  done
done

printf '%-7s %-10s %11s %8s %9s %9s %10s\n' threads run img_s vs_py_fp32 test_acc rss_MiB data_share
for t in $threads_list; do
  (( t > ncpu )) && continue
  for side in $(for p in $precisions; do echo "tsum-$p"; done) python-fp32; do
    awk -v t="$t" -v s="$side" -v r="${rate[$side,$t]}" -v b="${rate[python-fp32,$t]}" -v a="${acc[$side,$t]}" \
        -v m="${rss[$side,$t]}" -v f="${frac[$side,$t]:-}" \
      'BEGIN { printf "%-7s %-10s %11.1f %8.2fx %9.4f %9.0f %10s\n", t, s, r, r / b, a, m / 1048576,
               (f == "" ? "-" : sprintf("%.2f%%", f * 100)) }'
  done
done

echo "targets:"
verdict() { if awk "BEGIN { exit !($1) }"; then echo "met"; else echo "NOT met"; fi; }
for t in $threads_list; do
  (( t > ncpu )) && continue
  py="${rate[python-fp32,$t]}"
  echo "  threads=$t fp32 ratio >= 1.10: $(verdict "${rate[tsum-fp32,$t]} / $py >= 1.10")"
  if [[ -n "${rate[tsum-bf16,$t]:-}" ]]; then
    echo "  threads=$t bf16 >= 1.9x python fp32: $(verdict "${rate[tsum-bf16,$t]} / $py >= 1.9")" \
         "(CPU bf16: $(sed -n 's/.*"cpu_bf16": *"\([a-z0-9_]*\)".*/\1/p' "$tmp/tsum-bf16-$t.jsonl" | head -n 1))"
    echo "  threads=$t bf16 accuracy within 1 point of fp32: $(verdict \
         "(${acc[tsum-bf16,$t]} - ${acc[tsum-fp32,$t]}) * 100 <= 1 && (${acc[tsum-fp32,$t]} - ${acc[tsum-bf16,$t]}) * 100 <= 1")"
  fi
  echo "  threads=$t data loading < 3% of learn: $(verdict "${frac[tsum-fp32,$t]} < 0.03")"
  echo "  threads=$t peak RSS <= python's: $(verdict "${rss[tsum-fp32,$t]} <= ${rss[python-fp32,$t]}")"
done
echo "(limit=$limit epochs=$epochs batch=$batch optimizer=$optimizer lr=$lr, best of $repeats;" \
     "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); load: $(cut -d' ' -f1-3 /proc/loadavg))"
