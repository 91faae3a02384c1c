#!/usr/bin/env bash
# Builds and runs bench_planner: first what a search costs the user in all (its probes plus 10 or 100 planned runs
# on its pick, over those runs on the optimum) on the measured traces in ../shared/testdata (Scout, IBM's
# multi-cloud set, TrimTuner) and on generated tables of their shape; then tsum's planner and probe search on
# seeded synthetic trace tables with a known optimum, and the Scout replay from random first probes
# (../shared/testdata/scout/runs.csv; SCOUT=path to use another copy, SCOUT= to skip it; IBM= and TRIMTUNER=
# likewise). Prints ratios; the one thing it times is the search's own compute per round (70, 300 and 1,000
# candidates).
# Besides the regret after k probes it prints the blind picks (a recommendation more than 5% dearer than the best
# config already measured), the calibration of the bands and of P(within tolerance) by decile, and where a
# search left to stop by itself ends with 10 and 100 future runs, with its spend as a share of their cost.
#   bench/planner.sh [--totals] [--generated N] [--tables N] [--seed S] [--max-probes K] [--explain]
#                    [--scout-seeds N] [--no-synthetic] [--only TEXT] [--sets NAME] [--predictor-seed S]
#                    [--model automatic|resources|family]
#   --only TEXT: the Scout workloads, or with --totals the cases of every set, whose name contains TEXT
#   --predictor-seed S: with --totals, the predictor's seed (its particles and draws; default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TRACES=../shared/testdata
SCOUT=${SCOUT-$TRACES/scout/runs.csv}
IBM=${IBM-$TRACES/traces/ibm-multicloud/multi-cloud-configuration.csv}
TRIMTUNER=${TRIMTUNER-$TRACES/traces/trimtuner}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$BUILD" bench_planner >/dev/null
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "bench_planner on $cpu, $(nproc) cores, $(date -u +%F) (ratios; the one timing is the search's compute per round)"
args=()
for pair in "--scout:$SCOUT" "--ibm:$IBM" "--trimtuner:$TRIMTUNER"; do
  flag=${pair%%:*} path=${pair#*:}
  if [ -n "$path" ] && [ -e "$path" ]; then args+=("$flag" "$path");
  elif [ -n "$path" ]; then echo "bench/planner.sh: no trace at $path; left out" >&2; fi
done
exec "$BUILD/bin/bench_planner" "${args[@]}" "$@"
