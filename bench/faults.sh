#!/bin/sh
# Fault campaign (issue 17, deliverable 3): kill -9 at KILLS (100) random points, the database's disk full, the
# agent's daemon away for OFFLINE_S (300) seconds, 1,100 idle connections under ulimit -n 1024, two daemons on one
# database (bench/faults.py, which says what each checks), then SIGTERM with
# a cloud that no longer answers (integration_clouds' case: the hetzner fake SIGSTOPped, tsumd --grace 3).
#   sh bench/faults.sh [BUILD_DIR]        (make build first; the disk-full part needs root for its tmpfs)
# Prints each part's figures and PASS/FAIL per goal; exits 1 if any failed.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
rc=0
python3 "$here/bench/faults.py" "$build" || rc=1
echo
echo "== SIGTERM while the cloud no longer answers =="
ninja -C "$build" test_integration_clouds >/dev/null || exit 1
# From the build directory, as CTest runs it (the guest image is under cache/ there).
out=$(cd "$build" && tests/integration/test_integration_clouds -tc='SIGTERM while the cloud no longer answers*' 2>&1)
case $out in *"Status: SUCCESS"*) ok=PASS ;; *) ok=FAIL; rc=1; printf '%s\n' "$out" | tail -n 30 ;; esac
took=$(printf '%s\n' "$out" | sed -n 's/.*tsumd exited \([0-9.]*\) s after SIGTERM.*/\1/p' | head -n 1)
echo "  $ok  tsumd exited ${took:-?} s after SIGTERM (grace 3 s); the restart terminated the instance and settled the run"
exit $rc
