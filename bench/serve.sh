#!/usr/bin/env bash
# Served inference against in-process inference (issue 41): `tsum-train serve` answering `tsum-train load` over
# HTTP on this machine's loopback, against `tsum-train infer` computing the same batches in one process. Builds
# nothing.
#
# usage: bench/serve.sh [path/to/tsum-train]        (default build/bin/tsum-train)
# env:   MODEL=resnet50 BATCHES="1 4 16" CONCURRENCY="1,2,4" DEVICE=cpu PRECISION=fp32 WINDOW_S=3
#        ITERATIONS=100 (in-process measured batches for batch 1; fewer, at least 20, for larger batches)
#
# For each batch size B, the server runs with --max-batch B and the client sends requests of B images (seeded
# random FP32 tensors, so neither side decodes JPEGs; `infer --source memory` likewise), so a request is a batch:
#   in-process   images/s and p99 of `tsum-train infer --mode sync --source memory`
#   served       images/s at saturation (the best of the concurrency levels; concurrency 1 is the seed's "sync"
#                client, more in flight its "async") and p99 at concurrency 1, with the loopback round trip
# then the goals: served/in-process images/s >= 0.9 at saturation; p99 at concurrency 1 within 2 ms of the
# in-process p99 plus the round trip. Exit status 0 whether or not they are met (a measurement); 1 when a run fails.
set -euo pipefail

bin="${1:-build/bin/tsum-train}"
model="${MODEL:-resnet50}"
batches="${BATCHES:-1 4 16}"
concurrency="${CONCURRENCY:-1,2,4}"
device="${DEVICE:-cpu}"
precision="${PRECISION:-fp32}"
window_s="${WINDOW_S:-3}"
iterations="${ITERATIONS:-100}"

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

saturation() {  # saturation FILE: "images_per_s concurrency" of the best level
  python3 - "$1" <<'EOF'
import json, sys
best = (0.0, 0)
for line in open(sys.argv[1]):
    if line.startswith("{"):
        e = json.loads(line)
        if e.get("event") == "load_level" and (e.get("images_per_s") or 0) > best[0]:
            best = (e["images_per_s"], e["concurrency"])
print(best[0], best[1])
EOF
}

level1() {  # level1 FILE KEY: KEY of the concurrency-1 level
  python3 - "$1" "$2" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        e = json.loads(line)
        if e.get("event") == "load_level" and e.get("concurrency") == 1:
            v = e.get(sys.argv[2]); print("nan" if v is None else v); break
EOF
}

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "serve: $model on $device ($precision), $(nproc) cores, $cpu, $(date -u +%F)"
"$bin" gen-images "$tmp/img" --n 32 >/dev/null  # infer's --source memory decodes these once
echo
echo "| batch | in-process img/s | served img/s (concurrency) | ratio | in-process p99 ms | served p99 ms at c=1 | loopback rtt ms | p99 gap ms | goals |"
echo "|---|---|---|---|---|---|---|---|---|"
for b in $batches; do
  it=$(( iterations / b )); (( it < 20 )) && it=20
  "$bin" infer --model "$model" --batch "$b" --mode sync --source memory --iterations "$it" --warmup 3 \
    --images "$tmp/img" --device "$device" --precision "$precision" >"$tmp/infer.out" 2>"$tmp/infer.err" ||
    { cat "$tmp/infer.err" >&2; exit 1; }
  in_ips=$(field infer images_per_s "$tmp/infer.out")
  in_p99=$(field infer p99_ms "$tmp/infer.out")

  "$bin" serve --model "$model" --host 127.0.0.1 --port 0 --max-batch "$b" --device "$device" \
    --precision "$precision" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  server_pid=$!
  for _ in $(seq 600); do grep -q '"ready"' "$tmp/serve.out" 2>/dev/null && break; sleep 0.5; done
  grep -q '"ready"' "$tmp/serve.out" || { cat "$tmp/serve.err" >&2; exit 1; }
  port=$(field ready port "$tmp/serve.out")
  "$bin" load --url "http://127.0.0.1:$port" --model "$model" --batch "$b" --concurrency "$concurrency" \
    --window-s "$window_s" --window-requests 34 --max-trials 6 >"$tmp/load.out" 2>"$tmp/load.err" ||
    { cat "$tmp/load.err" >&2; exit 1; }
  kill "$server_pid"; wait "$server_pid" || true; server_pid=""

  read -r served_ips served_c < <(saturation "$tmp/load.out")
  served_p99=$(level1 "$tmp/load.out" p99_ms)
  rtt=$(field load_ready rtt_ms "$tmp/load.out")
  python3 - "$b" "$in_ips" "$served_ips" "$served_c" "$in_p99" "$served_p99" "$rtt" <<'EOF'
import math, sys
b, in_ips, s_ips, s_c, in_p99, s_p99, rtt = sys.argv[1], *map(float, sys.argv[2:4]), sys.argv[4], *map(float, sys.argv[5:])
ratio = s_ips / in_ips
gap = s_p99 - in_p99 - rtt
ok = "throughput " + ("met" if ratio >= 0.9 else "NOT met") + ", p99 " + \
    ("n/a (under 100 samples)" if math.isnan(gap) else ("met" if gap <= 2.0 else "NOT met"))
print(f"| {b} | {in_ips:.2f} | {s_ips:.2f} ({s_c}) | {ratio:.3f} | {in_p99:.1f} | {s_p99:.1f} | {rtt:.3f} | {gap:+.1f} | {ok} |")
EOF
done
