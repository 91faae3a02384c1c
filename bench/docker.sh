#!/bin/sh
# The seed's Docker question, measured: the same workload on the local provider natively and in Docker, through a
# real tsumd, REPS repetitions each (each repetition one experiment with both runs, one after the other; the
# image and its base are removed from the engine first, so docker's install is a cold pull of every layer from
# a registry on loopback; the engine gets tsum-train:latest back at the end).
#   bench/docker.sh [BUILD_DIR]          (needs root, docker.io, docker-registry; make build first)
# Environment: REPS (3), LIMIT (10000 training images), EPOCHS (1), CORES (1).
# Prints one row per run and the means: install (bundle download+unpack vs docker pull), load_data, learn
# images/s, t_sum, and Docker's overhead on training (1 - docker img/s / native img/s). Goal: within 2%.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
reps=${REPS:-3}; limit=${LIMIT:-10000}; epochs=${EPOCHS:-1}; cores=${CORES:-1}
work=$(mktemp -d /tmp/tsum-bench-docker.XXXXXX)
state=$build/cache/docker
port=$((20000 + $$ % 20000)); rport=$((port + 1))
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  if [ -n "${image:-}" ] && docker pull "$image" >/dev/null 2>&1; then  # give the engine its image back
    docker tag "$image" tsum-train:latest && docker rmi "$image" >/dev/null 2>&1
  fi
  sh "$here/scripts/registry.sh" stop "$work/registry" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

export PATH="/usr/bin:$PATH"  # Debian's docker CLI, the engine's API version
DOCKER_HOST=$(BUILD=$build sh "$here/scripts/docker-images.sh" engine); export DOCKER_HOST
BUILD=$build sh "$here/scripts/docker-images.sh" workload >/dev/null
registry=$(sh "$here/scripts/registry.sh" start "$work/registry" "$rport")
image=$registry/tsum-train:bench
docker tag tsum-train:latest "$image" && docker push "$image" >/dev/null
docker rmi "$image" >/dev/null

token=$("$build/bin/tsumd" token create --db "$work/t.db")
"$build/bin/tsumd" serve --db "$work/t.db" --listen "127.0.0.1:$port" --max-concurrent 1 2>"$work/tsumd.log" &
daemon=$!
api() { curl -fsS -H "Authorization: Bearer $token" "$@"; }
i=0; until api "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 120 ] && { echo "tsumd did not start" >&2; cat "$work/tsumd.log" >&2; exit 1; }; sleep 0.5
done

rep=1
while [ $rep -le "$reps" ]; do
  # A cold pull: no tag, no build cache, no layer of the image left in the engine.
  docker rmi "$image" tsum-train:latest tsum-base:bookworm >/dev/null 2>&1 || true
  docker image prune -af >/dev/null && docker builder prune -af >/dev/null
  body="{\"name\":\"bench-docker-$rep\",\"repetitions\":1,\"billing\":[\"per_second_60s_min\"],
    \"workload\":{\"limit\":$limit,\"test_limit\":2000,\"epochs\":$epochs,\"threads\":$cores,\"image\":\"$image\"},
    \"configs\":[{\"provider\":\"local\",\"cores\":$cores,\"runtime\":[\"native\",\"docker\"]}]}"
  id=$(api -d "$body" "http://127.0.0.1:$port/v1/experiments" | sed 's/.*"id":\([0-9]*\).*/\1/')
  t=0
  # The experiment's own status (its runs carry statuses of their own).
  until api "http://127.0.0.1:$port/v1/experiments/$id" | /usr/bin/python3 -c \
      'import json,sys; sys.exit(json.load(sys.stdin)["status"] not in ("done", "failed", "cancelled"))'; do
    t=$((t + 2)); [ $t -gt 3600 ] && { echo "experiment $id did not finish" >&2; exit 1; }; sleep 2
  done
  api "http://127.0.0.1:$port/v1/experiments/$id" > "$work/exp-$rep.json"
  rep=$((rep + 1))
done

/usr/bin/python3 - "$work" "$reps" <<'PY'
import json, sys, statistics as st
work, reps = sys.argv[1], int(sys.argv[2])
rows = {"native": [], "docker": []}
print(f"{'runtime':8} {'rep':>3} {'install':>8} {'method':>8} {'MB':>6} {'load_data':>9} {'learn':>7} {'img/s':>8} {'t_sum':>7}  status")
for r in range(1, reps + 1):
    exp = json.load(open(f"{work}/exp-{r}.json"))
    for run in exp["runs"]:
        m, ph = run["metrics"], run["phases"]
        kind = "docker" if m.get("install", {}).get("method") in ("pull", "present") else "native"
        if run["status"] != "done":
            print(f"{kind:8} {r:>3}  {run['status']}: {run['reason']}"); continue
        rows[kind].append((ph["install"], ph["load_data"], ph["learn"], m["images_per_s"], run["t_sum"]))
        print(f"{kind:8} {r:>3} {ph['install']:8.2f} {m['install']['method']:>8} {m['install']['bytes']/1e6:6.0f} "
              f"{ph['load_data']:9.2f} {ph['learn']:7.2f} {m['images_per_s']:8.1f} {run['t_sum']:7.2f}  done")
print()
means = {}
for kind, rs in rows.items():
    if not rs: continue
    means[kind] = [st.mean(c) for c in zip(*rs)]
    print(f"mean {kind:8} install {means[kind][0]:6.2f} s  load_data {means[kind][1]:5.2f} s  learn {means[kind][2]:6.2f} s"
          f"  {means[kind][3]:7.1f} img/s  t_sum {means[kind][4]:6.2f} s  (n={len(rs)})")
if "native" in means and "docker" in means:
    overhead = 1 - means["docker"][3] / means["native"][3]
    print(f"docker overhead on training: {100 * overhead:+.2f}% (img/s), goal within 2%: {'met' if abs(overhead) <= 0.02 else 'NOT met'}")
    print(f"docker t_sum / native t_sum: {means['docker'][4] / means['native'][4]:.3f}")
PY
echo "(local provider, $cores core(s), $limit images, $epochs epoch(s); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg))"
