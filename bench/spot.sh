#!/bin/sh
# Spot machines (issue 28, deliverable 8): one training run (mnist_cnn, 6,000 images, SPOT_EPOCHS (4) epochs, one thread)
# on the fake EC2's spot capacity, interrupted 0, 1, 2 and 4 times, each time with a notice of 30 s (GCE's and
# Azure's window) once its machine has learned for 2 s; guests that share only the network with tsumd
# (tests/integration/test_spot.cpp, its bench case). Prints per run: t_sum, the learning redone, the extra cost
# over the uninterrupted run and the machine seconds billed (EC2's rule, per second with a minute's minimum; AWS
# charges nothing for a spot instance it interrupts in its first hour), the longest time from a notice to the checkpoint held by the daemon (goal: under 20 s), and the
# resume overhead (a new machine's startup + install + load_data + start).
# The recovery column: "same region" rows resume on the same offer; "cross-region" and "cross-region+cloud" rows
# (tests/integration/test_spot_moves.cpp's bench case, policy "cloud", the fake EC2 in two regions and the fake
# GCE) are interrupted after their region ran out of spot capacity, so each resume is in another region, and for
# k=2 then on GCE.
#   sh bench/spot.sh [BUILD_DIR]     (root: the guests need namespaces; make build first)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
goal=20
ninja -C "$build" test_integration_spot test_integration_spot_moves tsumd tsum-train tsum-bundle tsum-fake-cloud \
  tsum-fake-gce >/dev/null
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "spot: $cpu, $(nproc) cores"
out=$(cd "$build" && tests/integration/test_integration_spot --no-skip -tc='bench*' 2>&1) || {
  printf '%s\n' "$out" | tail -n 40; exit 1; }
moved=$(cd "$build" && tests/integration/test_integration_spot_moves --no-skip -tc='bench*' 2>&1) || {
  printf '%s\n' "$moved" | tail -n 40; exit 1; }
lines=$(printf '%s\n' "$out" "$moved" | grep '^spot-bench:')
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
base=$(field "$(printf '%s\n' "$lines" | grep ' k=0 ' | head -n 1)" cost)
echo
echo "| interruptions | recovery | t_sum s | billed s | learning redone s | extra cost USD | notice -> checkpoint held s | resume s | accuracy |"
echo "|---|---|---|---|---|---|---|---|---|"
worst=0
printf '%s\n' "$lines" | while read -r line; do
  k=$(field "$line" k); cost=$(field "$line" cost); n=$(field "$line" notice_to_checkpoint_s)
  rec=$(field "$line" recovery); [ -n "$rec" ] || rec="same region"; [ "$k" -eq 0 ] && rec="-"
  awk -v k="$k" -v rec="$rec" -v t="$(field "$line" t_sum)" -v l="$(field "$line" lost_s)" -v c="$cost" -v b="$base" -v n="$n" \
      -v r="$(field "$line" resume_s)" -v a="$(field "$line" accuracy)" -v p="$(field "$line" billed_s)" 'BEGIN {
    printf "| %d | %s | %.1f | %.1f | %.1f | %+.6f | %s | %s | %.4f |\n", k, rec, t, p, l, c - b, (k ? sprintf("%.1f", n) : "-"),
           (k ? sprintf("%.1f", r) : "-"), a }'
done
worst=$(printf '%s\n' "$lines" | sed -n 's/.* notice_to_checkpoint_s=\([^ ]*\).*/\1/p' | sort -g | tail -n 1)
echo
if awk -v w="$worst" -v g="$goal" 'BEGIN { exit !(w < g) }'; then
  echo "spot: notice -> checkpoint held at most ${worst} s: goal (< ${goal} s) met"
else
  echo "spot: notice -> checkpoint held up to ${worst} s: goal (< ${goal} s) NOT met"; exit 1
fi
