#!/usr/bin/env bash
# Builds and runs bench_planner: tsum's planner and probe search on seeded synthetic trace tables with a known
# optimum. Prints ratios (regret, pick agreement, deadline violations); it times nothing.
#   bench/planner.sh [--tables N] [--seed S] [--max-probes K] [--explain]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$BUILD" bench_planner >/dev/null
exec "$BUILD/bin/bench_planner" "$@"
