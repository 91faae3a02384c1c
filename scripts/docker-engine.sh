#!/bin/sh
# A private Docker engine whose whole state lives in one directory, for tests and for `make image` on machines
# without a system dockerd. Debian's docker.io (dockerd 20.10, API 1.41), as root.
#   scripts/docker-engine.sh start STATE_DIR    starts it unless it already answers; prints the DOCKER_HOST
#                                               to use (unix://STATE_DIR/docker.sock) on stdout
#   scripts/docker-engine.sh stop STATE_DIR     stops it (TERM, then KILL after 60 s), waits, unmounts leftovers
#   scripts/docker-engine.sh status STATE_DIR   exit 0 and print the DOCKER_HOST if it answers, else exit 1
# Layout: STATE_DIR/data (data-root: images, persists between runs, so images stay cached), STATE_DIR/exec
# (exec-root), docker.sock, dockerd.pid, dockerd.log, daemon.json (empty: /etc/docker/daemon.json is ignored),
# driver (the storage driver chosen at the first start, kept so the cache stays valid).
# Storage driver (TSUM_DOCKER_STORAGE_DRIVER): overlay2 when the kernel mounts an overlay in STATE_DIR (a test
# mount at the first start), else vfs (works on any file system, also inside containers, but copies the whole
# image for every container: `docker run` takes seconds instead of a fraction of one). No bridge and no iptables
# rules: containers run with --network none or --network host only. It pulls from registries on 127.0.0.0/8
# over plain HTTP (insecure-allowed by default). Every wait is bounded; start and stop of one STATE_DIR are
# serialised with a lock, so concurrent callers share one engine.
set -eu
usage="usage: docker-engine.sh start|stop|status STATE_DIR"
cmd=${1:?$usage}
state=${2:?$usage}
mkdir -p "$state"
state=$(cd "$state" && pwd)
sock=$state/docker.sock
host=unix://$sock
pidfile=$state/dockerd.pid
log=$state/dockerd.log
start_limit=${TSUM_DOCKER_START_TIMEOUT:-90}

docker=/usr/bin/docker
[ -x "$docker" ] || docker=$(command -v docker || true)

say() { echo "docker-engine: $*" >&2; }

answers() {
  [ -S "$sock" ] && [ -n "$docker" ] &&
    DOCKER_HOST=$host timeout 10 "$docker" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

# Whether process $1 runs (a zombie does not).
running() {
  [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

pid_alive() {
  [ -s "$pidfile" ] && running "$(cat "$pidfile")"
}

# Waits (at most $1 seconds) until the process $2 is gone.
wait_gone() {
  n=0
  while running "$2"; do
    [ "$n" -ge "$(($1 * 10))" ] && return 1
    sleep 0.1
    n=$((n + 1))
  done
}

unmount_leftovers() {
  # Mounts a killed dockerd left: the data-root's private bind mount, netns files of containers.
  awk -v p="$state/" 'index($2, p) == 1 || $2 == substr(p, 1, length(p) - 1) { print $2 }' /proc/mounts |
    sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

stop_engine() {
  if pid_alive; then
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone 60 "$pid"; then
      say "dockerd $pid did not stop within 60 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone 10 "$pid" || { say "dockerd $pid survives SIGKILL"; exit 1; }
    fi
  fi
  # A containerd that outlived a killed dockerd.
  cpid=$state/exec/containerd/containerd.pid
  if [ -s "$cpid" ] && running "$(cat "$cpid")"; then
    kill -TERM "$(cat "$cpid")" 2>/dev/null || true
    wait_gone 20 "$(cat "$cpid")" || kill -KILL "$(cat "$cpid")" 2>/dev/null || true
  fi
  unmount_leftovers
  # Stale pid files fool the next dockerd (pids wrap around): it would wait for a containerd that is not there.
  rm -f "$pidfile" "$sock" "$cpid"
}

# overlay2 if an overlay mounts on STATE_DIR's file system (not so on overlayfs itself, or without the module).
probe_driver() {
  p=$state/overlay-probe
  rm -rf "$p"
  mkdir -p "$p/lower" "$p/upper" "$p/work" "$p/merged"
  if mount -t overlay overlay -o "lowerdir=$p/lower,upperdir=$p/upper,workdir=$p/work" "$p/merged" 2>/dev/null; then
    umount "$p/merged"
    echo overlay2
  else
    echo vfs
  fi
  rm -rf "$p"
}

start_engine() {
  if answers; then echo "$host"; return 0; fi
  [ "$(id -u)" -eq 0 ] || { say "a private dockerd needs root"; exit 1; }
  command -v dockerd >/dev/null 2>&1 || { say "dockerd is missing: install docker.io (scripts/install-deps.sh)"; exit 1; }
  [ -n "$docker" ] || { say "the docker CLI is missing: install docker.io (scripts/install-deps.sh)"; exit 1; }
  # Unix socket paths are limited to 108 bytes; containerd's socket lies deeper than docker.sock.
  [ "${#state}" -le 80 ] || { say "STATE_DIR path is too long for unix sockets (${#state} > 80): $state"; exit 1; }
  # A dockerd that runs but does not answer is hung, or one from a crash: replace it.
  stop_engine
  mkdir -p "$state/data" "$state/exec"
  [ -f "$state/daemon.json" ] || echo '{}' >"$state/daemon.json"
  driver=${TSUM_DOCKER_STORAGE_DRIVER:-$(cat "$state/driver" 2>/dev/null || true)}
  [ -n "$driver" ] || driver=$(probe_driver)
  echo "$driver" >"$state/driver"
  # Keep the log bounded across many runs.
  if [ -f "$log" ] && [ "$(wc -c <"$log")" -gt 10000000 ]; then mv -f "$log" "$log.old"; fi
  echo "=== $(date -u +%FT%TZ) start" >>"$log"
  setsid dockerd --config-file "$state/daemon.json" --storage-driver="$driver" --iptables=false --ip-masq=false \
    --ip-forward=false --bridge=none --userland-proxy=false --data-root "$state/data" \
    --exec-root "$state/exec" --pidfile "$pidfile" -H "$host" </dev/null >>"$log" 2>&1 9>&- &
  launched=$!
  n=0
  until answers; do
    if [ "$n" -ge "$((start_limit * 5))" ]; then
      say "dockerd did not answer on $sock within ${start_limit} s; last lines of $log:"
      tail -n 15 "$log" >&2
      stop_engine
      exit 1
    fi
    if ! running "$launched" && ! pid_alive; then
      say "dockerd exited; last lines of $log:"
      tail -n 15 "$log" >&2
      exit 1
    fi
    sleep 0.2
    n=$((n + 1))
  done
  echo "$host"
}

exec 9>"$state/engine.lock"
flock -w 180 9 || { say "timed out waiting for another start/stop of $state"; exit 1; }
case "$cmd" in
  start) start_engine ;;
  stop) stop_engine ;;
  status) answers && echo "$host" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
