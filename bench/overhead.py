#!/usr/bin/env python3
"""The local provider's overhead: t_sum minus the trainer process's own wall time (issue 17, deliverable 4).

  python3 bench/overhead.py [BUILD_DIR]       (make build first; Python's standard library only)

Environment: RUNS (6) runs, one after another, of the MNIST CNN on fashion-mnist (LIMIT 600 training images,
1 epoch) on local-1c, in a fresh state directory. The trainer's wall time is its start (the agent's start begin
mark, taken just before it runs tsum-train) to its "saved" event (its last act before it exits), both on the
instance's clock. Overhead = t_sum - that: startup, install, load_data, the upload part of save and poweroff.
The first run on a machine downloads and unpacks the trainer bundle and the data set; the later ones link them
from the machine's cache (install and load_data say "method": "cached"). Goal: at most 0.5 s (median of the runs
after the first).
"""
import json
import os
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import time

from tsumd_proc import Daemon, cpu_model

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build"))
RUNS = int(os.environ.get("RUNS", "6"))
LIMIT = int(os.environ.get("LIMIT", "600"))
PHASES = ["startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"]


def main():
    work = tempfile.mkdtemp(prefix="tsum-overhead.")
    d = Daemon(os.path.join(BUILD, "bin", "tsumd"), work, os.path.join(work, "t.db"),
               ["--state-dir", os.path.join(work, "state"), "--max-concurrent", "1"])
    d.start()
    try:
        code, exp = d.call("POST", "/v1/experiments", {
            "name": "overhead", "workload": {"model": "mnist_cnn", "dataset": "fashion-mnist", "epochs": 1,
                                             "limit": LIMIT, "test_limit": 200},
            "configs": [{"provider": "local", "instance_type": "local-1c"}], "repetitions": RUNS})
        if code != 201:
            raise SystemExit(f"POST /v1/experiments: {code} {exp}")
        deadline = time.monotonic() + 120 + 60 * RUNS
        while d.call("GET", f"/v1/experiments/{exp['id']}")[1]["status"] not in ("done", "failed", "cancelled"):
            if time.monotonic() > deadline:
                raise SystemExit("the runs did not finish in time")
            time.sleep(0.5)
        runs = d.call("GET", f"/v1/experiments/{exp['id']}")[1]["runs"]
        print(f"bench/overhead.py: {cpu_model()}, {os.cpu_count()} cores; {RUNS} local-1c runs of mnist_cnn "
              f"(limit {LIMIT}), one after another")
        print(f"  {'run':>4} {'install':>14} {'t_sum':>7} {'trainer':>8} {'overhead':>9}   "
              "startup install load_data upload poweroff (s)")
        later = []
        for i, brief in enumerate(runs):
            r = d.call("GET", f"/v1/runs/{brief['id']}")[1]
            if r["status"] != "done" or r["t_sum"] is None:
                raise SystemExit(f"run {r['id']} {r['status']}: {r['reason']}")
            con = sqlite3.connect(f"file:{d.db}?mode=ro", uri=True, timeout=10)
            marks = {(p, m): (t, json.loads(a)) for p, m, t, a in con.execute(
                "SELECT phase, mark, t, attrs FROM phase_marks WHERE run_id = ?", (r["id"],))}
            con.close()
            start_t = marks[("start", "begin")][0]
            saved_t = marks[("save", "end")][1]["mono_s"]
            save_end_t = marks[("save", "end")][0]
            trainer = saved_t - start_t
            ph = r["phases"]
            overhead = r["t_sum"] - trainer
            method = marks[("install", "end")][1].get("method", "?")
            if i:
                later.append(overhead)
            print(f"  {r['id']:>4} {method:>14} {r['t_sum']:7.2f} {trainer:8.2f} {overhead:9.3f}   "
                  f"{ph['startup']:.3f} {ph['install']:.3f} {ph['load_data']:.3f} {save_end_t - saved_t:.3f} "
                  f"{ph['poweroff']:.3f}")
        if later:
            med = statistics.median(later)
            print(f"  overhead after the first run: median {med:.3f} s, max {max(later):.3f} s; goal <= 0.5 s: "
                  f"{'met' if med <= 0.5 else 'not met'}")
    finally:
        d.kill(signal.SIGTERM)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
