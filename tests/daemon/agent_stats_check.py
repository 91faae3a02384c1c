#!/usr/bin/python3
"""The agent's resource figures on the edge cases a machine gives them (issue 63: a stored cpu_pct of -5025 and a
1-core run's 120): the agent's own `stats` and `samples_csv` functions, cut from tsum-agent.sh and run by /bin/sh
over sample files written here. Each case says what a user would otherwise have seen.
Usage: agent_stats_check.py <tsum-agent.sh>
"""
import json
import os
import re
import subprocess
import sys
import tempfile

AGENT = sys.argv[1]
HZ = 100


def functions():
    text = open(AGENT).read()
    out = []
    for name in ("stats", "samples_csv"):
        m = re.search(r"^%s\(\) \{\n.*?^\}\n" % name, text, re.S | re.M)
        if not m:
            sys.exit(f"FAIL: {name}() is not in {AGENT}")
        out.append(m.group(0))
    return "\n".join(out)


def run(samples, begin, cores):
    """stats BEGIN and samples_csv over the sample lines (mono_s cpu_ticks rss read write)."""
    with tempfile.TemporaryDirectory(prefix="tsum-agent-stats-") as work:
        with open(os.path.join(work, "samples"), "w") as f:
            f.write("".join(" ".join(str(v) for v in s) + "\n" for s in samples))
        script = f'WORK={work}; HZ={HZ}; CORES={cores}\n{functions()}\nstats {begin}; echo; samples_csv\n'
        out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()
        rows = [dict(zip(out[1].split(","), line.split(","))) for line in out[2:]]
        return json.loads(out[0]), rows


failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def bounded(stats, rows, cores, what):
    figures = [v for m in stats.values() for v in m.values()]
    check(all(v >= 0 for v in figures), f"{what}: no figure below 0: {stats}")
    check(stats.get("cpu_pct", {}).get("max", 0) <= 100 * cores, f"{what}: CPU at most 100 x {cores} cores: {stats.get('cpu_pct')}")
    csv = [float(r[k]) for r in rows for k in ("cpu_pct", "read_bps", "write_bps")]
    check(all(v >= 0 for v in csv) and all(float(r["cpu_pct"]) <= 100 * cores for r in rows),
          f"{what}: samples.csv within the same bounds: {[r['cpu_pct'] for r in rows]}")


# A steady core: the figures are what they are (the bounds take nothing from a true value).
stats, rows = run([(10, 0, 1e8, 0, 0), (11, 100, 1e8, 1e6, 0), (12, 200, 1e8, 2e6, 0)], 10, 2)
check(stats["cpu_pct"] == {"min": 100, "avg": 100, "max": 100} and stats["read_bps"]["avg"] == 1e6,
      f"one busy core over 2 s: cpu 100, 1 MB/s: {stats}")

# A process left the session with its ticks and bytes (reaped outside it): the sums fall, and must not read as
# negative CPU or I/O.
stats, rows = run([(10, 5000, 1e8, 9e6, 4e6), (11, 5100, 1e8, 9e6, 4e6), (12, 100, 1e8, 0, 0), (13, 200, 1e8, 1e6, 0)], 10, 2)
bounded(stats, rows, 2, "a process's counters gone from the sums")
check(stats["cpu_pct"]["avg"] > 0, f"...and the time still spent is counted: {stats['cpu_pct']}")

# A short save phase whose sum fell by 50 ticks in 10 ms: the stored -5025 %.
stats, rows = run([(20, 900, 1e8, 0, 0), (20.01, 850, 1e8, 0, 0)], 20, 1)
bounded(stats, rows, 1, "a 10 ms phase whose counter fell")
check(stats["cpu_pct"]["avg"] == 0, f"...nothing measured as spent, not -5025 %: {stats['cpu_pct']}")

# A 10 ms phase on a busy core: one tick is 10 ms of CPU, so one tick more is 200 % of one core: at most 100.
stats, rows = run([(25, 0, 1e8, 0, 0), (25.01, 2, 1e8, 0, 0)], 25, 1)
bounded(stats, rows, 1, "a 10 ms phase with two ticks")

# A child's whole CPU time landing in one span when it is reaped (a pinned run's 120 %).
stats, rows = run([(30, 0, 1e8, 0, 0), (30.5, 50, 1e8, 0, 0), (31, 160, 1e8, 0, 0), (32, 260, 1e8, 0, 0)], 30, 1)
bounded(stats, rows, 1, "a reaped child's ticks in one span, pinned to 1 core")

if failures:
    sys.exit(f"FAIL: {len(failures)} checks")
print("OK")
