#!/bin/sh
# A real run through tsumd on a GPU machine, after scripts/gpu-check.sh built BUILD_DIR there: tsumd's local provider
# finds the GPUs through the driver's NVML and offers local-<N>c-<G>g beside local-<N>c, and one experiment runs the
# MNIST CNN on N cores alone and on N cores with one GPU, side by side (the cpu-vs-gpu comparison on one machine).
# Each run goes through the agent as on any machine: install (with the GPU probe), load_data, start, learn, verify,
# save. Prints each run's phases, images/s, the GPU's statistics per phase and the probe, and the cpu-vs-gpu preset's
# local configurations; the experiment's JSON goes to RESULTS/experiment.json.
#   scripts/gpu-run.sh [BUILD_DIR]        (default build-gpu)
# Environment: TSUMD (a tsumd for this machine; default: the one scripts/gpu-deps.sh packed into .gpu/tsumd.tar.xz,
# with its own loader and libraries), DATA (Fashion-MNIST: .gpu/data/fashion-mnist, else Debian's), CORES (8),
# WORKLOAD (the experiment's workload, JSON), RESULTS (BUILD_DIR/gpu-run).
set -eu
build=$(cd "${1:-build-gpu}" && pwd)
results=${RESULTS:-$build/gpu-run}
cores=${CORES:-8}
workload=${WORKLOAD:-'{"model": "mnist_cnn", "epochs": 2, "limit": 20000, "test_limit": 2000}'}
data=${DATA:-}
[ -n "$data" ] || { [ -d .gpu/data/fashion-mnist ] && data=$(pwd)/.gpu/data/fashion-mnist || data=/usr/share/datasets/fashion-mnist; }
[ -d .gpu/prefix/lib ] && LD_LIBRARY_PATH="$(pwd)/.gpu/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && export LD_LIBRARY_PATH
work=$(mktemp -d)
mkdir -p "$results"
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

tsumd=${TSUMD:-}
if [ -z "$tsumd" ]; then
  tar -C "$work" -xJf .gpu/tsumd.tar.xz
  tsumd="$work/tsumd/bin/tsumd"
fi
command -v curl >/dev/null || PATH="$work/tsumd/bin:$PATH"  # the agent's curl

# The trainer bundle of this build, run with this machine's libraries (its CUDA PyTorch's).
TSUM_BUNDLE_HOST_LIBS=1 sh scripts/make-bundle.sh "$build/bin/tsum-train" "$build/bin/tsum-gpustat" "$work/bundle.tar.gz"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$("$tsumd" token create --db "$work/t.db")  # before serve opens the database
"$tsumd" serve --db "$work/t.db" --state-dir "$work/state" --listen "127.0.0.1:$port" --bundle "$work/bundle.tar.gz" \
  --data "$data" > "$results/tsumd.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
api() { curl -fsS -H "Authorization: Bearer $token" "$@"; }
deadline=$(($(date +%s) + 30))
until api "$url/v1/offers" > "$results/offers.json" 2>/dev/null; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "gpu-run: tsumd did not answer"; cat "$results/tsumd.log"; exit 1; }
  sleep 0.5
done
python3 - "$results/offers.json" <<'PY'
import json, sys
offers = [o for o in json.load(open(sys.argv[1]))["offers"] if o["provider"] == "local" and o["gpus"]]
print("local GPU offers: %d (e.g. %s)" % (len(offers), ", ".join("%s: %d x %s" % (o["instance_type"], o["gpus"], o["gpu_type"]) for o in offers[:2])))
PY
api "$url/v1/presets" > "$results/presets.json"
python3 - "$results/presets.json" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["presets"]:
    if p["name"] == "cpu-vs-gpu" and p["experiments"]:
        print("cpu-vs-gpu preset configs:", ", ".join(c["instance_type"] for c in p["experiments"][0]["configs"] if c["provider"] == "local"))
PY

body=$(printf '{"name": "cpu vs gpu on this machine", "workload": %s, "repetitions": 1, "billing": ["per_second_60s_min"], "configs": [{"provider": "local", "instance_type": "local-%sc"}, {"provider": "local", "instance_type": "local-%sc-1g"}]}' \
  "$workload" "$cores" "$cores")
id=$(api -d "$body" -H 'Content-Type: application/json' "$url/v1/experiments" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
deadline=$(($(date +%s) + ${RUN_DEADLINE_S:-400}))
while :; do
  api "$url/v1/experiments/$id" > "$results/experiment.json"
  status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["status"])' "$results/experiment.json")
  case "$status" in done | failed | cancelled) break ;; esac
  [ "$(date +%s)" -lt "$deadline" ] || { echo "gpu-run: experiment $id still $status"; break; }
  sleep 1
done
# Each run's own view: an experiment's page of runs leaves out their epochs and resource statistics.
for rid in $(python3 -c 'import json, sys; print(" ".join(str(r["id"]) for r in json.load(open(sys.argv[1]))["runs"]))' "$results/experiment.json"); do
  api "$url/v1/runs/$rid" > "$results/run-$rid.json"
done
python3 - "$results/experiment.json" <<'PY'
import json, os, sys
exp = json.load(open(sys.argv[1]))
print("experiment %s: %s" % (exp["id"], exp["status"]))
for row in exp["runs"]:
    r = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "run-%s.json" % row["id"])))
    print("\n%s: %s %s, t_sum %s s" % (r["config"]["instance_type"], r["status"], r.get("reason") or "", r["t_sum"]))
    print("  phases: " + ", ".join("%s %.2f" % (k, v) for k, v in r["phases"].items() if v is not None))
    m = r["metrics"]
    print("  learn: %s images/s, test accuracy %s" % (m.get("images_per_s"), m.get("test_accuracy")))
    probe = m.get("install", {}).get("gpu_probe")
    if probe:
        print("  install's GPU probe: %s, bf16 %.0f TFLOP/s, fp32 %.1f TFLOP/s, copy %.0f GB/s" % (
            probe["name"], probe["matmul_bf16_tflops"] or 0, probe["matmul_fp32_tflops"] or 0, probe["copy_gbps"]))
    for phase, stats in r.get("stats", {}).items():
        if "gpu_util_pct" in stats:
            u, mem = stats["gpu_util_pct"], stats["gpu_mem_bytes"]
            print("  %-9s GPU util %3.0f/%3.0f/%3.0f %%, memory max %.2f GiB" % (phase, u["min"], u["avg"], u["max"], mem["max"] / 2**30))
PY
[ "$status" = "done" ]
