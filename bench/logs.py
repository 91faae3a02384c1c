#!/usr/bin/env python3
"""How fast a run's output reaches `tsumd runs logs ID -f`, and what a daemon restart loses of it (issue 52).
Python's standard library only (any python3).

  python3 bench/logs.py [BUILD_DIR]

A folder job on the local provider prints LINES lines (default 40), one every GAP_S seconds (0.5), each with the
CLOCK_BOOTTIME it was printed at (/proc/uptime: the machine and this script share the kernel's clock). `tsumd runs
logs ID -f` follows it; each line is stamped with the same clock as it comes out of the client. After KILL_AT lines
(15) the daemon is killed -9, left down DOWN_S seconds (3) while the job prints on, and started again on the same
database and port; a new `runs logs -f` follows from there. Printed: the latency of the first line and of the
lines printed while the daemon was up (median, p90, max), the ratio of the first line's to the goal (2 s), and the
lines lost (the daemon's numbers 0..N-1 without a gap, every printed line received once).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from tsumd_proc import Daemon, cpu_model

HERE = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
BUILD = os.path.abspath(args.pop(0) if args and os.path.isdir(args[0]) else os.path.join(HERE, "..", "build"))
TSUMD = os.path.join(BUILD, "bin", "tsumd")
LINES = int(os.environ.get("LINES", "40"))
GAP_S = float(os.environ.get("GAP_S", "0.5"))
KILL_AT = int(os.environ.get("KILL_AT", "15"))
DOWN_S = float(os.environ.get("DOWN_S", "3"))
GOAL_S = 2.0


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def follow(d, run_id, got, stop_after=None):
    """Runs `tsumd runs logs RUN -f`, recording for each "line I T" the uptime it came out at; returns the process
    once it ends (the run ended, or the daemon went away), or once `stop_after` lines were seen."""
    env = dict(os.environ, TSUM_URL=f"http://127.0.0.1:{d.port}", TSUM_TOKEN=d.token)
    p = subprocess.Popen([TSUMD, "runs", "logs", str(run_id), "-f"], stdout=subprocess.PIPE, text=True, env=env)
    while True:
        line = p.stdout.readline()
        if not line:
            p.wait()
            return p
        at = uptime()
        words = line.split()
        if words and words[0].startswith("["):  # [a1n0]: the run has more than one source (its warm-up's)
            words = words[1:]
        if len(words) == 3 and words[0] == "line":
            got.setdefault(int(words[1]), (float(words[2]), at))
            if stop_after and len(got) >= stop_after:
                return p


def stats(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2], xs[int(len(xs) * 0.9)], xs[-1]


def main():
    root = tempfile.mkdtemp(prefix="tsum-logs-")
    job = os.path.join(root, "job")
    os.makedirs(job)
    with open(os.path.join(job, "run.sh"), "w") as f:
        f.write(f'i=1; while [ $i -le {LINES} ]; do read -r up _ < /proc/uptime; echo "line $i $up"; i=$((i + 1)); '
                f'sleep {GAP_S}; done\n')
    with open(os.path.join(root, "job.json"), "w") as f:
        f.write('{"name": "logs-bench", "workload": {"workdir": "job", "run": "sh run.sh"}, '
                '"configs": [{"provider": "local", "instance_type": "local-1c"}], "repetitions": 1}')
    d = Daemon(TSUMD, root, os.path.join(root, "t.db"), ["--state-dir", os.path.join(root, "state")])
    d.start()
    env = dict(os.environ, TSUM_URL=f"http://127.0.0.1:{d.port}", TSUM_TOKEN=d.token)
    out = subprocess.check_output([TSUMD, "experiment", "create", "-f", os.path.join(root, "job.json"), "--json"],
                                  env=env, text=True)
    exp = json.loads(out)["id"]
    run_id = d.call("GET", f"/v1/experiments/{exp}")[1]["runs"][0]["id"]

    got = {}
    p = follow(d, run_id, got, stop_after=KILL_AT)
    p.kill()
    d.kill(signal.SIGKILL)
    killed_at = uptime()
    time.sleep(DOWN_S)
    d.start()
    back_at = uptime()
    follow(d, run_id, got)
    status = d.call("GET", f"/v1/runs/{run_id}")[1]["status"]
    held = []
    after = 0
    while True:
        page = d.call("GET", f"/v1/runs/{run_id}/logs?after={after}")[1]
        if not page["lines"]:
            break
        held += [l for l in page["lines"] if l["source"] == "a1n0"]
        after = page["after"]
    d.kill(signal.SIGTERM)

    up = [at - printed for printed, at in got.values() if printed < killed_at or printed > back_at]
    first = got[1][1] - got[1][0] if 1 in got else float("nan")
    numbers = [l["n"] for l in held]
    printed = [int(l["text"].split()[1]) for l in held if l["text"].startswith("line ")]
    lost = LINES - len(set(printed))
    med, p90, worst = stats(up)
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}")
    print(f"{LINES} lines, one every {GAP_S} s; daemon killed -9 after line {KILL_AT}, down {DOWN_S} s; run {status}")
    print(f"first line: {first:.3f} s from print to `runs logs -f`; ratio to the {GOAL_S:.0f} s goal: {first / GOAL_S:.3f}")
    print(f"lines printed while the daemon was up ({len(up)}): median {med:.3f} s, p90 {p90:.3f} s, max {worst:.3f} s")
    print(f"lines the daemon holds: {len(held)}, numbered 0..{max(numbers, default=-1)} "
          f"{'without a gap' if numbers == list(range(len(numbers))) else 'WITH GAPS'}; printed lines lost: {lost}, "
          f"received twice: {len(printed) - len(set(printed))}")
    ok = status == "done" and lost == 0 and numbers == list(range(len(numbers))) and first <= GOAL_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
