#!/usr/bin/env bash
# Data-parallel tsum-train (--world-size N): the CIFAR CNN (cifar10_cnn) on 1, 2 and 4 ranks, ring
# all-reduce against the parameter server, synchronous and asynchronous. One thread per rank; each
# rank is a host of its own: a network namespace with a veth pair to a bridge, its uplink shaped by
# tc (netem for RATE and DELAY where the kernel has it, else tbf for RATE alone, said so). Needs root
# (ip netns). Builds nothing.
#
# usage: sudo bench/distributed.sh [path/to/tsum-train]     (default build/bin/tsum-train)
# env:   RATE=1gbit DELAY=0.1ms N=2000 TEST_N=1000 EPOCHS=2 BATCH=32 WORLDS="1 2 4"
#        MODES="ring ps ps-async" DATA=DIR (CIFAR-10 binaries; default the installed CIFAR-10, else
#        `tsum-train gen-cifar` data of N images) TIMEOUT=120
#
# Prints the CPU model, then per mode and rank count: the run's images/s (rank 0's learn_end), the
# scaling efficiency (images/s / (ranks x one rank's)), the communication share (mean over ranks of
# the time spent waiting for communication / learn time), bytes each rank sent per image, test
# accuracy (rank 0's verify) and, for ps-async, the mean and max staleness. ps-async's rank 0 only
# serves, so its N ranks train with N-1 workers. Exit status 0 whether or not scaling is good (it is
# a measurement); 1 when a run fails; 2 for bad usage.
set -euo pipefail

bin="$(realpath "${1:-build/bin/tsum-train}")"
rate="${RATE:-1gbit}"
delay="${DELAY:-0.1ms}"
n="${N:-2000}"
test_n="${TEST_N:-1000}"
epochs="${EPOCHS:-2}"
batch="${BATCH:-32}"
worlds="${WORLDS:-1 2 4}"
modes="${MODES:-ring ps ps-async}"
timeout_s="${TIMEOUT:-120}"
installed=/usr/share/datasets/cifar-10-batches-bin

[[ -x "$bin" ]] || { echo "distributed: $bin is not an executable (build tsum-train first)" >&2; exit 2; }
[[ "$(id -u)" -eq 0 ]] || { echo "distributed: needs root for ip netns (run with sudo)" >&2; exit 2; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "distributed: needs iproute2" >&2; exit 2; }

tag="tsd$$"  # namespaces tsd<pid>-<i>, bridge tsd<pid>b: two benches never collide
bridge="${tag}b"
tmp="$(mktemp -d)"
max_world=1
for w in $worlds; do (( w > max_world )) && max_world=$w; done

cleanup() {
  for ((i = 0; i < max_world; i++)); do
    ip netns pids "$tag-$i" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$tag-$i" 2>/dev/null || true
    ip link del "${tag}v$i" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# Hosts 10.77.0.1.. on a bridge; each uplink shaped in its namespace (egress: what the rank sends).
ip link add "$bridge" type bridge
ip link set "$bridge" up
shaping="netem delay $delay rate $rate"
for ((i = 0; i < max_world; i++)); do
  ns="$tag-$i"
  ip netns add "$ns"
  ip link add "${tag}v$i" type veth peer name eth0 netns "$ns"
  ip link set "${tag}v$i" master "$bridge" up
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  if ! ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" rate "$rate" 2>/dev/null; then
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
    shaping="tbf rate $rate (this kernel has no netem: DELAY=$delay not applied)"
  fi
done

data="${DATA:-}"
if [[ -z "$data" ]]; then
  if [[ -f "$installed/data_batch_1.bin" ]]; then
    data="$installed"
  else
    data="$tmp/cifar"
    "$bin" gen-cifar "$data" --n "$n" --seed 1 >/dev/null
  fi
fi

cpu="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: *//')"
echo "cpu: $cpu ($(nproc) cores)"
echo "link: $shaping per rank; cifar10_cnn, $n images (data $data), $epochs epochs, global batch $batch, 1 thread per rank"
if (( max_world > $(nproc) )); then
  echo "note: $max_world ranks on $(nproc) cores: runs with more ranks than cores are bound by cores, not the network"
fi

# field NAME of the last EVENT line in file $1
field() { sed -n "s/.*\"event\": *\"$2\".*\"$3\": *\([0-9.eE+-]*\).*/\1/p" "$1" | tail -n 1; }

# run MODE WORLD: starts WORLD ranks (one per namespace), waits, leaves rank 0's events in $tmp/MODE-WORLD-0.out
run() {
  local mode="$1" world="$2" port=$((29500 + RANDOM % 1000)) pids=() r
  local flags=(--model cifar10_cnn --data "$data" --limit "$n" --test-limit "$test_n" --epochs "$epochs"
               --batch "$batch" --threads 1 --seed 1)
  for ((r = 0; r < world; r++)); do
    local extra=(--checkpoint "$tmp/$mode-$world.pt")
    if (( world > 1 )); then
      extra+=(--world-size "$world" --rank "$r" --master "10.77.0.1:$port" --dist-timeout "$timeout_s")
      case "$mode" in
        ring) extra+=(--dist ring) ;;
        ps) extra+=(--dist ps) ;;
        ps-async) extra+=(--dist ps --ps-async) ;;
      esac
    fi
    ip netns exec "$tag-$r" "$bin" "${flags[@]}" "${extra[@]}" \
      >"$tmp/$mode-$world-$r.out" 2>"$tmp/$mode-$world-$r.err" &
    pids+=($!)
  done
  local failed=0
  for r in "${!pids[@]}"; do
    if ! wait "${pids[$r]}"; then
      echo "distributed: $mode on $world ranks: rank $r failed:" >&2
      cat "$tmp/$mode-$world-$r.err" >&2
      failed=1
    fi
  done
  return $failed
}

printf '%-9s %5s %10s %10s %10s %12s %9s %s\n' mode ranks images/s efficiency comm_share bytes/image accuracy staleness
base=""
if [[ " $worlds " == *" 1 "* ]]; then
  run single 1 || exit 1
  out="$tmp/single-1-0.out"
  base="$(field "$out" learn_end images_per_s)"
  printf '%-9s %5d %10.1f %10s %10s %12s %9.4f\n' "-" 1 "$base" "1.00" "0.00" "0" \
    "$(field "$out" verify test_accuracy)"
fi
for mode in $modes; do
  for world in $worlds; do
    (( world > 1 )) || continue
    run "$mode" "$world" || exit 1
    out="$tmp/$mode-$world-0.out"
    ips="$(field "$out" learn_end images_per_s)"
    eff="-"
    [[ -n "$base" ]] && eff="$(awk -v a="$ips" -v b="$base" -v w="$world" 'BEGIN { printf "%.2f", a / (b * w) }')"
    share="$(awk -v c="$(field "$out" learn_end comm_seconds_mean)" -v s="$(field "$out" learn_end seconds)" \
      'BEGIN { printf "%.2f", c / s }')"
    per_image="$(awk -v b="$(field "$out" learn_end bytes_sent_all)" -v w="$world" -v n="$n" -v e="$epochs" \
      'BEGIN { printf "%.0f", b / w / (n * e) }')"
    stale=""
    [[ "$mode" == ps-async ]] && stale="$(printf '%.2f' "$(field "$out" learn_end staleness_mean)")/$(field "$out" learn_end staleness_max)"
    printf '%-9s %5d %10.1f %10s %10s %12s %9.4f %s\n' "$mode" "$world" "$ips" "$eff" "$share" "$per_image" \
      "$(field "$out" verify test_accuracy)" "$stale"
  done
done
echo "efficiency: images/s / (ranks x one rank's); comm_share: mean over ranks of time waiting for"
echo "communication / learn time; bytes/image: bytes each rank sent per training image"
