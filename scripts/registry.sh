#!/bin/sh
# A private Docker registry (Debian's docker-registry, distribution 2.8) on loopback, for tests and for serving
# the workload image to guests.
#   scripts/registry.sh start STATE_DIR PORT   starts it on http://127.0.0.1:PORT unless it already runs there;
#                                              prints 127.0.0.1:PORT (the registry part of image references)
#   scripts/registry.sh stop STATE_DIR         stops it (TERM, then KILL after 20 s) and waits
# With TSUM_REGISTRY_USER and TSUM_REGISTRY_PASSWORD set at start, every request needs HTTP basic auth with
# them (htpasswd file with a bcrypt hash, made with perl's crypt(3)); `docker login 127.0.0.1:PORT` then works.
# Layout: STATE_DIR/data (blobs and manifests), config.yml, htpasswd, registry.pid, registry.log (with an access
# log line per request: "GET /v2/NAME/blobs/sha256:... HTTP/1.1" 200 BYTES ...). Exit status 3: PORT is taken.
# Plain HTTP: Docker allows it for registries on 127.0.0.0/8 without configuration. TSUM_REGISTRY_ADDR (default
# 127.0.0.1) is the address it listens on, e.g. 0.0.0.0 to serve guests on a test bridge as well (their engines
# need it as an --insecure-registry); it always answers on 127.0.0.1:PORT too then.
set -eu
usage="usage: registry.sh start STATE_DIR PORT | stop STATE_DIR"
cmd=${1:?$usage}
state=${2:?$usage}
mkdir -p "$state"
state=$(cd "$state" && pwd)
pidfile=$state/registry.pid
log=$state/registry.log

say() { echo "registry: $*" >&2; }

running() {
  [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

pid_alive() { [ -s "$pidfile" ] && running "$(cat "$pidfile")"; }

# The HTTP status of GET /v2/ (200, or 401 with auth), or 000.
probe() { curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$1/v2/" 2>/dev/null || true; }

stop_registry() {
  pid_alive || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  n=0
  while running "$pid"; do
    if [ "$n" -eq 200 ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    [ "$n" -ge 300 ] && { say "registry $pid does not exit"; exit 1; }
    sleep 0.1
    n=$((n + 1))
  done
  rm -f "$pidfile"
}

# bcrypt (what the registry's htpasswd accepts) through libcrypt, with a random 22-character salt.
bcrypt() {
  salt=$(tr -dc './A-Za-z0-9' </dev/urandom | head -c 22)
  PW=$1 SALT=$salt perl -e 'print crypt($ENV{PW}, "\$2b\$10\$" . $ENV{SALT})'
}

start_registry() {
  port=${1:?$usage}
  command -v docker-registry >/dev/null 2>&1 ||
    { say "docker-registry is missing: install docker-registry (scripts/install-deps.sh)"; exit 1; }
  command -v curl >/dev/null 2>&1 || { say "curl is missing: install curl"; exit 1; }
  if pid_alive && [ "$(cat "$state/port" 2>/dev/null)" = "$port" ]; then
    case $(probe "$port") in 200 | 401) echo "127.0.0.1:$port"; return 0 ;; esac
  fi
  stop_registry
  [ "$(probe "$port")" = 000 ] || { say "127.0.0.1:$port is taken"; exit 3; }
  mkdir -p "$state/data"
  auth=""
  if [ -n "${TSUM_REGISTRY_USER:-}" ]; then
    hash=$(bcrypt "${TSUM_REGISTRY_PASSWORD:?TSUM_REGISTRY_PASSWORD must go with TSUM_REGISTRY_USER}")
    # shellcheck disable=SC2016 # a literal $2b$ prefix
    case $hash in '$2b$'*) ;; *) say "perl's crypt() made no bcrypt hash (libcrypt without bcrypt?)"; exit 1 ;; esac
    printf '%s:%s\n' "$TSUM_REGISTRY_USER" "$hash" >"$state/htpasswd"
    auth="auth:
  htpasswd:
    realm: tsum-registry
    path: $state/htpasswd"
  fi
  cat >"$state/config.yml" <<EOF
version: 0.1
log:
  level: warn
  formatter: text
storage:
  filesystem:
    rootdirectory: $state/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: ${TSUM_REGISTRY_ADDR:-127.0.0.1}:$port
  secret: $(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32)
$auth
EOF
  echo "$port" >"$state/port"
  : >"$log"
  setsid docker-registry serve "$state/config.yml" </dev/null >>"$log" 2>&1 9>&- &
  launched=$!
  echo "$launched" >"$pidfile"
  n=0
  while :; do
    case $(probe "$port") in 200 | 401) break ;; esac
    if ! running "$launched"; then
      if grep -q 'address already in use' "$log"; then say "127.0.0.1:$port is taken"; rm -f "$pidfile"; exit 3; fi
      say "docker-registry exited; last lines of $log:"
      tail -n 10 "$log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    if [ "$n" -ge 300 ]; then
      say "docker-registry does not answer on 127.0.0.1:$port/v2/ within 30 s; last lines of $log:"
      tail -n 10 "$log" >&2
      stop_registry
      exit 1
    fi
    sleep 0.1
    n=$((n + 1))
  done
  echo "127.0.0.1:$port"
}

exec 9>"$state/registry.lock"
flock -w 60 9 || { say "timed out waiting for another start/stop of $state"; exit 1; }
case "$cmd" in
  start) start_registry "${3:-}" ;;
  stop) stop_registry ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
