#!/usr/bin/env python3
"""Scout through the daemon, as a user (or the issues' hidden-trace replays) would search it: each Scout job's
completed rows become a `tsumd serve --trace` CSV (a cluster of N machines as one instance type, `<N>x<type>`, with
its vCPUs, memory and price for all N and its family; with --layout nodes one machine's vCPUs and memory, a `nodes`
column and no family, which the daemon then reads from the name; 165 s of overheads around the recorded runtime, startup and poweroff folded
into install because the daemon measures those two on its own clock), and each job is searched by
`POST /v1/searches` under 4 billing rules with 100 planned runs and the default budget. Prints, for each case,
what the user pays in all over what 100 runs at the optimum cost (probes plus 100 runs on the pick), the pick, the
probes and the stop reason, then the median and the worst. A row Scout marks incomplete is left out: a trace CSV
has no way to say that a run failed.

    python3 bench/trace_search.py [--tsumd build/bin/tsumd] [--scout ../shared/testdata/scout/runs.csv]
                                  [--speed 10000] [--jobs a,b] [--rules sec60,min,10min,hour]
                                  [--layout totals|nodes]
"""
import argparse
import csv
import datetime
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsumd_proc import Daemon, cpu_model  # noqa: E402

RULES = {"sec60": (1, 60), "min": (60, 60), "10min": (600, 600), "hour": (3600, 3600)}
# Scout's 165 s of overheads (bench/trace_replay.h kScoutOverheads), startup and poweroff inside install.
PHASES = dict(startup=0, install=115, load_data=30, start=10, verify=0, save=10, poweroff=0)


def billed(rule, price, t_sum):
    step, minimum = RULES[rule]
    return price * math.ceil(max(t_sum, minimum) / step - 1e-9) * step / 3600


def write_trace(path, rows, layout):
    """layout "totals": a cluster's vCPUs and memory for all its machines, and its family; "nodes": one machine's
    and a nodes column, no family (the daemon reads it from the name)."""
    with open(path, "w") as f:
        f.write("config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,"
                "verify,save,poweroff,memory_gib," + ("family" if layout == "totals" else "nodes") + "\n")
        for r in rows:
            n, itype = int(r["nodes"]), r["instance_type"]
            name = f"{n}x{itype}"
            k = n if layout == "totals" else 1
            f.write(",".join(str(v) for v in [
                name, "trace", name, int(r["vcpus_per_node"]) * k, 0, float(r["price_per_hour_per_node"]) * n,
                PHASES["startup"], PHASES["install"], PHASES["load_data"], PHASES["start"], r["runtime_s"],
                PHASES["verify"], PHASES["save"], PHASES["poweroff"], float(r["memory_gib_per_node"]) * k,
                itype.split(".")[0] if layout == "totals" else n]) + "\n")


def search(d, rows, rule, timeout_s):
    body = {"workload": {"model": "mnist_cnn", "dataset": "fashion-mnist", "epochs": 1},
            "candidates": [{"provider": "trace", "instance_type": f"{r['nodes']}x{r['instance_type']}"} for r in rows],
            "objective": "cost", "future_runs": 100, "billing": "step:%d,min:%d" % RULES[rule]}
    status, created = d.call("POST", "/v1/searches", body)
    if status != 202:
        raise SystemExit(f"POST /v1/searches: {status} {created}")
    deadline = time.monotonic() + timeout_s
    while True:
        _, s = d.call("GET", f"/v1/searches/{created['id']}")
        if s.get("status") != "running":
            return s
        if time.monotonic() > deadline:
            raise SystemExit(f"search {created['id']} still running after {timeout_s} s")
        time.sleep(0.2)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsumd", default=os.path.join(here, "..", "build", "bin", "tsumd"))
    ap.add_argument("--scout", default=os.path.join(here, "..", "..", "shared", "testdata", "scout", "runs.csv"))
    ap.add_argument("--speed", type=float, default=10000)
    ap.add_argument("--jobs", default="")
    ap.add_argument("--rules", default="sec60,min,10min,hour")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one search may take")
    ap.add_argument("--layout", choices=["totals", "nodes"], default="totals",
                    help="a cluster's machine in the CSV: totals and a family column, or one machine and nodes")
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.scout)) if r["completed"] == "1"]
    jobs = a.jobs.split(",") if a.jobs else sorted({r["workload"] for r in rows})
    rules = a.rules.split(",")
    print(f"trace_search on {cpu_model()}, {os.cpu_count()} cores, {datetime.date.today()}: Scout's completed rows "
          f"through tsumd serve --trace --trace-speed {a.speed:g} (CSV layout: {a.layout}), POST /v1/searches, 100 planned "
          f"runs, default budget")
    totals = []
    with tempfile.TemporaryDirectory() as work:
        for job in jobs:
            mine = [r for r in rows if r["workload"] == job]
            trace = os.path.join(work, job + ".csv")
            write_trace(trace, mine, a.layout)
            d = Daemon(os.path.abspath(a.tsumd), work, os.path.join(work, job + ".db"),
                       ["--trace", trace, "--trace-speed", str(a.speed)])
            d.start()
            try:
                t_sum = lambda r: float(r["runtime_s"]) + sum(PHASES.values())
                price = lambda r: float(r["price_per_hour_per_node"]) * int(r["nodes"])
                for rule in rules:
                    s = search(d, mine, rule, a.timeout)
                    truth = {f"trace/{r['nodes']}x{r['instance_type']}": billed(rule, price(r), t_sum(r)) for r in mine}
                    optimum = min(truth.values())
                    rec = s.get("recommendation") or {}
                    pick = rec.get("config") or rec.get("candidate", {}).get("config")
                    total = (s["spent"] + 100 * truth[pick]) / (100 * optimum)
                    totals.append(total)
                    stopped = sum(1 for t in s["trace"] if t.get("error"))
                    print(f"  {job:27s} {rule:6s} total {total:.3f}  pick {pick} ({truth[pick] / optimum:.3f})  "
                          f"{len(s['trace'])} probes ({stopped} stopped or failed), spent {s['spent'] / optimum:.2f} "
                          f"optimum runs")
                    print("      probes: " + ", ".join(f"{t['config'][6:]} {truth[t['config']] / optimum:.3f}"
                                                      for t in s["trace"]))
                    print(f"      stop: {s['stop_reason'][:160]}")
            finally:
                d.kill(15)
    totals.sort()
    print(f"total median {totals[len(totals) // 2]:.3f}, worst {totals[-1]:.3f} over {len(totals)} cases")


if __name__ == "__main__":
    main()
