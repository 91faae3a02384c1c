#!/bin/sh
# tsum agent: runs inside the instance and performs install -> load_data -> start -> learn -> verify -> save,
# posting a begin and an end mark for each phase to the daemon.
#
# Why a POSIX shell script: it must run on a stock Debian/Ubuntu cloud image the moment it boots. /bin/sh,
# curl, cp and gzip are there; a binary of ours would be tied to the glibc we built it against.
#
# Protocol: POST $TSUM_URL/v1/runs/$TSUM_RUN_ID/events with "Authorization: Bearer $TSUM_TOKEN" and body
#   {"phase":"learn","mark":"begin"|"end"|"progress"|"error","mono_s":<seconds>,"attrs":{...},"stats":{...}}
# mono_s is CLOCK_BOOTTIME (/proc/uptime), the same clock tsum-train stamps its events with, so phase
# durations are taken inside the instance and do not depend on when an event reaches the daemon.
# An end mark carries the phase's resource statistics, as the seed's dstat run recorded them:
#   "stats": {"cpu_pct": {"min","avg","max"}, "rss_bytes": {...}, "read_bps": {...}, "write_bps": {...},
#             "gpu_util_pct": {...}, "gpu_mem_bytes": {...}}   (GPU ones only where tsum-gpustat finds a GPU)
# taken over every process of the agent's session (agent, tsum-train, their children), sampled every
# TSUM_SAMPLE_S seconds (default 1) and at each mark. cpu_pct is of one core (200 = two busy cores).
# Events are spooled to files first and sent in order; while the daemon is unreachable (connection refused,
# timeout, 5xx) they wait in the spool and are retried with backoff, so none is lost. The daemon ignores
# duplicates, so resending is always safe. A 4xx is final (e.g. the run was cancelled).
#
# Everything the agent needs comes over the network from the daemon's public URL (or from URLs the user named):
# nothing here refers to a path of the daemon's machine. Downloads resume (HTTP Range) and are checked against
# their sha256; results go back with PUT in pieces that resume where the daemon's copy ends.
#
# Environment:
#   TSUM_URL, TSUM_RUN_ID, TSUM_TOKEN   required: the daemon's public URL, the run and its run token
#   TSUM_CA_PEM                         the CA (PEM text) that signed the daemon's TLS certificate
#   TSUM_UNIX_SOCKET                    reach TSUM_URL through this Unix socket (the ssh provider's tunnel)
#   TSUM_TRAINER_URL, TSUM_TRAINER_SHA256   the self-contained trainer bundle (tar.gz, tsum/bin/tsum-train)
#   TSUM_DATA_URL, TSUM_DATA_SHA256     the data set (tar or tar.gz), unpacked into the data directory
#   TSUM_DATA_NAME, TSUM_DATA_FORMAT    its name and format, for messages and marks
#   TSUM_RUNTIME, TSUM_IMAGE            "docker": install pulls TSUM_IMAGE (timed as install) and tsum-train
#                                       runs in it; "container": the agent itself runs in TSUM_IMAGE (a
#                                       Kubernetes Pod: the pull was part of startup) and runs tsum-train or the
#                                       job's command directly, with the data set, outputs and checkpoints under
#                                       $WORK (data, out, checkpoint); default "native"
#   TSUM_REGISTRY_USER, TSUM_REGISTRY_PASSWORD   docker: log in to TSUM_IMAGE's registry first
#   TSUM_TRAIN_ARGS                     extra tsum-train flags (model, optimizer, epochs, limits, threads, ...)
#   TSUM_JOB_RUN, TSUM_JOB_SETUP        a folder job (TSUM_KIND=job): the shell lines learn and install run in the
#                                       job's folder, in TSUM_IMAGE when set (the folder at /tsum/job), else here
#   TSUM_WORKDIR_URL, TSUM_WORKDIR_SHA256   that folder (a tar.gz), unpacked in install
#   TSUM_KIND                           train (default); infer: tsum-train infer, the sweep measured as learn;
#                                       serve: node 0 runs tsum-train serve, node 1 tsum-train load (below)
#   TSUM_LOAD_ARGS                      serve: the load client's tsum-train load flags (node 1)
#   TSUM_GEN_IMAGES                     without a data set: tsum-train gen-images flags for load_data
#   TSUM_POWEROFF                       "none": a machine that is not ours (byo); the agent removes its work
#                                       directory at the end and powers nothing off
#   TSUM_DRAIN_S                        how long to keep retrying the spool at the end (default 600)
#   TSUM_SAMPLE_S                       resource sampling interval in seconds (default 1)
#   TSUM_CACHE_DIR                      the machine's cache of unpacked bundles and data sets (below); none if unset
#   TSUM_WARM_ONLY                      "1": fill that cache (install and load_data, a folder job's setup) and exit
#                                       0, posting no event: the daemon's unmeasured warm-up before a run, so that
#                                       every run of an experiment finds the machine warm; its output goes to the
#                                       run's log as source w<attempt>
#   TSUM_NODES, TSUM_NODE               a multi-node run: this machine is node TSUM_NODE (0-based) of TSUM_NODES;
#                                       every event carries "node", and in start the nodes meet (below)
#   TSUM_DIST                           ring (default), ps or ps-async: how the nodes train together
#   TSUM_SPOT_NOTICE                    aws, gce or azure: watch the cloud's advance notice of an interruption
#                                       (below); TSUM_METADATA_URL its metadata service's base URL (default the
#                                       cloud's own), TSUM_NOTICE_POLL_S how often to ask (default 2)
#   TSUM_CHECKPOINT_EVERY               seconds between tsum-train's periodic checkpoints (default 0: at a notice only)
#   TSUM_ATTEMPT                        which machine of the run this is (1, 2, ...: a resumed run's)
#   TSUM_RESUME_URL, TSUM_RESUME_SHA256 the checkpoint to go on from (a tar.gz of the checkpoint directory)
#   TSUM_NODE_ADDRESS, TSUM_DIST_PORT   node 0's address the others reach (default: 127.0.0.1 when the daemon is
#                                       on loopback, else this machine's first address) and its port
#
# Spot (TSUM_SPOT_NOTICE): a watcher polls the metadata service every TSUM_NOTICE_POLL_S seconds (AWS IMDSv2
# spot/instance-action, GCE instance/preempted, Azure Scheduled Events' Preempt). On a notice it posts an
# "interrupted" mark at once (attrs: the cloud and the notice's text) and sends SIGTERM to tsum-train (or to a
# job's container): tsum-train finishes its step, writes its checkpoint and exits 75. Checkpoints live in the
# checkpoint directory ($WORK/ckpt; a job sees it as TSUM_CHECKPOINT_DIR=/tsum/checkpoint); each one, periodic or
# at the notice, goes to the daemon as the artifact checkpoint-a<attempt>-<n>.tar.gz, then a "checkpoint" mark
# names it (sent beside the trainer, the newest only: see checkpoint_snapshot). After a notice the agent sends what
# is spooled and leaves the machine to the cloud. A resumed attempt downloads its checkpoint in load_data and
# unpacks it into the checkpoint directory. On a run of several nodes
# each rank checkpoints (checkpoint-a<attempt>-n<node>-<n>.tar.gz) at the step the ranks agree on, so a notice to
# one machine stops them all there (their tsum-train exits 75 too) and each resumes from its own.
#
# Multi-node (TSUM_NODES > 1): after load_data, node 0 posts {"address", "port"} to
# $TSUM_URL/v1/runs/$TSUM_RUN_ID/rendezvous and the others poll it (GET) until it is there; then each runs
# tsum-train --world-size N --rank NODE --master ADDRESS:PORT --dist DIST (rank 0 listens there). Node 0 saves
# the checkpoint; the others upload their event log and samples as node<N>/events.jsonl and node<N>/samples.csv.
#
# Serving (TSUM_KIND=serve, two nodes, docs/serving.md): node 0 runs tsum-train serve on the port, posts the
# rendezvous once the model answers (its ready event: start ends, learn begins), and serves until the client
# stops it; node 1 waits for the rendezvous and runs tsum-train load against it (load_ready ends its start; each
# load_level is a learn progress mark; load_end ends learn), then stops the server with a token both derive from
# the run token. Neither verifies or saves a checkpoint; both upload their event logs.
#
# Output (GET /v1/runs/{id}/logs): a job's stdout and stderr, tsum-train's events and stderr, and the agent's own
# messages go, each line stamped with CLOCK_BOOTTIME as it is read, to $WORK/run.log. A shipper sends its new
# lines every half second to POST $TSUM_URL/v1/runs/$TSUM_RUN_ID/logs?source=a<attempt>n<node>&from=N&now=MONO,
# N being the number of the first line sent; the daemon answers with the next number it expects, and the
# shipper goes on from there (what it last heard is in $WORK/log.sent: "LINES BYTES"), so a send whose answer was
# lost is sent again and dropped by the daemon, and a daemon that was away gets every line when it is back.
# Before the last event (save's end, or an error) the agent sends every line left, within TSUM_DRAIN_S.
set -u
: "${TSUM_URL:?}" "${TSUM_RUN_ID:?}" "${TSUM_TOKEN:?}"
WORK=$(pwd)
SPOOL="$WORK/spool"
CKPT="$WORK/ckpt"
[ "${TSUM_RUNTIME:-native}" = container ] && CKPT="$WORK/checkpoint"
mkdir -p "$SPOOL" "$WORK/bin" "$WORK/data" "$WORK/out" "$CKPT"
SEQ=0
NODES=${TSUM_NODES:-1}
NODE=${TSUM_NODE:-0}
NODE_FIELD=""; [ "$NODES" -gt 1 ] && NODE_FIELD=",\"node\":$NODE"

LOG="$WORK/run.log"
: >> "$LOG"
# log MESSAGE: to stderr and the run's log, every line of it stamped (the daemon takes only "MONO_S TEXT" lines: a
# detail that quotes a job's last lines, as a failed setup's does, would otherwise hold up every line after it).
log() {
  echo "tsum-agent: $*" >&2
  read -r up _ < /proc/uptime
  printf 'tsum-agent: %s\n' "$*" | tr -d '\r' | while IFS= read -r line; do printf '%s %s\n' "$up" "$line"; done >> "$LOG"
}
now() { read -r up _ < /proc/uptime; echo "$up"; }
# stamp [COPY]: each line of stdin into the run's log, stamped as it is read (a job's output, tsum-train's stderr),
# and as it is to COPY when named. Built-ins only: no process per line.
stamp() {
  while IFS= read -r line || [ -n "$line" ]; do
    read -r up _ < /proc/uptime
    printf '%s %s\n' "$up" "$line" >> "$LOG"
    [ -z "${1:-}" ] || printf '%s\n' "$line" >> "$1"
  done
}

# Resource sampling. A sample line is "mono_s cpu_ticks rss_bytes read_bytes write_bytes [gpu_util gpu_mem]",
# cumulative over the session (a reaped child's CPU time and I/O move into its parent's counters).
SID=$(awk '{sub(/^[0-9]+ \(.*\) /, ""); print $4}' /proc/$$/stat)
PAGE=$(getconf PAGESIZE)
HZ=$(getconf CLK_TCK)
CORES=$(nproc 2>/dev/null || echo 1)  # the cores this agent may run on (its affinity): CPU tops out at 100 x CORES
GPUSTAT="$WORK/tsum/bin/tsum-gpustat"  # from the trainer bundle; $WORK/have_gpu once it found a GPU
# docker run's GPU flag: none without a GPU; the machine's GPUs that CUDA_VISIBLE_DEVICES names where it is a list
# (the local provider's, on a host it shares; docker's CSV syntax wants the quotes), else all of them.
docker_gpus() {
  [ -e "$WORK/have_gpu" ] || return 0
  case "${CUDA_VISIBLE_DEVICES:-}" in
    '' | *[!0-9,]*) echo "--gpus all" ;;
    *) echo "--gpus \"device=$CUDA_VISIBLE_DEVICES\"" ;;
  esac
}
sample() {
  read -r up _ < /proc/uptime
  gpu=""
  [ -e "$WORK/have_gpu" ] && gpu=$("$GPUSTAT" --line 2>/dev/null | awk 'NF == 2 {printf " %s %s", $1, $2}')
  { grep -H '' /proc/[0-9]*/stat; grep -H '_bytes:' /proc/[0-9]*/io; } 2>/dev/null |
    awk -v sid="$SID" -v up="$up" -v page="$PAGE" -v gpu="$gpu" '
      /\/stat:/ { split($0, p, "/"); s = $0; sub(/^[^ ]* \(.*\) /, "", s); split(s, f, " ")
                  if (f[4] == sid) { mine[p[3]] = 1; cpu += f[12] + f[13] + f[14] + f[15]; rss += f[22] }; next }
      { split($0, p, "/"); if (!(p[3] in mine)) next
        if (index($0, ":read_bytes:")) rb += $2; else if (index($0, ":write_bytes:")) wb += $2 }
      END { printf "%s %.0f %.0f %.0f %.0f%s\n", up, cpu, rss * page, rb, wb, gpu }' >> "$WORK/samples"
}

# stats BEGIN_MONO: min/avg/max of each metric from BEGIN_MONO to the newest sample, as a JSON object. Every figure
# is one that could be: the counters are summed over the session's processes, and one that leaves it (reaped by a
# process outside it, or gone before the sample read it) takes its ticks and bytes with it, so a sum can fall;
# what was spent stays spent, so a fall is carried as an offset and the sums only grow. CPU is then at most
# 100 x CORES (ticks of a child reaped at once land in one span) and no rate is negative. Rates cover spans of
# at least 0.25 s (shorter ones are mostly tick quantization), the phase's average its whole length.
stats() {
  sort -n "$WORK/samples" | awk -v b="$1" -v hz="$HZ" -v top="$((100 * CORES))" '
    function acc(k, v) { if (!(k in mn) || v < mn[k]) mn[k] = v; if (!(k in mx) || v > mx[k]) mx[k] = v }
    function out(k, avg) { printf "%s\"%s\":{\"min\":%.6g,\"avg\":%.6g,\"max\":%.6g}", (o++ ? "," : ""), k, mn[k], avg, mx[k] }
    function cpu(ticks, dt) { v = 100 * ticks / hz / dt; return v > top ? top : v }
    function grown(x, k) { if (n > 1 && x + off[k] < last[k]) off[k] = last[k] - x; last[k] = x + off[k]; return last[k] }
    $1 + 0.01 <= b { next }  # /proc/uptime is cut to 10 ms: a sample stamped up to 10 ms before b may follow it
    { n++; t[n] = $1; acc("rss_bytes", $3); rss += $3
      if (NF >= 7) { acc("gpu_util_pct", $6); acc("gpu_mem_bytes", $7); gu += $6; gm += $7; gn++ }
      c[n] = grown($2, "c"); r[n] = grown($4, "r"); w[n] = grown($5, "w")
      if (n == 1) l = 1
      else if ((dt = t[n] - t[l]) >= 0.25) {
        acc("cpu_pct", cpu(c[n] - c[l], dt)); acc("read_bps", (r[n] - r[l]) / dt)
        acc("write_bps", (w[n] - w[l]) / dt); l = n } }
    END { printf "{"
      if (n) { out("rss_bytes", rss / n); if ("gpu_util_pct" in mn) { out("gpu_util_pct", gu / gn); out("gpu_mem_bytes", gm / gn) } }
      if (n > 1 && (dt = t[n] - t[1]) >= 0.005) {
        # The average covers the whole phase, the spans only its first part: widen min/max to hold it.
        acc("cpu_pct", cpu(c[n] - c[1], dt)); acc("read_bps", (r[n] - r[1]) / dt)
        acc("write_bps", (w[n] - w[1]) / dt)
        out("cpu_pct", cpu(c[n] - c[1], dt)); out("read_bps", (r[n] - r[1]) / dt); out("write_bps", (w[n] - w[1]) / dt) }
      printf "}" }'
}
# Every request to the daemon: its CA, the tunnel socket if any, the run token.
CACERT=""
if [ -n "${TSUM_CA_PEM:-}" ]; then printf '%s\n' "$TSUM_CA_PEM" > "$WORK/ca.pem"; CACERT="$WORK/ca.pem"; fi
dcurl() {
  curl ${CACERT:+--cacert "$CACERT"} ${TSUM_UNIX_SOCKET:+--unix-socket "$TSUM_UNIX_SOCKET"} \
    -H "Authorization: Bearer $TSUM_TOKEN" "$@"
}
# json_str TEXT: TEXT as a JSON string, its lines joined with " | ".
json_str() {
  printf '"%s"' "$(printf '%s' "$1" | awk 'NR > 1 { printf " | " } { printf "%s", $0 }' | tr -d '\000-\037' |
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}

# flush: the spooled events in order. Each is claimed by renaming it first: the checkpoint uploader flushes too.
ME=m  # this process's own files (the uploader's: u)
flush() {
  for f in "$SPOOL"/*.json; do
    [ -e "$f" ] || return 0
    mv "$f" "$f.$ME" 2>/dev/null || continue  # the other one has it
    code=$(dcurl -sS -o "$WORK/last_response.$ME" -w '%{http_code}' --connect-timeout 3 --max-time 15 \
      -H 'Content-Type: application/json' \
      --data-binary "@$f.$ME" "$TSUM_URL/v1/runs/$TSUM_RUN_ID/events" 2>>"$WORK/curl.err") || code=000
    case $code in
      2??) rm -f "$f.$ME" ;;
      4??) log "event $(basename "$f") refused, HTTP $code: $(cat "$WORK/last_response.$ME")"; mv "$f.$ME" "$f.refused" ;;
      *) mv "$f.$ME" "$f"; return 1 ;;
    esac
  done
}

# ship_logs: sends the run log's lines past those the daemon holds, 2,000 at a time. Fails (status 1) while the
# daemon cannot be reached; a refusal (4xx other than 409: the run is over) ends the shipping.
LOG_SOURCE="a${TSUM_ATTEMPT:-1}n${TSUM_NODE:-0}"
[ -z "${TSUM_WARM_ONLY:-}" ] || LOG_SOURCE="w${TSUM_ATTEMPT:-1}"
ship_logs() {
  read -r sent_n sent_b 2>/dev/null < "$WORK/log.sent" || { sent_n=0; sent_b=0; }
  while [ "$(wc -c < "$LOG")" -gt "$sent_b" ]; do
    tail -c +"$((sent_b + 1))" "$LOG" | head -n 2000 > "$WORK/log.chunk"
    k=$(wc -l < "$WORK/log.chunk")
    [ "$k" -gt 0 ] || return 0  # a line still being written
    # Whole lines only: a line being written when the chunk was cut waits for the next send.
    head -n "$k" "$WORK/log.chunk" > "$WORK/log.body"
    code=$(dcurl -sS -o "$WORK/log.resp" -w '%{http_code}' --connect-timeout 3 --max-time 15 \
      -H 'Content-Type: text/plain; charset=utf-8' --data-binary "@$WORK/log.body" \
      "$TSUM_URL/v1/runs/$TSUM_RUN_ID/logs?source=$LOG_SOURCE&from=$sent_n&now=$(now)" 2>>"$WORK/curl.err") || code=000
    case $code in
      200)
        next=$(sed -n 's/.*"next":\([0-9]*\).*/\1/p' "$WORK/log.resp")
        [ "${next:-0}" -ge $((sent_n + k)) ] || return 1  # not what was sent: ask again later
        sent_n=$((sent_n + k)); sent_b=$((sent_b + $(wc -c < "$WORK/log.body"))) ;;
      409) # the daemon holds fewer lines than this agent heard (its database went back): from its number
        next=$(sed -n 's/.*"next":\([0-9]*\).*/\1/p' "$WORK/log.resp")
        sent_n=${next:-0}; sent_b=$(head -n "$sent_n" "$LOG" | wc -c) ;;
      4??) echo "tsum-agent: logs refused, HTTP $code: $(cat "$WORK/log.resp")" >&2
           sent_n=-1; sent_b=$(wc -c < "$LOG") ;;  # nothing more goes
      *) return 1 ;;
    esac
    [ "$sent_n" -ge 0 ] || { echo "$sent_n $sent_b" > "$WORK/log.sent"; return 0; }
    echo "$sent_n $sent_b" > "$WORK/log.sent.tmp" && mv "$WORK/log.sent.tmp" "$WORK/log.sent"
  done
}
# The shipper runs beside everything else until logs_final stops it.
start_shipper() {
  ( delay=1
    while :; do
      if ship_logs; then delay=1; else delay=$((delay < 10 ? delay * 2 : 20)); fi
      sleep "$(( delay / 2 )).$(( delay % 2 * 5 ))"
    done ) &
  shipper=$!
}
# logs_final: the shipper stopped, every line left goes, retried within TSUM_DRAIN_S.
logs_final() {
  [ -n "${shipper:-}" ] && kill "$shipper" 2>/dev/null && wait "$shipper" 2>/dev/null
  shipper=""
  deadline=$(( $(date +%s) + ${TSUM_DRAIN_S:-600} ))
  until ship_logs; do
    [ "$(date +%s)" -ge "$deadline" ] && { echo "tsum-agent: the run's last output lines could not be sent" >&2; return 1; }
    sleep 1
  done
}
# last_lines N: the run log's last N lines, without their stamps.
last_lines() { tail -n "$1" "$LOG" | cut -d' ' -f2-; }

# samples_csv: every sample so far as dstat-like CSV, rates between consecutive samples (the counters only grow
# and CPU is at most 100 x CORES, as in stats).
samples_csv() {
  echo "mono_s,cpu_pct,rss_bytes,read_bps,write_bps,gpu_util_pct,gpu_mem_bytes"
  sort -n "$WORK/samples" | awk -v hz="$HZ" -v top="$((100 * CORES))" '
    function grown(x, k) { if (NR > 1 && x + off[k] < last[k]) off[k] = last[k] - x; last[k] = x + off[k]; return last[k] }
    { cc = grown($2, "c"); rr = grown($4, "r"); ww = grown($5, "w") }
    NR > 1 && (dt = $1 - t) >= 0.005 {
      v = 100 * (cc - c) / hz / dt
      printf "%s,%.1f,%.0f,%.0f,%.0f,%s,%s\n", $1, (v > top ? top : v), $3, (rr - r) / dt, (ww - w) / dt,
             (NF >= 7 ? $6 : ""), (NF >= 7 ? $7 : "") }
    { t = $1; c = cc; r = rr; w = ww }'
}

# emit PHASE MARK MONO_S [ATTRS_JSON]. An end mark also carries the phase's stats since its begin mark.
# HOLD set: the mark waits for the next emit's flush.
emit() {
  [ -z "${TSUM_WARM_ONLY:-}" ] || return 0  # a warm-up is not measured
  SEQ=$((SEQ + 1))
  f=$(printf '%s/%06d' "$SPOOL" "$SEQ")
  extra=""
  case $2 in
    begin) sample; eval "BEGIN_$1=\$3"; echo "$1" > "$WORK/phase" ;;
    end) sample; eval "b=\${BEGIN_$1:-\$3}"; extra=",\"stats\":$(stats "$b")" ;;
  esac
  printf '{"phase":"%s","mark":"%s","mono_s":%s,"attrs":%s%s%s}\n' "$1" "$2" "$3" "${4:-{\}}" "$extra" "$NODE_FIELD" > "$f.tmp" &&
    mv "$f.tmp" "$f.json"
  # After a failed flush the next tries wait FLUSH_AFTER (5 s on): an unreachable daemon (up to 15 s a try) must
  # not hold up the trainer's events behind it. drain() at the end sends whatever is left.
  [ -z "${HOLD:-}" ] || return 0
  [ "$(date +%s)" -ge "${FLUSH_AFTER:-0}" ] || return 0
  if ! flush; then
    FLUSH_AFTER=$(( $(date +%s) + 5 ))
    log "daemon unreachable; $(ls "$SPOOL" | grep -c '\.json$') event(s) spooled"
  fi
}
# hand_over ENDING BEGINNING MONO_S [ATTRS_JSON]: one phase ends and the next begins at MONO_S, with one post for
# both: the next phase's first sample is taken at once, not after the first mark's round trip (a short phase would
# otherwise be sampled only once the trainer had moved on).
hand_over() {
  HOLD=1; emit "$1" end "$3" "${4:-}"; HOLD=""
  emit "$2" begin "$3"
}

drain() {
  deadline=$(( $(date +%s) + ${TSUM_DRAIN_S:-600} ))
  delay=1
  until flush; do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "giving up: daemon unreachable"; return 1; fi
    sleep "$delay"
    delay=$((delay * 2)); [ "$delay" -gt 10 ] && delay=10
  done
}

fail() {  # fail PHASE DETAIL
  ckpt_finish drop
  log "$1 failed: $2"
  logs_final
  emit "$1" error "$(now)" "{\"detail\":$(json_str "$2")}"
  drain
  exit 1
}

# interrupted_exit WHAT: after a notice the trainer has stopped (and its checkpoint gone out): what is spooled
# goes too, and the machine is left to the cloud.
interrupted_exit() {
  ckpt_finish send
  log "interrupted: $1; the machine is the cloud's now"
  logs_final
  drain
  exit 0
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch URL SHA256 OUT: downloads URL to OUT, resuming after an interrupted transfer (HTTP Range), and checks
# its sha256. The run token goes only to the daemon's own URLs. Prints the reason on failure.
fetch() {
  url=$1; want=$2; out=$3; tries=0
  case $url in /*) url="$TSUM_URL$url" ;; esac  # a path: the daemon's own
  while :; do
    case $url in
      "$TSUM_URL"/*) dcurl -fsS -C - --connect-timeout 10 --max-time 3600 -o "$out.part" "$url" 2>"$WORK/fetch.err" ;;
      *) curl ${CACERT:+--cacert "$CACERT"} -fsSL -C - --connect-timeout 10 --max-time 3600 -o "$out.part" "$url" 2>"$WORK/fetch.err" ;;
    esac && break
    # A transfer that ended exactly at the end leaves nothing to resume: the server answers 416.
    [ -s "$out.part" ] && [ "$(sha256_of "$out.part")" = "$want" ] && break
    tries=$((tries + 1))
    if [ "$tries" -ge 8 ]; then echo "download $url failed: $(tail -n 1 "$WORK/fetch.err")"; return 1; fi
    log "download $url: $(tail -n 1 "$WORK/fetch.err"); retrying"
    sleep "$tries"
  done
  got=$(sha256_of "$out.part")
  if [ "$got" != "$want" ]; then
    rm -f "$out.part"
    echo "$(basename "$out") from $url has sha256 $got, expected $want"
    return 1
  fi
  mv "$out.part" "$out"
}

# upload_all LIST: LIST's lines are "NAME<tab>FILE". PUTs each file whole, all in one curl (one process, one
# connection: --next starts each file's own options); prints the lines whose PUT did not end in 201.
TAB=$(printf '\t')
upload_all() {
  list=$1
  set --
  while IFS="$TAB" read -r name f; do
    [ $# -eq 0 ] || set -- "$@" --next
    set -- "$@" ${CACERT:+--cacert "$CACERT"} ${TSUM_UNIX_SOCKET:+--unix-socket "$TSUM_UNIX_SOCKET"} \
      -H "Authorization: Bearer $TSUM_TOKEN" -H 'Expect:' -H "X-Tsum-Sha256: $(sha256_of "$f")" \
      -sS -o /dev/null -w '%{http_code}\n' --max-time 600 -T "$f" "$TSUM_URL/v1/runs/$TSUM_RUN_ID/artifacts/$name"
  done < "$list"
  [ $# -gt 0 ] || return 0
  curl "$@" > "$WORK/upload.codes" 2>>"$WORK/curl.err"
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    [ "$(sed -n "${n}p" "$WORK/upload.codes")" = 201 ] || printf '%s\n' "$line"
  done < "$list"
}

# The machine's cache (TSUM_CACHE_DIR, given by a provider whose machine runs one run after another: the local
# host): install and load_data keep what they unpacked there, by kind and sha256, and a later run links it from
# there (cp -al) instead of downloading and unpacking it again; its mark says "method":"cached". An entry is made
# only after its download matched its sha256 (and, the trainer, after it ran here), appears whole (a rename), and
# only the newest 2 of a kind are kept. Files are hard links: the trainer only reads the bundle and the data.
# A folder job's folder after its setup is kept as a copy instead (kind "setup", keyed by the folder, the setup
# line, the image and the environment): the job may write into its folder.
CACHE=${TSUM_CACHE_DIR:-}
cache_cp() { if [ "$1" = setup ]; then cp -a "$2" "$3"; else cp -al "$2" "$3"; fi; }
cache_link() {  # KIND SHA DEST: DEST gets the entry's files; fails when there is none
  [ -n "$CACHE" ] && [ -d "$CACHE/$1-$2" ] && cache_cp "$1" "$CACHE/$1-$2/." "$3/" 2>/dev/null
}
cache_keep() {  # KIND SHA SRC: SRC's files become the entry, unless there is one already
  [ -n "$CACHE" ] && [ ! -d "$CACHE/$1-$2" ] || return 0
  mkdir -p "$CACHE" 2>/dev/null && tmp=$(mktemp -d "$CACHE/.new.XXXXXX" 2>/dev/null) || return 0
  if cache_cp "$1" "$3/." "$tmp/" 2>/dev/null && mv -T "$tmp" "$CACHE/$1-$2" 2>/dev/null; then
    ls -dt "$CACHE/$1-"* 2>/dev/null | tail -n +3 | while read -r old; do rm -rf "$old"; done
  else
    rm -rf "$tmp"
  fi
}

# upload FILE NAME: PUT the file as the run's artifact NAME, in one piece from wherever the daemon's copy ends,
# retried with backoff for as long as the spool waits (TSUM_DRAIN_S, default 600 s: a daemon that is away for
# minutes gets the file when it is back). Returns once the daemon holds every byte (201), or fails with the reason.
upload() {
  f=$1; name=$2; size=$(wc -c < "$f" | tr -d ' '); sha=$(sha256_of "$f"); tries=0
  deadline=$(( $(date +%s) + ${TSUM_DRAIN_S:-600} ))
  url="$TSUM_URL/v1/runs/$TSUM_RUN_ID/artifacts/$name"
  while :; do
    off=$(dcurl -fsS --max-time 30 "$TSUM_URL/v1/runs/$TSUM_RUN_ID/uploads/$name" 2>/dev/null |
          sed -n 's/.*"offset":\([0-9]*\).*/\1/p')
    off=${off:-0}
    if [ "$size" -eq 0 ] || [ "$off" -ge "$size" ]; then
      code=$(dcurl -sS -o "$WORK/last_response.$ME" -w '%{http_code}' --max-time 600 -X PUT -H 'Expect:' \
        -H "X-Tsum-Sha256: $sha" --data-binary "@$f" "$url" 2>>"$WORK/curl.err") || code=000
    else
      code=$(tail -c +"$((off + 1))" "$f" | dcurl -sS -o "$WORK/last_response.$ME" -w '%{http_code}' --max-time 3600 \
        -X PUT -T - -H 'Expect:' -H "X-Tsum-Sha256: $sha" -H "Content-Range: bytes $off-$((size - 1))/$size" \
        "$url" 2>>"$WORK/curl.err") || code=000
    fi
    case $code in
      201) return 0 ;;
      202) tries=0; continue ;;
      409) ;;  # a piece out of place: ask for the offset again
      4??) echo "upload $name refused, HTTP $code: $(cat "$WORK/last_response.$ME")"; return 1 ;;
    esac
    tries=$((tries + 1))
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "upload $name failed (HTTP $code, $tries tries)"; return 1; fi
    sleep "$(( tries < 10 ? tries : 10 ))"
  done
}

# notice_text: the cloud's advance notice of an interruption, if one is up (exit status 0), else nothing.
notice_text() {
  case ${TSUM_SPOT_NOTICE:-} in
    aws)
      base=${TSUM_METADATA_URL:-http://169.254.169.254}
      tok=$(curl -fsS -X PUT --max-time 2 -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$base/latest/api/token" 2>/dev/null) &&
        curl -fsS --max-time 2 -H "X-aws-ec2-metadata-token: $tok" "$base/latest/meta-data/spot/instance-action" 2>/dev/null ;;
    gce)
      base=${TSUM_METADATA_URL:-http://metadata.google.internal}
      v=$(curl -fsS --max-time 2 -H 'Metadata-Flavor: Google' "$base/computeMetadata/v1/instance/preempted" 2>/dev/null) &&
        [ "$v" = TRUE ] && echo TRUE ;;
    azure)
      base=${TSUM_METADATA_URL:-http://169.254.169.254}
      ev=$(curl -fsS --max-time 2 -H 'Metadata: true' "$base/metadata/scheduledevents?api-version=2020-07-01" 2>/dev/null) &&
        case $(printf '%s' "$ev" | tr -d ' \t\r\n') in *'"EventType":"Preempt"'*) printf '%s' "$ev" ;; *) return 1 ;; esac ;;
    *) return 1 ;;
  esac
}
# stop_trainer: SIGTERM to tsum-train and to the docker client (which passes it on to the container) in this session,
# known by their command lines (the bundle's tsum-train runs as its loader, ld-linux, with libexec/tsum-train).
stop_trainer() {
  grep -H '' /proc/[0-9]*/stat 2>/dev/null | awk -v sid="$SID" '{
      split($0, p, "/"); s = $0; sub(/^[^ ]* \(.*\) /, "", s); split(s, f, " ")
      if (f[4] == sid) print p[3] }' |
    while read -r pid; do
      case $(tr '\000' ' ' < "/proc/$pid/cmdline" 2>/dev/null) in
        *libexec/tsum-train* | *bin/tsum-train* | 'docker '*) kill -TERM "$pid" 2>/dev/null ;;
      esac
    done
  [ -s "$WORK/job.pid" ] && kill -TERM "$(cat "$WORK/job.pid")" 2>/dev/null
}
# watch_notice: until a notice is up; then the interrupted mark goes out at once (not behind the spool) and the
# trainer is told to checkpoint.
watch_notice() {
  until text=$(notice_text) && [ -n "$text" ]; do sleep "${TSUM_NOTICE_POLL_S:-2}"; done
  t=$(now)
  printf '%s\n' "$text" > "$WORK/notice"
  stop_trainer
  body="{\"phase\":\"$(cat "$WORK/phase" 2>/dev/null || echo install)\",\"mark\":\"interrupted\",\"mono_s\":$t,\"attrs\":{\"cloud\":\"$TSUM_SPOT_NOTICE\",\"notice\":$(json_str "$text")}$NODE_FIELD}"
  for _ in 1 2 3 4 5 6 7 8; do
    code=$(dcurl -sS -o /dev/null -w '%{http_code}' --connect-timeout 3 --max-time 10 -H 'Content-Type: application/json' \
      --data-binary "$body" "$TSUM_URL/v1/runs/$TSUM_RUN_ID/events" 2>>"$WORK/curl.err") || code=000
    case $code in 2?? | 4??) break ;; esac
    sleep 1
  done
  log "interruption notice ($TSUM_SPOT_NOTICE): $text"
}

# Checkpoints. When the trainer (or a job) says it has written one, the agent takes it at once: a snapshot in
# $SNAPS/SEQ of hard links to the checkpoint directory's files (the trainer replaces its files by rename, so the
# links keep what the mark describes while the next one is written; copies where links cannot go). An uploader
# beside the trainer sends each snapshot as the artifact checkpoint-a<attempt>-<n>.tar.gz, then a checkpoint mark
# names it (attrs: the artifact, its sha256 and bytes, and the trainer's own event). On one machine it sends the
# newest and drops those it superseded, so a slow link or a loaded machine never leaves it behind the trainer: the
# notice's checkpoint is at most one upload away. A rank of several nodes sends each in turn (the ranks resume from
# a step every one of them delivered).
SNAPS="$WORK/snaps"
CKPT_N=0
uploader=""
ckpt_take() {  # SRC DST: DST holds SRC's files as they are now, *.tmp left out
  (cd "$1" && find . ! -name . ! -name '*.tmp' -print) | while IFS= read -r f; do
    if [ -d "$1/$f" ]; then mkdir -p "$2/$f"; else ln "$1/$f" "$2/$f" 2>/dev/null || cp -p "$1/$f" "$2/$f"; fi
  done
}
checkpoint_snapshot() {  # TRAINER_EVENT
  [ -z "${TSUM_WARM_ONLY:-}" ] || return 0
  SEQ=$((SEQ + 1)); CKPT_N=$((CKPT_N + 1))  # its mark's place in the spool, and the artifact's number
  d="$SNAPS/$(printf '%06d' "$SEQ")"
  tev=${1:-}; [ -n "$tev" ] || tev='{}'
  mkdir -p "$d.new/files" && printf '%s\n%s\n' "$CKPT_N" "$tev" > "$d.new/meta"
  ckpt_take "$CKPT" "$d.new/files" 2>"$WORK/ckpt.err" || true
  [ -s "$WORK/ckpt.err" ] && log "checkpoint: $(tail -n 1 "$WORK/ckpt.err")"
  mv "$d.new" "$d"
  if [ -z "$uploader" ]; then ckpt_uploader & uploader=$!; fi
}
ckpt_send() {  # SNAPSHOT: its artifact, then its mark
  seq=${1##*/}; n=$(sed -n 1p "$1/meta"); trainer=$(sed -n 2p "$1/meta")
  name="checkpoint-a${TSUM_ATTEMPT:-1}-$n.tar.gz"
  [ "$NODES" -gt 1 ] && name="checkpoint-a${TSUM_ATTEMPT:-1}-n$NODE-$n.tar.gz"  # each rank its own
  # Status 1 ("file changed as we read it") is the trainer unlinking a file's old name as it puts the next one in
  # place: the inode's ctime moves, not what the link holds.
  tar -czf "$WORK/$name" -C "$1/files" . 2>"$WORK/ckpt.err.u" ||
    [ $? -eq 1 ] || { log "checkpoint: $(tail -n 1 "$WORK/ckpt.err.u")"; rm -f "$WORK/$name"; return 1; }
  sha=$(sha256_of "$WORK/$name"); bytes=$(wc -c < "$WORK/$name" | tr -d ' ')
  err=$(upload "$WORK/$name" "$name") || { log "checkpoint: $err"; rm -f "$WORK/$name"; return 1; }
  rm -f "$WORK/$name"
  printf '{"phase":"learn","mark":"checkpoint","mono_s":%s,"attrs":{"artifact":"%s","sha256":"%s","bytes":%s,"trainer":%s}%s}\n' \
    "$(now)" "$name" "$sha" "$bytes" "$trainer" "$NODE_FIELD" > "$SPOOL/$seq.tmp" && mv "$SPOOL/$seq.tmp" "$SPOOL/$seq.json"
  flush || true  # else the agent's next flush sends it
}
ckpt_uploader() {  # until ckpt_finish asks it to stop with nothing left
  ME=u
  while :; do
    set --  # the snapshots taken whole (not *.new), oldest first
    for s in "$SNAPS"/[0-9]*; do case ${s##*/} in *[!0-9]*) ;; *) [ -d "$s" ] && set -- "$@" "${s##*/}" ;; esac; done
    if [ $# -eq 0 ]; then [ -e "$WORK/snaps.stop" ] && exit 0; sleep 0.2; continue; fi
    take=$1
    if [ "$NODES" -le 1 ]; then eval "take=\${$#}"; for s; do [ "$s" = "$take" ] || rm -rf "${SNAPS:?}/$s"; done; fi
    ckpt_send "$SNAPS/$take"
    rm -rf "${SNAPS:?}/$take"
  done
}
# ckpt_finish send|drop: the uploader stops; with send, once what is taken has gone (within TSUM_DRAIN_S: after a
# notice the machine goes at the cloud's deadline anyway), with drop at once (the run needs no checkpoint now).
ckpt_finish() {
  [ -n "$uploader" ] || return 0
  if [ "$1" = send ]; then
    : > "$WORK/snaps.stop"
    deadline=$(( $(date +%s) + ${TSUM_DRAIN_S:-600} ))
    while kill -0 "$uploader" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
  fi
  kill "$uploader" 2>/dev/null; wait "$uploader" 2>/dev/null
  uploader=""
  rm -rf "${SNAPS:?}" "$WORK/snaps.stop"
}

# The sampler runs until the agent exits (or the instance is terminated with the whole session).
( while :; do sample; sleep "${TSUM_SAMPLE_S:-1}"; done ) &
sampler=$!
start_shipper
watcher=""
if [ -n "${TSUM_SPOT_NOTICE:-}" ]; then watch_notice & watcher=$!; fi
cleanup() {
  kill "$sampler" $watcher ${shipper:-} ${uploader:-} 2>/dev/null
  # A machine that is not ours keeps nothing of the run (the spool is gone by now, or undeliverable).
  [ "${TSUM_POWEROFF:-}" = none ] && cd / && rm -rf "$WORK"
}
trap cleanup EXIT

# The trainer: tsum-train from the bundle (native) or the workload image's (docker; data and output mounted at
# the same paths, so the flags are the same either way).
if [ "${TSUM_RUNTIME:-native}" = docker ]; then
  run_trainer() {
    gpus=$(docker_gpus)
    # The container gets the agent's own CPUs (dockerd starts it, so it would not inherit the affinity).
    cpus=$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/$$/status)
    # shellcheck disable=SC2086  # gpus is empty or two words
    # One machine needs no network; the nodes of a multi-node run reach each other on the machine's own.
    net=none; [ "$NODES" -gt 1 ] && net=host
    docker run --rm --network "$net" $gpus ${cpus:+--cpuset-cpus "$cpus"} -v "$WORK/data:$WORK/data:${DATA_MODE:-ro}" -v "$WORK/out:$WORK/out" \
      -v "$CKPT:$CKPT" --entrypoint tsum-train "$TSUM_IMAGE" "$@"
  }
elif [ "${TSUM_RUNTIME:-native}" = container ]; then
  run_trainer() { tsum-train "$@"; }
  GPUSTAT=$(command -v tsum-gpustat || echo "$GPUSTAT")
else
  run_trainer() { "$WORK/tsum/bin/tsum-train" "$@"; }
fi

# job_exec LINE: a folder job's shell line, run in its folder: in TSUM_IMAGE (the folder at /tsum/job, the data
# set at /tsum/data read-only, /tsum/out, /tsum/checkpoint, the machine's network), else here in $WORK/job. With
# the job's environment, TSUM_DATA_DIR, TSUM_OUT_DIR, TSUM_CHECKPOINT_DIR, TSUM_EVENTS and PYTHONUNBUFFERED=1, so
# that Python's prints reach the log as they are made. Here, the shell's pid goes to $WORK/job.pid (a notice
# stops it).
job_exec() {
  line=$1
  eval "set -- ${TSUM_JOB_ENV:-}"
  if [ "${TSUM_RUNTIME:-native}" = docker ]; then
    gpus=$(docker_gpus)
    cpus=$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/$$/status)
    # shellcheck disable=SC2086  # gpus is empty or two words
    docker run --rm --network host $gpus ${cpus:+--cpuset-cpus "$cpus"} -v "$WORK/job:/tsum/job" -w /tsum/job \
      -v "$WORK/data:/tsum/data:ro" -v "$WORK/out:/tsum/out" -v "$WORK/marks:/tsum/marks" -v "$CKPT:/tsum/checkpoint" \
      -e PYTHONUNBUFFERED=1 -e TSUM_DATA_DIR=/tsum/data -e TSUM_OUT_DIR=/tsum/out -e TSUM_CHECKPOINT_DIR=/tsum/checkpoint \
      -e TSUM_EVENTS=/tsum/marks/events "$@" --entrypoint /bin/sh "$TSUM_IMAGE" -c "$line"
    return
  fi
  n=$#; i=0  # docker's "-e NAME=VALUE" words become env's NAME=VALUE
  while [ "$i" -lt "$n" ]; do a=$1; shift; i=$((i + 1)); [ "$a" = -e ] || set -- "$@" "$a"; done
  cd "$WORK/job" && env PYTHONUNBUFFERED=1 TSUM_DATA_DIR="$WORK/data" TSUM_OUT_DIR="$WORK/out" TSUM_CHECKPOINT_DIR="$CKPT" \
    TSUM_EVENTS="$WORK/marks/events" "$@" /bin/sh -c 'echo $$ > "$0"; exec /bin/sh -c "$1"' "$WORK/job.pid" "$line"
}

[ -z "${TSUM_WARM_ONLY:-}" ] || log "warming this machine's cache for the run (not measured)"
# install: the trainer bundle (download, check, unpack) or the workload image (pull unless present), then check
# that tsum-train runs here. The install mark records the method and the bytes.
emit install begin "$(now)"
if [ "${TSUM_RUNTIME:-native}" = docker ]; then
  command -v docker >/dev/null || fail install "docker is not installed (the docker runtime's boot payload installs docker.io)"
  # An engine started with the machine may still be coming up (a loaded host: tens of seconds).
  deadline=$(( $(date +%s) + ${TSUM_DOCKER_WAIT_S:-180} ))
  until docker version >/dev/null 2>"$WORK/install.err"; do
    [ "$(date +%s)" -ge "$deadline" ] && fail install "the Docker engine did not answer within ${TSUM_DOCKER_WAIT_S:-180} s: $(tail -n 1 "$WORK/install.err")$(tail -n 3 /var/log/dockerd.log 2>/dev/null | sed 's/^/ | dockerd: /')"
    sleep 1
  done
  if [ -n "${TSUM_REGISTRY_USER:-}" ]; then
    printf '%s' "${TSUM_REGISTRY_PASSWORD:-}" | docker login -u "$TSUM_REGISTRY_USER" --password-stdin "${TSUM_IMAGE%%/*}" \
      >"$WORK/install.err" 2>&1 || fail install "docker login ${TSUM_IMAGE%%/*}: $(tail -n 1 "$WORK/install.err")"
  fi
  if docker image inspect "${TSUM_IMAGE:?}" >/dev/null 2>&1; then
    method=present
  else
    docker pull "$TSUM_IMAGE" >"$WORK/install.err" 2>&1 || fail install "docker pull $TSUM_IMAGE: $(tail -n 2 "$WORK/install.err")"
    method=pull
  fi
  bytes=$(docker image inspect -f '{{.Size}}' "$TSUM_IMAGE" 2>/dev/null || echo 0)
  install_attrs="{\"method\":\"$method\",\"image\":$(json_str "$TSUM_IMAGE"),\"bytes\":${bytes:-0}}"
elif [ "${TSUM_RUNTIME:-native}" = container ]; then
  method=image  # the container runtime pulled it before the agent started: startup's part
  install_attrs="{\"method\":\"image\",\"image\":$(json_str "${TSUM_IMAGE:-}")}"
elif [ "${TSUM_KIND:-train}" = job ]; then
  install_attrs='{"method":"none"}'  # a folder job on the machine itself: no trainer, no image
else
  : "${TSUM_TRAINER_URL:?}" "${TSUM_TRAINER_SHA256:?}"
  if mkdir -p "$WORK/tsum" && cache_link trainer "$TSUM_TRAINER_SHA256" "$WORK/tsum"; then
    method=cached; bytes=0
  else
    rm -rf "$WORK/tsum"
    err=$(fetch "$TSUM_TRAINER_URL" "$TSUM_TRAINER_SHA256" "$WORK/tsum-bundle.tar.gz") || fail install "trainer bundle: $err"
    bytes=$(wc -c < "$WORK/tsum-bundle.tar.gz" | tr -d ' ')
    tar -xzf "$WORK/tsum-bundle.tar.gz" -C "$WORK" 2>"$WORK/install.err" || fail install "unpack the trainer bundle: $(tail -n 1 "$WORK/install.err")"
    rm -f "$WORK/tsum-bundle.tar.gz"
    method=bundle
  fi
  install_attrs="{\"method\":\"$method\",\"bytes\":$bytes,\"sha256\":\"$TSUM_TRAINER_SHA256\"}"
fi
[ -x "$GPUSTAT" ] && "$GPUSTAT" --line >/dev/null 2>&1 && : > "$WORK/have_gpu"
# Does tsum-train run here? A cached bundle did, on this machine, before it was kept.
if [ "${TSUM_KIND:-train}" != job ] && [ "${method:-}" != cached ]; then  # a job's image need not have tsum-train
  run_trainer --help >/dev/null 2>"$WORK/install.err" || fail install "tsum-train does not run: $(tail -n 2 "$WORK/install.err")"
  [ "${method:-}" = bundle ] && cache_keep trainer "$TSUM_TRAINER_SHA256" "$WORK/tsum"
fi
# A GPU's sanity probe (tsum-train probe-gpu: a few seconds of matrix products and copies) goes in the install mark,
# so a throttled or partitioned GPU (half of a K80, a MIG slice) shows on the run page and in the export.
if [ -e "$WORK/have_gpu" ] && [ "${TSUM_KIND:-train}" != job ] && [ -z "${TSUM_WARM_ONLY:-}" ]; then
  probe=$(run_trainer probe-gpu 2>"$WORK/probe.err" | tail -n 1)
  case "$probe" in
    '{"event":"gpu_probe",'*'}') install_attrs="${install_attrs%\}},\"gpu_probe\":$probe}" ;;
    *) log "probe-gpu: $(tail -n 1 "$WORK/probe.err")" ;;
  esac
fi
# A folder job: its folder unpacked into $WORK/job and its setup run there, in install. Where the machine keeps a
# cache, the folder as setup left it is kept and the next run of the same folder, setup, image and environment
# starts from a copy of it ("setup": "cached").
if [ "${TSUM_KIND:-train}" = job ] && [ -n "${TSUM_JOB_RUN:-}" ]; then
  key=$(printf '%s\n' "${TSUM_WORKDIR_SHA256:-}" "${TSUM_JOB_SETUP:-}" "${TSUM_IMAGE:-}" "${TSUM_JOB_ENV:-}" | sha256sum | cut -c1-64)
  rm -rf "$WORK/job"; mkdir -p "$WORK/job" "$WORK/marks"
  wbytes=0
  if [ -n "${TSUM_JOB_SETUP:-}" ] && cache_link setup "$key" "$WORK/job"; then
    setup=cached
  else
    rm -rf "$WORK/job"; mkdir -p "$WORK/job"
    if [ -n "${TSUM_WORKDIR_SHA256:-}" ]; then
      err=$(fetch "${TSUM_WORKDIR_URL:?}" "$TSUM_WORKDIR_SHA256" "$WORK/workdir.tar.gz") || fail install "workdir: $err"
      wbytes=$(wc -c < "$WORK/workdir.tar.gz" | tr -d ' ')
      tar -xzf "$WORK/workdir.tar.gz" -C "$WORK/job" --no-same-owner 2>"$WORK/install.err" ||
        fail install "unpack the workdir: $(tail -n 1 "$WORK/install.err")"
      rm -f "$WORK/workdir.tar.gz"
    fi
    setup=none
    if [ -n "${TSUM_JOB_SETUP:-}" ]; then
      log "setup: $TSUM_JOB_SETUP"
      { ( job_exec "$TSUM_JOB_SETUP" ) 2>&1; echo $? > "$WORK/setup.rc"; } | stamp
      rc=$(cat "$WORK/setup.rc")
      [ "$rc" -eq 0 ] || fail install "setup exited with status $rc: $(last_lines 3)"
      setup=ran
      cache_keep setup "$key" "$WORK/job"
    fi
  fi
  install_attrs="${install_attrs%\}},\"workdir\":{\"sha256\":\"${TSUM_WORKDIR_SHA256:-}\",\"bytes\":$wbytes},\"setup\":\"$setup\"}"
fi
emit install end "$(now)" "$install_attrs"

# load_data: download the data set by its hash and unpack it; a workload that reads none (resnet50's synthetic
# data, the inference sweep) has an empty load_data, or, for a sweep that reads files, generates its JPEGs.
emit load_data begin "$(now)"
if [ -n "${TSUM_DATA_URL:-}" ]; then
  : "${TSUM_DATA_SHA256:?}"
  if cache_link data "$TSUM_DATA_SHA256" "$WORK/data"; then
    method=cached; bytes=0
  else
    rm -rf "$WORK/data"; mkdir -p "$WORK/data"
    err=$(fetch "$TSUM_DATA_URL" "$TSUM_DATA_SHA256" "$WORK/dataset.tar") || fail load_data "data set ${TSUM_DATA_NAME:-}: $err"
    bytes=$(wc -c < "$WORK/dataset.tar" | tr -d ' ')
    tar -xf "$WORK/dataset.tar" -C "$WORK/data" 2>"$WORK/data.err" ||
      fail load_data "unpack data set ${TSUM_DATA_NAME:-}: $(tail -n 1 "$WORK/data.err")"
    rm -f "$WORK/dataset.tar"
    method=download
    cache_keep data "$TSUM_DATA_SHA256" "$WORK/data"
  fi
  data_attrs="{\"name\":$(json_str "${TSUM_DATA_NAME:-}"),\"format\":$(json_str "${TSUM_DATA_FORMAT:-}"),\"method\":\"$method\",\"bytes\":$bytes,\"sha256\":\"$TSUM_DATA_SHA256\"}"
elif [ -n "${TSUM_GEN_IMAGES:-}" ] && [ -z "${TSUM_WARM_ONLY:-}" ]; then
  # shellcheck disable=SC2086  # TSUM_GEN_IMAGES is a list of flags
  DATA_MODE=rw run_trainer gen-images "$WORK/data" $TSUM_GEN_IMAGES >/dev/null 2>"$WORK/data.err" ||
    fail load_data "tsum-train gen-images: $(tail -n 2 "$WORK/data.err")"
  data_attrs="{\"name\":\"generated\",\"format\":\"images\",\"bytes\":$(du -sb "$WORK/data" | cut -f1)}"
else
  data_attrs='{"name":"none","bytes":0}'
fi
if [ -n "${TSUM_WARM_ONLY:-}" ]; then
  method_of() { printf '%s' "$1" | sed -n 's/^{[^{]*"method":"\([a-z]*\)".*/\1/p'; }
  inst_m=$(method_of "$install_attrs"); data_m=$(method_of "$data_attrs")
  log "this machine's cache is warm: install (${inst_m:-none}), data (${data_m:-none})${setup:+, setup ($setup)}"
  logs_final
  exit 0
fi
# A resumed attempt's checkpoint, timed with the data it goes on with.
if [ -n "${TSUM_RESUME_URL:-}" ]; then
  err=$(fetch "$TSUM_RESUME_URL" "${TSUM_RESUME_SHA256:?}" "$WORK/resume.tar.gz") || fail load_data "checkpoint: $err"
  rbytes=$(wc -c < "$WORK/resume.tar.gz" | tr -d ' ')
  tar -xzf "$WORK/resume.tar.gz" -C "$CKPT" 2>"$WORK/data.err" || fail load_data "unpack the checkpoint: $(tail -n 1 "$WORK/data.err")"
  rm -f "$WORK/resume.tar.gz"
  data_attrs="${data_attrs%\}},\"resume\":{\"bytes\":$rbytes,\"sha256\":\"$TSUM_RESUME_SHA256\"}}"
fi
emit load_data end "$(now)" "$data_attrs"

# A user's job (TSUM_KIND=job): TSUM_JOB_COMMAND (shell words) runs in TSUM_IMAGE with the data set at
# /tsum/data (read-only), /tsum/out writable and TSUM_EVENTS, a FIFO where it may write JSON lines
# {"phase": "start"|"learn"|"verify", "mark": "begin"|"end", ...} and {"event": "epoch", ...}, timed as they
# arrive (by a reader of its own that only stamps each line, with no fork, so the time of a mark never waits
# for the work of the one before it). The marks go in order: start.end, learn.begin, learn.end, verify.begin, verify.end; a mark the program
# skips is derived at the time of the next one it writes (or its exit), and with no mark at all learn is the
# whole command. Lines that are not such marks, and marks out of order, are counted as malformed, never fatal.
JOB_MARKS="start.end learn.begin learn.end verify.begin verify.end"
# A derived mark says so: a phase between two of them took no time of its own (the daemon shows it as unmarked,
# not as 0 s).
DERIVED='{"derived":true}'
job_mark() {  # INDEX TIME [ATTRS]: emits mark INDEX of JOB_MARKS
  m=$(echo $JOB_MARKS | cut -d' ' -f"$1")
  emit "${m%.*}" "${m#*.}" "$2" "${3:-}"
}
# job_attrs LINE: a mark's "attrs" when they are names and numbers only ({"test_accuracy": 0.91}: what the run's
# metrics read), as compact JSON; nothing otherwise (anything else stays in events.jsonl, never in the event).
job_attrs() {
  printf '%s' "$1" | tr -d ' \t\r' | sed -n 's/.*"attrs":\({[^{}]*}\).*/\1/p' |
    grep -E '^\{("[A-Za-z0-9_]{1,64}":-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?,?){0,32}\}$' | sed 's/,}$/}/'
}
# job_numbers LINE: an epoch line's "name": number fields (the job's loss, images_per_s, ...) but event, epoch, mono_s
# and at (the daemon's own: when it happened), as JSON members to append (",\"loss\":0.5"): what the run's epochs
# table shows, as tsum-train's lines give it.
job_numbers() {
  printf '%s' "$1" | tr -d ' \t\r' |
    grep -oE '"[A-Za-z0-9_]{1,64}":-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?' |
    grep -vE '^"(event|epoch|mono_s|at)":' | head -n 32 | awk '{ printf ",%s", $0 }'
}
job_reach() {  # INDEX TIME [ATTRS]: the program's mark (ATTRS its attrs); the ones it skipped are derived now
  if [ "$pos" -ge "$1" ]; then malformed=$((malformed + 1)); return; fi
  while [ "$pos" -lt "$1" ]; do
    pos=$((pos + 1))
    if [ "$pos" -eq "$1" ]; then job_mark "$pos" "$2" "${3:-}"; else job_mark "$pos" "$2" "$DERIVED"; fi
    [ "$pos" -lt "$1" ] && derived="$derived $(echo $JOB_MARKS | cut -d' ' -f"$pos")"
  done
  [ "$pos" -eq 1 ] && start_end=$2
  return 0
}
# shellcheck disable=SC2120  # "$@" is the docker command line it sets itself
run_job() {
  rm -rf "$WORK/marks"; mkdir -p "$WORK/marks"; mkfifo "$WORK/marks/events" "$WORK/marks/stamped"
  exec 4<>"$WORK/marks/events" 5<>"$WORK/marks/stamped"  # read and write: opening them blocks neither side
  gpus=$(docker_gpus)
  cpus=$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/$$/status)
  if [ -n "${TSUM_JOB_RUN:-}" ]; then
    set -- job_exec "$TSUM_JOB_RUN"
  elif [ "${TSUM_RUNTIME:-native}" = container ]; then
    # Already in the job's image, with $WORK at /tsum (the Pod's working directory): the command runs here,
    # its variables given by env (the -e words of TSUM_JOB_ENV dropped).
    eval "set -- ${TSUM_JOB_ENV:-} -- ${TSUM_JOB_COMMAND:?}"
    n=$#; i=0; past=""
    while [ "$i" -lt "$n" ]; do
      a=$1; shift; i=$((i + 1))
      if [ -n "$past" ]; then set -- "$@" "$a"; else case $a in -e) ;; --) past=1 ;; *) set -- "$@" "$a" ;; esac; fi
    done
    set -- env TSUM_EVENTS="$WORK/marks/events" TSUM_CHECKPOINT_DIR="$CKPT" "$@"
  else
    # The command is the whole program line: its first word replaces the image's entrypoint.
    eval "set -- ${TSUM_JOB_COMMAND:?}"
    prog=$1; shift
    eval "set -- ${TSUM_JOB_ENV:-} --entrypoint \"\$prog\" \"\$TSUM_IMAGE\" \"\$@\""
    # shellcheck disable=SC2086  # gpus is empty or two words
    set -- docker run --rm --network none $gpus ${cpus:+--cpuset-cpus "$cpus"} -v "$WORK/data:/tsum/data:ro" \
      -v "$WORK/out:/tsum/out" -v "$WORK/marks:/tsum/marks" -e TSUM_EVENTS=/tsum/marks/events \
      -v "$CKPT:/tsum/checkpoint" -e TSUM_CHECKPOINT_DIR=/tsum/checkpoint -e TSUM_DATA_DIR=/tsum/data \
      -e TSUM_OUT_DIR=/tsum/out -e PYTHONUNBUFFERED=1 "$@"
  fi
  pos=0; derived=""; malformed=0; epochs=0; t0=$(now); start_end=$t0
  emit start begin "$t0"
  ( { ( "$@" ) 2>&1; echo $? > "$WORK/job.rc"; } | stamp "$WORK/job.log"
    echo "{\"tsum_exit\":$(cat "$WORK/job.rc")}" > "$WORK/marks/events" ) &
  ( while IFS= read -r line <&4; do
      read -r up _ < /proc/uptime
      printf '%s %s\n' "$up" "$line" >&5
      case $line in '{"tsum_exit":'*) break ;; esac
    done ) &
  while IFS= read -r stamped <&5; do
    t=${stamped%% *}; line=${stamped#* }
    case $line in '{"tsum_exit":'*) rc=${line#*:}; rc=${rc%\}}; break ;; esac
    printf '%s\n' "$line" >> "$WORK/events.jsonl"
    l=$(printf '%s' "$line" | tr -d ' \t\r')
    case $l in '{'*'}') ;; *) malformed=$((malformed + 1)); continue ;; esac
    case $l in
      *'"phase":"start"'*'"mark":"begin"'* | *'"mark":"begin"'*'"phase":"start"'*) ;;  # start began at the launch
      *'"phase":"start"'*'"mark":"end"'* | *'"mark":"end"'*'"phase":"start"'*) job_reach 1 "$t" "$(job_attrs "$line")" ;;
      *'"phase":"learn"'*'"mark":"begin"'* | *'"mark":"begin"'*'"phase":"learn"'*) job_reach 2 "$t" ;;
      *'"phase":"learn"'*'"mark":"end"'* | *'"mark":"end"'*'"phase":"learn"'*) job_reach 3 "$t" "$(job_attrs "$line")" ;;
      *'"phase":"verify"'*'"mark":"begin"'* | *'"mark":"begin"'*'"phase":"verify"'*) job_reach 4 "$t" ;;
      *'"phase":"verify"'*'"mark":"end"'* | *'"mark":"end"'*'"phase":"verify"'*) job_reach 5 "$t" "$(job_attrs "$line")" ;;
      *'"event":"checkpoint"'*) checkpoint_snapshot "{}" ;;
      *'"event":"epoch"'*)
        if [ "$pos" -lt 2 ]; then job_reach 2 "$t"; derived="$derived learn.begin"; fi
        if [ "$pos" -eq 2 ]; then epochs=$((epochs + 1)); emit learn progress "$t" "{\"epoch\":$epochs$(job_numbers "$line")}"
        else malformed=$((malformed + 1)); fi ;;
      *) malformed=$((malformed + 1)) ;;
    esac
  done
  exec 4<&- 5<&-
  t=$(now)
  # Unmarked: start ends at the launch (or where the program ended it) and learn runs from there to the exit.
  if [ "$pos" -eq 0 ]; then pos=1; job_mark 1 "$t0" "$DERIVED"; derived="$derived start.end"; fi
  if [ "$pos" -eq 1 ]; then pos=2; job_mark 2 "$start_end" "$DERIVED"; derived="$derived learn.begin"; fi
  if [ -e "$WORK/notice" ]; then  # whatever the job left in its checkpoint directory goes to the daemon
    checkpoint_snapshot '{"reason":"signal"}'
    interrupted_exit "the job exited with status ${rc:-unknown}"
  fi
  if [ "${rc:-1}" -ne 0 ]; then  # the phase it failed in ends with the failure; the ones after it never ran
    failed=learn
    if [ "$pos" -ge 3 ]; then failed=verify; [ "$pos" -eq 3 ] && job_mark 4 "$t"; fi
    fail "$failed" "the job exited with status ${rc:-unknown}: $(tail -n 3 "$WORK/job.log")"
  fi
  ckpt_finish drop
  while [ "$pos" -lt 5 ]; do
    pos=$((pos + 1)); job_mark "$pos" "$t" "$DERIVED"; derived="$derived $(echo $JOB_MARKS | cut -d' ' -f"$pos")"
  done
  list=""; for d in $derived; do list="$list${list:+,}\"$d\""; done
  saved="{\"exit_status\":0,\"derived\":[$list],\"malformed\":$malformed}"
  emit save begin "$t"
}

# The rendezvous: a multi-node run's nodes meet in start, before the trainer (a server: once it answers). Node 0
# says where it listens (meet_post ADDRESS PORT); the others wait (TSUM_RENDEZVOUS_S, default 900) until it has
# (meet_wait prints "ADDRESS PORT").
meet_url() { echo "$TSUM_URL/v1/runs/$TSUM_RUN_ID/rendezvous"; }
meet_address() {  # this machine's address the other nodes reach
  addr=${TSUM_NODE_ADDRESS:-}
  if [ -z "$addr" ]; then
    case $TSUM_URL in
      *://127.0.0.1[:/]* | *://localhost[:/]* | *://\[::1\][:/]*) addr=127.0.0.1 ;;
      *) addr=$(hostname -I 2>/dev/null | cut -d' ' -f1) ;;
    esac
  fi
  [ -n "$addr" ] || { echo "no address of this machine to give the other nodes (set TSUM_NODE_ADDRESS)"; return 1; }
  echo "$addr"
}
meet_port() { echo "${TSUM_DIST_PORT:-$((20000 + TSUM_RUN_ID % 20000))}"; }
meet_post() {
  tries=0
  until dcurl -fsS --max-time 15 -H 'Content-Type: application/json' \
      --data-binary "{\"address\":$(json_str "$1"),\"port\":$2}" "$(meet_url)" >/dev/null 2>"$WORK/rdv.err"; do
    tries=$((tries + 1))
    [ "$tries" -ge 10 ] && { echo "cannot post the rendezvous: $(tail -n 1 "$WORK/rdv.err")"; return 1; }
    sleep 1
  done
}
meet_wait() {
  deadline=$(( $(date +%s) + ${TSUM_RENDEZVOUS_S:-900} ))
  until got=$(dcurl -fsS --max-time 15 "$(meet_url)" 2>/dev/null) && [ -n "$got" ]; do
    [ "$(date +%s)" -ge "$deadline" ] && { echo "node 0 did not say where to meet within ${TSUM_RENDEZVOUS_S:-900} s"; return 1; }
    sleep 0.5
  done
  echo "$(printf '%s' "$got" | sed -n 's/.*"address":"\([^"]*\)".*/\1/p') $(printf '%s' "$got" | sed -n 's/.*"port":\([0-9]*\).*/\1/p')"
}

# rendezvous: data-parallel training's meeting; prints tsum-train's distributed flags.
rendezvous() {
  if [ "$NODE" -eq 0 ]; then
    addr=$(meet_address) || { echo "$addr"; return 1; }
    port=$(meet_port)
    meet_post "$addr" "$port" || return 1
  else
    got=$(meet_wait) || { echo "$got"; return 1; }
    addr=${got% *} port=${got#* }
  fi
  dist=${TSUM_DIST:-ring}
  echo "--world-size $NODES --rank $NODE --master $addr:$port --dist ${dist%-async}$([ "$dist" = ps-async ] && echo ' --ps-async')"
}

# A notice before learning began: there is nothing to save, and no point in starting.
[ -e "$WORK/notice" ] && interrupted_exit "the notice came before learning began"

# start, learn, verify: the trainer's own events mark the boundaries. The inference sweep (TSUM_KIND=infer) is
# measured as learn, one progress mark per batch size; it has no verify and saves no checkpoint. So is a serving
# run (above): the server's learn is serving, the client's the measured load, one progress mark per level.
if [ "${TSUM_KIND:-train}" = job ]; then
  run_job
else
  rm -f "$WORK/events.fifo"; mkfifo "$WORK/events.fifo"
  emit start begin "$(now)"
  args=${TSUM_TRAIN_ARGS:-}
  if [ "${TSUM_KIND:-train}" = serve ]; then
    stop_token=$(printf 'tsum-serve-stop:%s' "$TSUM_TOKEN" | sha256sum | cut -c1-32)
    if [ "$NODE" -eq 0 ]; then
      serve_addr=$(meet_address) || fail start "$serve_addr"
      serve_port=$(meet_port)
      set -- serve --host 0.0.0.0 --port "$serve_port" --stop-token "$stop_token"
    else
      got=$(meet_wait) || fail start "$got"
      host=${got% *}
      case $host in *:*) host="[$host]" ;; esac
      set -- load --url "http://$host:${got#* }" --stop-token "$stop_token"
      [ -n "${TSUM_GEN_IMAGES:-}" ] && set -- "$@" --images "$WORK/data"
      args=${TSUM_LOAD_ARGS:-}
    fi
  elif [ "${TSUM_KIND:-train}" = infer ]; then
    set -- infer --images "$WORK/data"
  else
    set -- --data "$WORK/data" --checkpoint "$WORK/out/model.pt"
    if [ -n "${TSUM_SPOT_NOTICE:-}${TSUM_CHECKPOINT_EVERY:-}" ]; then
      set -- "$@" --state "$CKPT/state.pt" --checkpoint-every "${TSUM_CHECKPOINT_EVERY:-0}"
      [ -e "$CKPT/state.pt" ] && set -- "$@" --resume "$CKPT/state.pt"
    fi
  fi
  if [ "$NODES" -gt 1 ] && [ "${TSUM_KIND:-train}" != serve ]; then
    dist_args=$(rendezvous) || fail start "$dist_args"
    # shellcheck disable=SC2086  # a list of flags
    set -- "$@" $dist_args
  fi
  # shellcheck disable=SC2086  # a list of flags
  rm -f "$WORK/stderr.fifo"; mkfifo "$WORK/stderr.fifo"; : > "$WORK/train.err"
  stamp "$WORK/train.err" < "$WORK/stderr.fifo" &
  errstamp=$!
  run_trainer "$@" $args > "$WORK/events.fifo" 2> "$WORK/stderr.fifo" &
  trainer=$!
  phase=start
  saved=""
  n=0
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$WORK/events.jsonl"
    read -r up _ < /proc/uptime
    printf '%s %s\n' "$up" "$line" >> "$LOG"
    ev=${line#'{"event":"'}; ev=${ev%%'"'*}
    mono=${line#*'"mono_s":'}; mono=${mono%%[,\}]*}
    case $ev in
      ready | load_ready)
        hand_over start learn "$mono" "$line"; phase=learn
        # A server is there to be found once it answers.
        if [ "${TSUM_KIND:-train}" = serve ] && [ "$ev" = ready ]; then
          err=$(meet_post "$serve_addr" "$serve_port") || { kill "$trainer" 2>/dev/null; fail learn "$err"; }
        fi ;;
      epoch) emit learn progress "$mono" "$line" ;;
      infer | load_level) n=$((n + 1)); emit learn progress "$mono" "{\"epoch\":$n,${line#\{}" ;;
      learn_end) hand_over learn verify "$mono" "$line"; phase=verify ;;
      infer_end | serve_end | load_end) HOLD=1; emit learn end "$mono" "$line"; emit verify begin "$mono"
                 hand_over verify save "$mono"; phase=save; saved=$line ;;
      verify) hand_over verify save "$mono" "$line"; phase=save ;;
      saved) saved=$line ;;
      checkpoint) checkpoint_snapshot "$line" ;;
    esac
  done < "$WORK/events.fifo"
  wait "$trainer"; rc=$?
  wait "$errstamp"
  # Stopped by the notice; one that came during verify or save let the trainer finish, and save goes on.
  [ -e "$WORK/notice" ] && [ "$rc" -ne 0 ] && interrupted_exit "tsum-train exited with status $rc"
  # A rank of a multi-node run stopped with the others at a checkpoint (another machine had the notice).
  [ "$NODES" -gt 1 ] && [ "$rc" -eq 75 ] && interrupted_exit "tsum-train stopped with every rank at a checkpoint"
  [ "$rc" -eq 0 ] || fail "$phase" "tsum-train exited with status $rc: $(tail -n 3 "$WORK/train.err")"
  ckpt_finish drop  # trained: the run resumes from nothing now
  if [ "$NODE" -gt 0 ]; then  # rank > 0 neither verifies nor saves: its part ends with the training
    t=$(now)
    [ "$phase" = verify ] && hand_over verify save "$t"
    saved='{}'
  fi
  [ -n "$saved" ] || fail save "tsum-train finished without saving a checkpoint"
fi

# save: the checkpoint, the event log and the samples go to the daemon; save ends once it holds every byte. They
# go all in one curl first (upload_all); whatever did not arrive whole then resumes file by file (upload).
samples_csv > "$WORK/samples.csv"
prefix=""; [ "$NODE" -gt 0 ] && prefix="node$NODE%2F"
: > "$WORK/uploads"
for f in "$WORK/events.jsonl" "$WORK/samples.csv"; do
  [ -e "$f" ] && printf '%s\t%s\n' "$prefix$(basename "$f")" "$f" >> "$WORK/uploads"
done
# Everything under out/: tsum-train's checkpoint (an inference sweep has none), or every file a job wrote, named
# by its path there ('/' is %2F in the URL).
(cd "$WORK/out" && find . -type f | sed 's#^\./##' | sort) |
  while IFS= read -r rel; do
    printf '%s\t%s\n' "$prefix$(printf '%s' "$rel" | sed 's#/#%2F#g')" "$WORK/out/$rel"
  done >> "$WORK/uploads"
upload_all "$WORK/uploads" > "$WORK/uploads.left"
while IFS="$TAB" read -r name f; do
  err=$(upload "$f" "$name") || fail save "$err"
done < "$WORK/uploads.left"
logs_final
emit save end "$(now)" "$saved"
drain || exit 1
log "done"
