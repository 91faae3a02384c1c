#!/bin/sh
# What a spot run's rank agreement costs (issue 54): two ring ranks of tsum-train on loopback (mnist_cnn,
# Fashion-MNIST, LIMIT (6000) images, 2 epochs, one thread each), without and with --checkpoint-every (a
# checkpoint every 600 s, so none is written: what is measured is the all-reduce of two numbers before each
# step). Alternates the two REPS (3) times and prints rank 0's images/s for each and their ratio (1.0: free).
#   sh bench/dist_checkpoint.sh [path/to/tsum-train]     (default build/bin/tsum-train)
set -eu
bin=$(realpath "${1:-build/bin/tsum-train}")
data=${DATA:-/usr/share/datasets/fashion-mnist}
limit=${LIMIT:-6000}
reps=${REPS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "dist_checkpoint: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"

# run NAME [FLAGS...]: both ranks; prints rank 0's learn_end images/s.
run() {
  name=$1; shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for r in 0 1; do
    "$bin" --data "$data" --limit "$limit" --epochs 2 --threads 1 --test-limit 100 --batch 64 \
      --checkpoint "$tmp/m$r.pt" --world-size 2 --rank "$r" --dist ring --master "127.0.0.1:$port" \
      "$@" --state "$tmp/s$r.pt" > "$tmp/$name$r.jsonl" 2> "$tmp/$name$r.err" &
  done
  wait
  sed -n 's/.*"event":"learn_end".*"images_per_s":\([0-9.e+]*\).*/\1/p' "$tmp/${name}0.jsonl"
}

plain=""; agreed=""
i=0
while [ "$i" -lt "$reps" ]; do
  plain="$plain $(run plain)"
  agreed="$agreed $(run agreed --checkpoint-every 600)"
  i=$((i + 1))
done
median() { printf '%s\n' $1 | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
p=$(median "$plain"); a=$(median "$agreed")
echo "without the agreement: images/s$plain (median $p)"
echo "with it (--checkpoint-every 600): images/s$agreed (median $a)"
awk -v p="$p" -v a="$a" 'BEGIN { printf "dist_checkpoint: ratio %.3f (with / without)\n", a / p }'
