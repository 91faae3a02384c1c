#!/bin/sh
# `make test` after deps and configure: builds every target, then runs CTest.
#   scripts/make-test.sh BUILD_DIR CTEST_JOBS [JOBS]   (no JOBS: ninja's default)
# The stock Debian roots the guest suites boot (CTest fixtures guest_rootfs*, tests/CMakeLists.txt) need nothing
# the build makes, and making them is mostly waiting on Debian's mirror and the disk, so they are made beside the
# build; CTest then finds them made instead of making every guest suite wait on them (issue 39). If making one
# fails here, CTest makes it again and reports it as its own test.
set -u
build=$1 ctest_jobs=$2 jobs=${3:-}
now() { date +%s; }
start=$(now)
(cd "$build" && exec ctest -R '^guest_rootfs' -j 2) >"$build/guest-roots.log" 2>&1 &
roots=$!
cmake --build "$build" ${jobs:+-j "$jobs"}
rc=$?
echo "make test: build took $(( $(now) - start )) s"
wait "$roots" || true
echo "make test: guest roots ready after $(( $(now) - start )) s ($(grep -E 'tests passed' "$build/guest-roots.log" ||
  echo 'see guest-roots.log'))"
[ "$rc" -eq 0 ] || exit "$rc"
cd "$build" && exec ctest --output-on-failure --timeout 900 -j "$ctest_jobs"
