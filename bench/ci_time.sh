#!/bin/sh
# How long `make test` takes on a fresh clone with an empty ccache, and where the time goes (issue 27).
# Clones the committed tree (REV, default HEAD) into a temporary folder, points CCACHE_DIR at a new empty folder,
# then runs `make test` in the steps it is made of, timing each:
#   deps       make deps                 (scripts/install-deps.sh: apt-get for what is missing)
#   configure  make build/build.ninja    (cmake)
#   build      make test until the build ends (every target, the fuzz targets included; the guest roots are
#              made beside it, scripts/make-test.sh)
#   test       the rest of make test     (CTest)
# and prints minutes per step, the 10 slowest build steps (.ninja_log) and the 10 slowest tests (CTest's
# times), the CPU model, and whether the whole fits the goal (GOAL_MIN, default 60 minutes).
#   sh bench/ci_time.sh [--load N] [REV]
# --load N: N busy CPU hogs (Debian's stress-ng --cpu N, installed when missing) run beside every step, as on
# a laptop or a shared runner doing other work; they stop when make test ends (issue 39).
# Environment: KEEP=1 keeps the clone (printed), WORK=DIR clones under DIR (default a new folder in /tmp),
# GOAL_MIN=60. Needs what `make test` needs (root, Debian's mirror and npm for a cold machine). Deps take
# seconds on a machine that already has the packages; on a fresh Debian 12 machine apt-get takes minutes more,
# which this step then shows. Exit status: 0 when make test passed (goal met or not), 1 when it failed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
load=0
if [ "${1:-}" = --load ]; then load=${2:?--load N}; shift 2; fi
rev=${1:-HEAD}
goal_min=${GOAL_MIN:-60}
work=${WORK:-$(mktemp -d /tmp/tsum-ci-time.XXXXXX)}
mkdir -p "$work"
clone="$work/tsum"
# The tests read ../shared (the SigV4 suite, Scout) beside the checkout, as CI lays it.
if [ -d "$root/../shared" ] && [ ! -e "$work/shared" ]; then ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"; fi
rm -rf "$clone"
git clone -q --no-local "$root" "$clone"
git -C "$clone" checkout -q "$(git -C "$root" rev-parse "$rev")"
export CCACHE_DIR="$work/ccache"
rm -rf "$CCACHE_DIR"; mkdir -p "$CCACHE_DIR"
log="$work/make-test.log"
: >"$log"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "ci_time: $(git -C "$clone" log -1 --format='%h %s' | cut -c1-80)"
echo "ci_time: $cpu, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start; clone $clone"
hogs=""
if [ "$load" -gt 0 ]; then
  command -v stress-ng >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q stress-ng >/dev/null
  stress-ng --cpu "$load" --quiet >/dev/null 2>&1 &
  hogs=$!
  trap 'kill "$hogs" 2>/dev/null || true' EXIT
  echo "ci_time: $load CPU hogs beside it (stress-ng --cpu $load, pid $hogs)"
fi

now() { date +%s; }
failed=""
step() {  # step NAME MAKE-TARGET: runs it, appends its output to the log, records its seconds
  name=$1; shift
  t0=$(now)
  echo "=== $name: make $*" >>"$log"
  if ! make -C "$clone" "$@" >>"$log" 2>&1; then failed=$name; fi
  eval "secs_$name=$(( $(now) - t0 ))"
  echo "ci_time: $name $(eval echo \$secs_$name) s$([ "$failed" = "$name" ] && echo ', FAILED' || true)"
}
start=$(now)
step deps deps
[ -n "$failed" ] || step configure build/build.ninja
[ -n "$failed" ] || step test test
# make test prints when its build ended (scripts/make-test.sh): the build is that much of it.
secs_build=$(sed -n 's/^make test: build took \([0-9]*\) s$/\1/p' "$log" | tail -1)
secs_build=${secs_build:-0}
secs_test=$(( secs_test - secs_build ))
total=$(( $(now) - start ))
if [ -n "$hogs" ]; then
  kill "$hogs" 2>/dev/null || true
  wait "$hogs" 2>/dev/null || true
  echo "ci_time: the $load hogs ran until the end: load average $(cut -d' ' -f1-3 /proc/loadavg)"
fi

min() { awk -v s="${1:-0}" 'BEGIN { printf "%.1f", s / 60 }'; }
echo
echo "| step | minutes |"
echo "|---|---|"
for s in deps configure build test; do echo "| $s | $(min "$(eval echo \${secs_$s:-0})") |"; done
echo "| **make test** | **$(min $total)** |"

ninja_log="$clone/build/.ninja_log"
if [ -f "$ninja_log" ]; then
  echo
  echo "10 slowest build steps (.ninja_log, seconds):"
  # v5 lines: start_ms end_ms mtime output hash; a rebuilt output keeps its last line.
  awk -F'\t' '!/^#/ { t[$4] = ($2 - $1) / 1000 } END { for (o in t) printf "%8.1f  %s\n", t[o], o }' "$ninja_log" |
    sort -rn | head -10
  awk -F'\t' '!/^#/ { if ($2 > e) e = $2; n++ } END { printf "%d steps, %.1f min of wall time\n", n, e / 60000 }' \
    "$ninja_log"
fi
echo
echo "10 slowest tests (CTest, seconds):"
sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) \.*[^0-9]*\([0-9.]*\) sec$/\2 \1/p' "$log" | sort -rn | head -10 |
  awk '{ printf "%8.1f  %s\n", $1, $2 }'
grep -E '^[0-9]+% tests passed' "$log" || true
grep -E '^Total Test time' "$log" || true

if [ "${KEEP:-0}" = 1 ] || [ -n "$failed" ]; then echo "ci_time: kept $work (log: $log)"; else
  # Leave no engine behind before removing its state (tests stop theirs; a failed run may not have).
  engine="$clone/build/cache/docker"
  [ -d "$engine" ] && sh "$clone/scripts/docker-engine.sh" stop "$engine" >/dev/null 2>&1 || true
  rm -rf "$work"
fi
if [ -n "$failed" ]; then tail -40 "$log"; echo "ci_time: make test FAILED in step $failed (log: $log)"; exit 1; fi
if [ "${secs_deps:-0}" -lt 60 ]; then
  echo "ci_time: deps took ${secs_deps:-0} s: the packages were present; on a fresh machine apt-get added 1.9-3.5 min (README)"
fi
if [ "$total" -le $((goal_min * 60)) ]; then
  echo "ci_time: goal met: make test in $(min $total) min <= $goal_min min"
else
  echo "ci_time: goal NOT met: make test in $(min $total) min > $goal_min min"
fi
