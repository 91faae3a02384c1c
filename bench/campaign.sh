#!/bin/sh
# Numbers a user can trust (issue 63): 200 runs on the local provider (tsum-train and folder jobs, 1 and 2 cores,
# failing in setup and learn, cancelled while learning), each checked as a user reads it (bench/campaign.py says
# what). Needs the built tsumd and tsum-train.
#   bench/campaign.sh [BUILD_DIR] [--scale F]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
[ $# -gt 0 ] && shift
exec python3 "$here/bench/campaign.py" "$build" "$@"
