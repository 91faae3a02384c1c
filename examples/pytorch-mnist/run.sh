#!/bin/sh
# Runs this example through tsum and compares it with tsum-train on the same data: builds the job's image in the
# engine DOCKER_HOST names (else the private one, scripts/docker-engine.sh), serves it and tsum-train's from a
# registry on loopback, starts a tsumd, and submits one experiment of each on the local provider, REPS times:
#   examples/pytorch-mnist/run.sh [BUILD_DIR]     (root; make build first; the first image build needs Debian's mirror)
# Environment: REPS (2), LIMIT (10000 training images), CORES (1). Prints t_sum and its phases per run.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
reps=${REPS:-2}; limit=${LIMIT:-10000}; cores=${CORES:-1}
work=$(mktemp -d /tmp/tsum-example.XXXXXX)
port=$((20000 + $$ % 20000)); rport=$((port + 1))
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  sh "$here/scripts/registry.sh" stop "$work/registry" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
export PATH="/usr/bin:$PATH"
DOCKER_HOST=$(BUILD=$build sh "$here/scripts/docker-images.sh" engine); export DOCKER_HOST
BUILD=$build sh "$here/scripts/docker-images.sh" workload >/dev/null
BUILD=$build sh "$here/scripts/docker-images.sh" example >/dev/null
registry=$(sh "$here/scripts/registry.sh" start "$work/registry" "$rport")
for i in tsum-train tsum-example-pytorch; do
  docker tag "$i:latest" "$registry/$i:latest" && docker push -q "$registry/$i:latest" >/dev/null
done

token=$("$build/bin/tsumd" token create --db "$work/t.db")
"$build/bin/tsumd" serve --db "$work/t.db" --listen "127.0.0.1:$port" 2>"$work/tsumd.log" &
daemon=$!
api() { curl -fsS -H "Authorization: Bearer $token" "$@"; }
i=0; until api "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 120 ] && { echo "tsumd did not start" >&2; exit 1; }; sleep 0.5
done
job="{\"image\":\"$registry/tsum-example-pytorch:latest\",\"dataset\":\"fashion-mnist\",
  \"command\":[\"python3\",\"/job/train.py\",\"--limit\",\"$limit\",\"--test-limit\",\"2000\"]}"
native="{\"model\":\"mnist_cnn\",\"limit\":$limit,\"test_limit\":2000,\"image\":\"$registry/tsum-train:latest\"}"
for w in "$job" "$native"; do
  body="{\"name\":\"example\",\"repetitions\":$reps,\"billing\":[\"per_second_60s_min\"],\"workload\":$w,
    \"configs\":[{\"provider\":\"local\",\"cores\":$cores,\"runtime\":\"docker\"}]}"
  id=$(api -d "$body" "http://127.0.0.1:$port/v1/experiments" | sed 's/.*"id":\([0-9]*\).*/\1/')
  until api "http://127.0.0.1:$port/v1/experiments/$id" | /usr/bin/python3 -c \
      'import json,sys; sys.exit(json.load(sys.stdin)["status"] not in ("done", "failed", "cancelled"))'; do sleep 2; done
  api "http://127.0.0.1:$port/v1/experiments/$id" > "$work/exp-$id.json"
done
/usr/bin/python3 - "$work" <<'PY'
import glob, json, sys
print(f"{'workload':22} {'install':>8} {'load':>6} {'start':>6} {'learn':>7} {'verify':>7} {'save':>6} {'t_sum':>7}  status")
for path in sorted(glob.glob(sys.argv[1] + "/exp-*.json")):
    for run in json.load(open(path))["runs"]:
        w = run["workload"]
        name = "pytorch job (python)" if w["kind"] == "job" else "tsum-train (docker)"
        ph = run["phases"]
        if run["status"] != "done":
            print(f"{name:22} {run['status']}: {run['reason']}"); continue
        print(f"{name:22} {ph['install']:8.2f} {ph['load_data']:6.2f} {ph['start']:6.2f} {ph['learn']:7.2f} "
              f"{ph['verify']:7.2f} {ph['save']:6.2f} {run['t_sum']:7.2f}  done {run['metrics'].get('marks', '')}")
PY
echo "(local provider, $cores core(s), $limit images, 1 epoch, docker runtime; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
