#!/bin/sh
# REST throughput of tsumd against nginx serving the very bytes tsumd returns (Debian's nginx, 2 workers), both on
# loopback, measured with wrk (-t1 -c32 -d5s by default). tsumd runs the trace provider at high speed, so an
# experiment of RUNS (100) runs finishes in seconds; then, for each path, nginx gets a file with tsumd's body.
#   bench/rest.sh [BUILD_DIR]          (needs wrk and nginx: apt-get install wrk nginx-light; make build first)
# Environment: RUNS (100), DURATION (5s), CONNECTIONS (32), LIVE (1000); PERF_DIR=DIR records a perf profile of
# tsumd (perf record --call-graph dwarf) during each of its measurements into DIR/<what>.data.
# Prints requests/s of both and the ratio tsumd/nginx for GET /healthz, GET /v1/runs/{id} of a finished run,
# GET /v1/experiments/{id} with RUNS runs; then, with LIVE runs live (trace runs learning for years), GET of a live
# run and POST /v1/runs/{id}/events, each request a distinct mark (the next epoch's progress mark, the runs in
# turn) with wrk's latency percentiles; nginx answers those POSTs with tsumd's bytes (`return 200`).
# Goals (issue 17): healthz >= 0.9, a finished run >= 0.5, events >= 20,000/s with p99 < 20 ms.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${RUNS:-100}; duration=${DURATION:-5s}; conns=${CONNECTIONS:-32}; live=${LIVE:-1000}
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || { echo "bench/rest.sh: needs $tool (apt-get install wrk nginx-light curl)" >&2; exit 2; }
done
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
work=$(mktemp -d /tmp/tsum-bench-rest.XXXXXX)
port=$((20000 + $$ % 6000 * 2)); nport=$((port + 1))  # below the ephemeral range (32768-)
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null
  sleep 0.2; rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/trace.csv" <<'EOF'
config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,poweroff
t-2c,trace,t-2c,2,0,0.10,10,20,10,5,800,5,5,10
t-4c,trace,t-4c,4,0,0.12,10,20,10,5,400,5,5,10
t-live,trace,t-live,8,0,0.40,10,20,10,5,100000000,5,5,10
EOF
token=$("$build/bin/tsumd" token create --db "$work/t.db")
"$build/bin/tsumd" serve --db "$work/t.db" --listen "127.0.0.1:$port" --trace "$work/trace.csv" --trace-speed 100000 \
  --max-concurrent $((live + 100)) 2>"$work/tsumd.log" &
daemon=$!
base=http://127.0.0.1:$port
api() { curl -fsS -H "Authorization: Bearer $token" "$@"; }
field() { /usr/bin/python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]: v = v[int(k) if isinstance(v, list) else k]
print(v)' "$@"; }
i=0; until curl -fsS "$base/healthz" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 120 ] && { echo "tsumd did not start" >&2; cat "$work/tsumd.log" >&2; exit 1; }; sleep 0.5
done
exp=$(api -X POST -H 'Content-Type: application/json' "$base/v1/experiments" -d "{\"name\":\"rest bench\",
  \"workload\":{\"epochs\":1},\"configs\":[{\"provider\":\"trace\",\"instance_type\":\"t-2c\"}],\"repetitions\":$runs}" |
  field id)
i=0; until [ "$(api "$base/v1/experiments/$exp" | field status)" = done ]; do
  i=$((i + 1)); [ $i -gt 600 ] && { echo "the experiment did not finish" >&2; exit 1; }; sleep 0.5
done
run=$(api "$base/v1/experiments/$exp" | field runs 0 id)

# nginx: the same bytes at the same paths.
mkdir -p "$work/www"
curl -fsS "$base/healthz" > "$work/www/healthz"
api "$base/v1/runs/$run" > "$work/www/run"
api "$base/v1/experiments/$exp" > "$work/www/experiment"
cat > "$work/nginx.conf" <<EOF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 1024; }
http {
  access_log off;
  default_type application/json;
  client_body_temp_path $work/nb; proxy_temp_path $work/np; fastcgi_temp_path $work/nf;
  uwsgi_temp_path $work/nu; scgi_temp_path $work/ns;
  server {
    listen 127.0.0.1:$nport;
    location = /healthz { alias $work/www/healthz; }
    location = /v1/runs/$run { alias $work/www/run; }
    location = /v1/experiments/$exp { alias $work/www/experiment; }
  }
}
EOF
"$nginx_bin" -c "$work/nginx.conf" -e "$work/nginx.err"
sleep 0.3

profile() {  # NAME: with PERF_DIR, perf records tsumd for the next measurement
  [ -n "${PERF_DIR:-}" ] || return 0
  mkdir -p "$PERF_DIR"
  perf record -q --call-graph dwarf -F 499 -p "$daemon" -o "$PERF_DIR/$1.data" -- sleep "${duration%s}" 2>/dev/null &
  perf_pid=$!
}
profiled() { [ -z "${perf_pid:-}" ] || wait "$perf_pid"; perf_pid=; }
# CPU while wrk runs against tsumd: tsumd's share of one core and the machine's idle share of its cores.
hz=$(getconf CLK_TCK)
usage() { echo "$(awk '{print $14 + $15}' "/proc/$daemon/stat") $(awk '/^cpu / {print $5 + $6}' /proc/stat) $(date +%s.%N)"; }
cpu_since() {  # USAGE-BEFORE -> "tsumd N% idle M%" into $work/cpu
  set -- $1 $(usage)
  awk -v a="$1" -v b="$4" -v i="$2" -v j="$5" -v s="$3" -v e="$6" -v hz="$hz" -v n="$(nproc)" \
    'BEGIN { printf "tsumd %.0f%% idle %.0f%%", 100 * (b - a) / hz / (e - s), 100 * (j - i) / hz / (e - s) / n }' > "$work/cpu"
}
rate() {  # requests/s of wrk against URL
  before=$(usage)
  wrk -t1 -c"$conns" -d"$duration" -H "Authorization: Bearer $token" "$1" | awk '/Requests\/sec/ {print $2}'
  cpu_since "$before"
}
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "bench/rest.sh on $cpu, $(nproc) cores; wrk -t1 -c$conns -d$duration; nginx $("$nginx_bin" -v 2>&1 | cut -d/ -f2), 2 workers"
printf '%-34s %8s %12s %12s %7s   %s\n' path bytes tsumd_req/s nginx_req/s ratio "CPU during tsumd's (of one core; idle: of all)"
for row in "healthz /healthz" "run /v1/runs/$run" "experiment /v1/experiments/$exp"; do
  file=${row%% *}; path=${row#* }
  profile "$file"; t=$(rate "$base$path"); profiled; c=$(cat "$work/cpu"); n=$(rate "http://127.0.0.1:$nport$path")
  printf '%-34s %8s %12s %12s %7s   %s\n' "GET $path" "$(wc -c < "$work/www/$file")" "$t" "$n" \
    "$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.2f", t / n }')" "$c"
done

# LIVE runs live: a trace config whose learn lasts 10^8 recorded s, in experiments of up to 100 runs (their ids
# consecutive, after the finished experiment's).
left=$live
while [ "$left" -gt 0 ]; do
  n=$((left < 100 ? left : 100)); left=$((left - n))
  api -X POST -H 'Content-Type: application/json' "$base/v1/experiments" -d "{\"name\":\"rest bench live\",
    \"workload\":{\"epochs\":1},\"configs\":[{\"provider\":\"trace\",\"instance_type\":\"t-live\"}],\"repetitions\":$n}" >/dev/null
done
learning() { api "$base/v1/runs?status=learning"; }
i=0; until [ "$(learning | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["runs"]))')" -ge "$live" ]; do
  i=$((i + 1)); [ $i -gt 240 ] && { echo "$live runs did not all start learning" >&2; exit 1; }; sleep 0.5
done
first=$(learning | /usr/bin/python3 -c 'import json, sys; print(min(r["id"] for r in json.load(sys.stdin)["runs"]))')
api "$base/v1/runs/$first" > "$work/www/live"
cat > "$work/events.lua" <<LUA
-- Each request a distinct mark: run FIRST + n % LIVE (ids are consecutive), the next epoch of that run.
local n = 0
request = function()
  local run = $first + n % $live
  local epoch = math.floor(n / $live) + 1
  n = n + 1
  local body = string.format('{"phase":"learn","mark":"progress","mono_s":%d,"attrs":{"event":"epoch","epoch":%d,"loss":0.5}}', 100 + epoch, epoch)
  return wrk.format("POST", "/v1/runs/" .. run .. "/events", nil, body)
end
LUA
# nginx: the live run's bytes, and the events answer for every POST.
awk -v first="$first" -v www="$work/www" '/location = \/healthz/ {
  print "    location = /v1/runs/" first " { alias " www "/live; }"
  print "    location ~ ^/v1/runs/[0-9]+/events$ { return 200 \x27{\"recorded\":true,\"duplicate\":false}\x27; }" } { print }' \
  "$work/nginx.conf" > "$work/nginx.conf.new" && mv "$work/nginx.conf.new" "$work/nginx.conf"
"$nginx_bin" -c "$work/nginx.conf" -e "$work/nginx.err" -s reload; sleep 0.5
profile live; t=$(rate "$base/v1/runs/$first"); profiled; c=$(cat "$work/cpu"); n=$(rate "http://127.0.0.1:$nport/v1/runs/$first")
printf '%-34s %8s %12s %12s %7s   %s\n' "GET /v1/runs/{id} live" "$(wc -c < "$work/www/live")" "$t" "$n" \
  "$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.2f", t / n }')" "$c"
events() {  # URL: "requests/s p50 p99" of wrk posting distinct marks
  before=$(usage)
  wrk -t1 -c"$conns" -d"$duration" --latency -s "$work/events.lua" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' "$1" |
    awk '/Requests\/sec/ {r = $2} $1 == "50%" {p50 = $2} $1 == "99%" {p99 = $2} END {print r, p50, p99}'
  cpu_since "$before"
}
profile events; te=$(events "$base"); profiled; c=$(cat "$work/cpu"); ne=$(events "http://127.0.0.1:$nport")
set -- $te
printf '%-34s %8s %12s %12s %7s   %s; tsumd p50 %s p99 %s\n' "POST /v1/runs/{id}/events" 36 "$1" "${ne%% *}" \
  "$(awk -v t="$1" -v n="${ne%% *}" 'BEGIN { printf "%.2f", t / n }')" "$c" "$2" "$3"
echo "($live runs live; epochs stored: $(api "$base/v1/runs/$first" | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["epochs"]))') on the first of them)"
echo "goals: healthz >= 0.9 of nginx; a finished run >= 0.5; events >= 20000/s with p99 < 20 ms while $live runs are live"
