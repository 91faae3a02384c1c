#!/bin/sh
# Fuzzes every parser that takes input from outside with libFuzzer (clang, ASan, UBSan): builds tests/fuzz (a
# project of its own, from the parsers' sources only), replays each target's kept findings
# (tests/fuzz/regressions/TARGET/), then runs it for SECONDS from its committed seeds (tests/fuzz/corpus/TARGET/)
# plus what earlier runs in this build directory found. Prints, per target, executions and findings (crashes,
# leaks, sanitizer reports, timeouts, out-of-memory); exits 1 on any finding, naming the input that shows it.
#   bench/fuzz.sh [SECONDS]        (default 600; `make fuzz` runs it with FUZZ_SECONDS, default 60)
#   bench/fuzz.sh --build          only configure and build the targets
# `make test` fuzzes nothing: CTest's fuzz_replay runs the seeds and kept findings through the same targets built
# by the main build with an ordinary main (tests/fuzz/replay_main.cpp).
# Environment: FUZZ_TARGETS ("http cron ..."; default all), FUZZ_BUILD (default build/fuzz).
# A finding: fix it, then copy the printed input into tests/fuzz/regressions/TARGET/ so it is replayed forever.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build_only=false
if [ "${1:-}" = --build ]; then build_only=true; shift; fi
secs=${1:-${FUZZ_SECONDS:-600}}
build=${FUZZ_BUILD:-$root/build/fuzz}
command -v clang++ >/dev/null 2>&1 || { echo "bench/fuzz.sh: needs clang (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
mkdir -p "$build"
cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ $launcher >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 2; }
ninja -C "$build" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log" >&2; exit 2; }
if $build_only; then echo "fuzz: targets built in $build"; exit 0; fi

targets=${FUZZ_TARGETS:-$(ls "$root/tests/fuzz/corpus")}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "fuzz: ${secs} s per target, clang $(clang++ -dumpversion), $cpu"
printf '%-16s %8s %12s %10s %8s %s\n' target seconds executions "execs/s" corpus findings
found=0
for t in $targets; do
  bin="$build/fuzz_$t"
  [ -x "$bin" ] || { echo "bench/fuzz.sh: no target fuzz_$t" >&2; exit 2; }
  work="$build/run/$t"
  mkdir -p "$work/corpus" "$work/findings"
  log="$work/fuzz.log"
  # Kept findings first: each must now pass.
  regressions="$root/tests/fuzz/regressions/$t"
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    if ! "$bin" -rss_limit_mb=2048 -timeout=10 "$regressions"/* >"$work/regressions.log" 2>&1; then
      echo "fuzz_$t: a kept finding fails again (tests/fuzz/regressions/$t):"; tail -30 "$work/regressions.log"
      found=$((found + 1)); continue
    fi
  fi
  rm -f "$work/findings"/*
  start=$(date +%s)
  rc=0
  "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -max_len=24576 \
    -print_final_stats=1 -artifact_prefix="$work/findings/" "$work/corpus" "$root/tests/fuzz/corpus/$t" \
    >"$log" 2>&1 || rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  per_s=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(ls "$work/corpus" | wc -l)
  n=$(ls "$work/findings" | wc -l)
  [ "$rc" -ne 0 ] && [ "$n" -eq 0 ] && n=1  # died without leaving an input (e.g. the harness itself)
  printf '%-16s %8s %12s %10s %8s %s\n' "$t" "$took" "${execs:-?}" "${per_s:-?}" "$corpus" "$n"
  if [ "$n" -ne 0 ]; then
    found=$((found + n))
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==" "$log" | head -20
    for f in "$work/findings"/*; do [ -e "$f" ] && echo "  input: $f"; done
    echo "  log: $log"
  fi
done
if [ "$found" -ne 0 ]; then
  echo "fuzz: $found finding(s); fix each, then keep its input in tests/fuzz/regressions/TARGET/"
  exit 1
fi
echo "fuzz: no findings"
