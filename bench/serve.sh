#!/usr/bin/env bash
# Served inference against in-process inference (issue 41): `tsum-train serve` answering `tsum-train load` over
# HTTP on this machine's loopback, against `tsum-train infer` computing the same batches in one process. Builds
# nothing.
#
# usage: bench/serve.sh [path/to/tsum-train]        (default build/bin/tsum-train)
# env:   MODEL=resnet50 BATCHES="1 4 16" CONCURRENCY="1,2,4" DEVICE=cpu PRECISION=fp32 WINDOW_S=3
#        ITERATIONS=100 (in-process measured batches for throughput at batch 1; fewer, at least 20, for larger)
#        P99_BATCHES="1 4" ROUNDS=5 P99_SAMPLES=800 (p99 at concurrency 1: see below)
#
# For each batch size B, the server runs with --max-batch B and the client sends requests of B images (seeded
# random FP32 tensors, so neither side decodes JPEGs; `infer --source memory` likewise), so a request is a batch.
# Throughput: in-process images/s of `tsum-train infer --mode sync --source memory` against the served images/s
# at saturation (the best of the concurrency levels; concurrency 1 is the seed's "sync" client, more in flight
# its "async"). Latency, for the batches in P99_BATCHES: ROUNDS pairs run back to back on the same server, each an
# in-process run of N batches and a served run of N requests at concurrency 1 (N = max(100, P99_SAMPLES / B),
# both after 3 unmeasured ones), so both sides' samples come from the same minutes: this machine's speed drifts
# 10-25% within an hour, which is larger than the goal. Each side's p99 is taken over its pooled samples of all
# rounds (--latency-file): a p99 of one round of 400 samples has 4 above it and moved by +-15 ms between rounds at
# batch 4 here, the pooled p99 of 5 rounds has 20. The p99 gap is served p99 minus in-process p99 minus the
# loopback round trip; each round's own gap is printed too.
# Goals (issue 53): served/in-process images/s >= 0.95 at saturation; p99 gap <= 2 ms in every round, and on the
# pooled samples. Exit status 0 whether or not they are met (a measurement); 1 when a run fails.
set -euo pipefail

bin="${1:-build/bin/tsum-train}"
model="${MODEL:-resnet50}"
batches="${BATCHES:-1 4 16}"
concurrency="${CONCURRENCY:-1,2,4}"
device="${DEVICE:-cpu}"
precision="${PRECISION:-fp32}"
window_s="${WINDOW_S:-3}"
iterations="${ITERATIONS:-100}"
p99_batches=" ${P99_BATCHES:-1 4} "
rounds="${ROUNDS:-5}"
p99_samples="${P99_SAMPLES:-800}"

[[ -x "$bin" ]] || { echo "serve: $bin is not an executable (build tsum-train first)" >&2; exit 2; }
tmp="$(mktemp -d)"
server_pid=""
cleanup() { [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

field() {  # field EVENT KEY FILE: KEY of the last EVENT line in FILE
  python3 - "$@" <<'EOF'
import json, sys
event, key, path = sys.argv[1:4]
value = None
for line in open(path):
    if line.startswith("{"):
        e = json.loads(line)
        if e.get("event") == event:
            value = e.get(key)
print("nan" if value is None else value)
EOF
}

infer() {  # infer BATCHES OUT: in-process run of BATCHES measured batches, latencies in OUT.csv
  "$bin" infer --model "$model" --batch "$b" --mode sync --source memory --iterations "$1" --warmup 3 \
    --images "$tmp/img" --device "$device" --precision "$precision" --latency-file "$2.csv" >"$2" \
    2>"$tmp/infer.err" ||
    { cat "$tmp/infer.err" >&2; exit 1; }
}

load() {  # load OUT FLAGS...: the load generator against the server
  local out="$1"; shift
  "$bin" load --url "http://127.0.0.1:$port" --model "$model" --batch "$b" --warmup 3 "$@" >"$out" \
    2>"$tmp/load.err" || { cat "$tmp/load.err" >&2; exit 1; }
}

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "serve: $model on $device ($precision), $(nproc) cores, $cpu, $(date -u +%F)"
"$bin" gen-images "$tmp/img" --n 32 >/dev/null  # infer's --source memory decodes these once
echo
echo "| batch | in-process img/s | served img/s (concurrency) | ratio | in-process p99 ms | served p99 ms at c=1 | loopback rtt ms | p99 gap ms | goals |"
echo "|---|---|---|---|---|---|---|---|---|"
for b in $batches; do
  rm -f "$tmp"/infer.* "$tmp"/c1.*
  "$bin" serve --model "$model" --host 127.0.0.1 --port 0 --max-batch "$b" --device "$device" \
    --precision "$precision" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  server_pid=$!
  for _ in $(seq 600); do grep -q '"ready"' "$tmp/serve.out" 2>/dev/null && break; sleep 0.5; done
  grep -q '"ready"' "$tmp/serve.out" || { cat "$tmp/serve.err" >&2; exit 1; }
  port=$(field ready port "$tmp/serve.out")

  if [[ "$p99_batches" == *" $b "* ]]; then
    n=$(( p99_samples / b )); (( n < 100 )) && n=100
    for r in $(seq "$rounds"); do
      infer "$n" "$tmp/infer.$r"
      # Three windows of n/3 answers each; a window's least time is a third of what n/3 batches took in process,
      # so its 10x deadline is far off.
      w=$(python3 -c "import sys; print(max(0.2, $n / 3 * $b / float(sys.argv[1]) / 3))" \
        "$(field infer images_per_s "$tmp/infer.$r")")
      load "$tmp/c1.$r" --concurrency 1 --window-s "$w" --window-requests $(( (n + 2) / 3 )) --max-trials 3 \
        --latency-file "$tmp/c1.$r.csv"
    done
  else
    it=$(( iterations / b )); (( it < 20 )) && it=20
    infer "$it" "$tmp/infer.1"
  fi
  load "$tmp/sweep" --concurrency "$concurrency" --window-s "$window_s" --window-requests 34 --max-trials 6
  kill "$server_pid"; wait "$server_pid" || true; server_pid=""

  python3 - "$b" "$tmp" <<'EOF'
import glob, json, math, statistics, sys
b, tmp = sys.argv[1], sys.argv[2]

def events(path):
    return [json.loads(l) for l in open(path) if l.startswith("{")]

def last(path, event, key):
    v = [e.get(key) for e in events(path) if e.get("event") == event]
    return float("nan") if not v or v[-1] is None else float(v[-1])

def median(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else float("nan")

def runs(prefix):  # a side's rounds, in order (their latency files are the same names plus .csv)
    return sorted((f for f in glob.glob(f"{tmp}/{prefix}.[0-9]*") if not f.endswith(".csv")),
                  key=lambda f: int(f.rsplit(".", 1)[1]))

infers, c1s = runs("infer"), runs("c1")

def p99(paths):  # over the pooled rows of these latency files; the workload's rule: the ceil(0.99 n)-th smallest
    ms = sorted(float(l.split(",")[1]) for p in paths for l in list(open(p))[1:])
    return (ms[max(0, math.ceil(0.99 * len(ms)) - 1)] if ms else float("nan")), len(ms)

in_ips = median([last(f, "infer", "images_per_s") for f in infers])
in_p99 = [last(f, "infer", "p99_ms") for f in infers]
levels = [e for e in events(f"{tmp}/sweep") if e.get("event") == "load_level"]
best = max(levels, key=lambda e: e.get("images_per_s") or 0)
s_ips, s_c = best["images_per_s"], best["concurrency"]
ratio = s_ips / in_ips
goals = "throughput " + ("met" if ratio >= 0.95 else "NOT met")
if c1s:
    rtt = [last(f, "load_ready", "rtt_ms") for f in c1s]
    s_p99 = [last(f, "load_level", "p99_ms") for f in c1s]
    gaps = [s - i - t for s, i, t in zip(s_p99, in_p99, rtt)]
    (in_pooled, n_in), (s_pooled, n_s) = p99([f + ".csv" for f in infers]), p99([f + ".csv" for f in c1s])
    gap = s_pooled - in_pooled - median(rtt)
    every = gap <= 2.0 and all(g <= 2.0 for g in gaps)
    goals += ", p99 " + ("met" if every else "NOT met") + f" (pooled {n_in} and {n_s} samples; rounds " + \
        ", ".join(f"{g:+.1f}" for g in gaps) + ")"
    cells = (f"{in_pooled:.1f}", f"{s_pooled:.1f}", f"{median(rtt):.3f}", f"{gap:+.1f}")
else:
    rtt = last(f"{tmp}/sweep", "load_ready", "rtt_ms")
    cells = ("-", "-", f"{rtt:.3f}", "-")
    goals += ", p99 not measured (batch not in P99_BATCHES)"
print(f"| {b} | {in_ips:.2f} | {s_ips:.2f} ({s_c}) | {ratio:.3f} | " + " | ".join(cells) + f" | {goals} |")
EOF
done
