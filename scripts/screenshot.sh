#!/bin/sh
# Makes docs/dashboard-experiment.png: runs the quickstart (Fashion-MNIST on local-1c and local-2c) into a
# database unless one is given, then screenshots its experiment page in headless Chromium.
#   scripts/screenshot.sh [DB]      BUILD=build (tsumd, tsum-train and web/node_modules must be built)
set -eu
cd "$(dirname "$0")/.."
build=${BUILD:-build}
db=${1:-}
if [ -z "$db" ]; then
  db=$(mktemp -d)/quickstart.db
  "$build/bin/tsumd" quickstart --db "$db"
fi
mkdir -p docs
TSUMD_BIN="$build/bin/tsumd" node tests/web/screenshot.mjs "$db" docs/dashboard-experiment.png
