#!/bin/sh
# A daemon that runs for years (issue 61): 100,000 runs through the trace provider, each endpoint's latency and body,
# RSS, database size and runs/s at 1,000 / 10,000 / 100,000 runs, and the ratios (bench/scale.py says how).
#   bench/scale.sh [BUILD_DIR] [--runs N] [--marks 1000,10000,100000]      (make build first)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
[ $# -gt 0 ] && shift
exec python3 "$here/bench/scale.py" "$build" "$@"
