#!/usr/bin/env bash
# Builds and runs bench_planner: tsum's planner and probe search on seeded synthetic trace tables with a known
# optimum, then the Scout replay on real measured cloud runtimes (../shared/testdata/scout/runs.csv, when that
# folder is there; SCOUT=path to use another copy, SCOUT= to skip it). Prints ratios; it times nothing.
# Besides the regret after k probes it prints the blind picks (a recommendation more than 5% dearer than the best
# config already measured), the calibration of the bands and of P(within tolerance) by decile, and where a
# search left to stop by itself ends with 10 and 100 future runs, with its spend as a share of their cost.
#   bench/planner.sh [--tables N] [--seed S] [--max-probes K] [--explain] [--scout-seeds N] [--no-synthetic]
#                    [--only WORKLOAD] [--model automatic|resources|family]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SCOUT=${SCOUT-../shared/testdata/scout/runs.csv}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$BUILD" bench_planner >/dev/null
echo "bench_planner on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (ratios only; nothing is timed)"
if [ -n "$SCOUT" ] && [ -f "$SCOUT" ]; then
  exec "$BUILD/bin/bench_planner" --scout "$SCOUT" "$@"
fi
[ -z "$SCOUT" ] || echo "bench/planner.sh: no Scout trace at $SCOUT; synthetic tables only" >&2
exec "$BUILD/bin/bench_planner" "$@"
