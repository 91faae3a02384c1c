#!/bin/sh
# One command on a machine with an NVIDIA GPU and a CUDA PyTorch (a lent GPU machine is fresh every time):
#   1. builds the workload alone (TSUM_WORKLOAD_ONLY: tsum-train, tsum-gpustat, test_workload) against the libtorch
#      of python3's torch, with CUDA, in a folder of its own;
#   2. runs the workload suite with TSUM_TEST_DEVICE=cuda: every model with every optimizer in fp32, bf16 and fp16,
#      fp16's loss scaling skipping overflowing steps and recovering, tsum-train end to end in each precision, and
#      probe-gpu; the CPU cases run as everywhere;
#   3. reads the GPUs through the driver's NVML (tsum-gpustat) and probes the first one (tsum-train probe-gpu);
#   4. prints a summary, one line a step, and exits non-zero if any step failed.
#   scripts/gpu-check.sh [BUILD_DIR]      (default build-gpu)
# Environment: PYTHON (default python3), TSUM_GPU_DEPS (default .gpu: scripts/gpu-deps.sh's folder, used where it
# exists, for a machine without Debian's packages), JOBS (build jobs, default all CPUs), TEST_TIMEOUT_S (600),
# LOG_DIR (default BUILD_DIR/gpu-check: each step's log), ISOLATE=1 (each test case in a process of its own, and
# a backtrace of any that crashes: DEBUGGER, default cuda-gdb, which also debugs host code).
set -u
build=${1:-build-gpu}
py=${PYTHON:-python3}
deps=${TSUM_GPU_DEPS:-.gpu}
logs=${LOG_DIR:-$build/gpu-check}
mkdir -p "$build" "$logs"
summary=""
failed=0
step() {  # NAME STATUS DETAIL
  summary="$summary$(printf '%-6s %-14s %s' "$2" "$1" "$3")
"
  [ "$2" = PASS ] || failed=1
  echo "== $1: $2 $3"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$logs/gpu.txt" 2>&1
gpu=$(head -n 1 "$logs/gpu.txt")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
torch_info=$($py -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, torch.utils.cmake_prefix_path)')
echo "gpu: $gpu; cpu: $cpu ($(nproc) CPUs); torch: $torch_info"
torch_prefix=${torch_info##* }

prefix="$torch_prefix"
extra=""
if [ -d "$deps/prefix" ]; then
  deps=$(cd "$deps" && pwd)
  prefix="$deps/prefix;$torch_prefix"
  export LD_LIBRARY_PATH="$deps/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -d "$deps/data/fashion-mnist" ] && extra="-DTSUM_FASHION_MNIST_DIR=$deps/data/fashion-mnist"
fi
generator=""; keep="-k"
command -v ninja >/dev/null && generator="-G Ninja" keep="-k 0"
start=$(date +%s)
# shellcheck disable=SC2086  # generator and extra are empty or whole flags
if cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
     -DTSUM_WORKLOAD_ONLY=ON -DTSUM_CUDA=ON \
     -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 $extra > "$logs/configure.log" 2>&1 &&
   ! grep -q "has no CUDA" "$logs/configure.log"; then
  step configure PASS "$(grep -o 'libtorch [0-9].*' "$logs/configure.log" | head -n 1 | cut -c1-100)"
else
  step configure FAIL "$(tail -n 5 "$logs/configure.log" | tr '\n' ' ' | cut -c1-300)"
fi
# Without Gloo's headers tsum-train has no data-parallel training (workload/CMakeLists.txt): its cases are left out.
no_gloo=0
grep -q '^GLOO_INCLUDE_DIR:PATH=.*NOTFOUND' "$build/CMakeCache.txt" 2>/dev/null && no_gloo=1
[ "$no_gloo" = 1 ] && echo "note: no Gloo headers in this libtorch: data-parallel tests excluded"
# shellcheck disable=SC2086  # keep is one or two words
if cmake --build "$build" -j "${JOBS:-$(nproc)}" -- $keep > "$logs/build.log" 2>&1; then
  step build PASS "$(($(date +%s) - start)) s"
else
  step build FAIL "$(grep -m 5 -E 'error|Error' "$logs/build.log" | tr '\n' ' ' | cut -c1-600)"
fi

bin="$build/bin"
exclude=""
[ "$no_gloo" = 1 ] && exclude="--test-case-exclude=dist:*"
suite="$build/tests/workload/test_workload"
if [ ! -x "$suite" ]; then
  step test_workload FAIL "not built"
elif [ "${ISOLATE:-0}" = 1 ]; then
  # Each test case in a process of its own (a CUDA fault or a crash ends its process only): four at a time, the
  # data-parallel ones (their own processes and ports) one after another; a crashed case is run again under a
  # debugger for its backtrace.
  start=$(date +%s)
  mkdir -p "$logs/cases"
  # Listed with the test device set, which the fp16 case needs to be listed at all; without Gloo, no dist: cases.
  TSUM_TEST_DEVICE=cuda "$suite" -ltc | sed -n '3,$p' | sed '$d' | sed '$d' > "$logs/cases.all"
  if [ -n "$exclude" ]; then grep -v '^dist:' "$logs/cases.all" > "$logs/cases.txt"; else cp "$logs/cases.all" "$logs/cases.txt"; fi
  run_case() {  # NAME: one case, its log in cases/; prints "rc<TAB>name"
    f="$logs/cases/$(printf '%s' "$1" | tr -c 'A-Za-z0-9' _ | cut -c1-80).log"
    TSUM_TEST_DEVICE=cuda timeout "${CASE_TIMEOUT_S:-300}" "$suite" "--test-case=$(printf '%s' "$1" | sed 's/,/\\,/g')" > "$f" 2>&1
    printf '%s\t%s\n' "$?" "$1"
  }
  : > "$logs/cases.rc"
  grep -v '^dist:' "$logs/cases.txt" | {
    while IFS= read -r name; do
      run_case "$name" >> "$logs/cases.rc" &
      while [ "$(jobs -p | wc -l)" -ge 4 ]; do sleep 0.2; done
    done
    wait
  }
  grep '^dist:' "$logs/cases.txt" | while IFS= read -r name; do run_case "$name" >> "$logs/cases.rc"; done
  total=$(wc -l < "$logs/cases.rc")
  bad=$(awk -F '\t' '$1 != 0' "$logs/cases.rc")
  if [ -z "$bad" ]; then
    step test_workload PASS "$total cases, each in its own process; $(($(date +%s) - start)) s"
  else
    step test_workload FAIL "$(echo "$bad" | wc -l) of $total cases: $(echo "$bad" | cut -f2 | tr '\n' ';' | cut -c1-600)"
    echo "$bad" | awk -F '\t' '$1 >= 128 && $1 != 137' | cut -f2 | head -n 2 | while IFS= read -r name; do
      echo "== backtrace: $name"
      TSUM_TEST_DEVICE=cuda timeout 120 "${DEBUGGER:-cuda-gdb}" -batch -ex run -ex bt --args "$suite" \
        "--test-case=$(printf '%s' "$name" | sed 's/,/\\,/g')" --no-breaks 2>&1 | grep -E '^#[0-9]' | head -n 30
    done
  fi
else
  start=$(date +%s)
  # shellcheck disable=SC2086  # exclude is empty or one flag
  TSUM_TEST_DEVICE=cuda timeout "${TEST_TIMEOUT_S:-600}" "$suite" $exclude > "$logs/test_workload.log" 2>&1
  rc=$?
  result=$(grep -E '^\[doctest\] test cases' "$logs/test_workload.log" | sed 's/\[doctest\] //')
  if [ "$rc" -eq 0 ]; then step test_workload PASS "$result; $(($(date +%s) - start)) s"
  else step test_workload FAIL "rc $rc: $result; $(grep -m 3 -E 'ERROR|FATAL' "$logs/test_workload.log" | tr '\n' ' ' | cut -c1-400)"; fi
fi

if "$bin/tsum-gpustat" > "$logs/gpustat.json" 2>&1 && grep -q '"name"' "$logs/gpustat.json"; then
  step nvml PASS "$(cut -c1-200 "$logs/gpustat.json")"
else
  step nvml FAIL "$(cut -c1-200 "$logs/gpustat.json")"
fi
if "$bin/tsum-train" probe-gpu > "$logs/probe.json" 2>&1 && grep -q gpu_probe "$logs/probe.json"; then
  step probe-gpu PASS "$(cut -c1-300 "$logs/probe.json")"
else
  step probe-gpu FAIL "$(cut -c1-300 "$logs/probe.json")"
fi

echo
echo "gpu-check summary ($gpu; torch $torch_info)"
printf '%s' "$summary"
exit "$failed"
