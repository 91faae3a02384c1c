#!/usr/bin/env python3
"""A daemon that runs for years (issue 61): RUNS runs (100,000) through the trace provider: two experiments of 500
(20 configs x 25 repetitions), one of 10,000 (100 configs x 100), then experiments of 440 (20 x 22; over 200
experiments in all). At 1,000 / 11,000 / 100,000 finished runs: each endpoint's latency (median of 11, 3 for the
details and the plan) and body, the dashboard's load times in headless Chromium (bench/dashboard_load.mjs, where
web/node_modules and Chromium are installed), the daemon's RSS, the database's size and the runs per second since
the last mark; then the ratios of the last mark to the first.

usage: bench/scale.py BUILD_DIR [--runs N] [--marks 1000,10000,100000] [--work DIR]

Experiments are created as the queue drains (at most AHEAD runs queued), so the database grows as a daemon's
would; the experiment of 10,000 is the third, created once the first mark is measured. At each mark no new
experiment is created until the queue is empty (so the mark after 1,000 is at 11,000 runs); then the endpoints are
read on a quiet daemon. Runs per second count only the time runs flowed. The deep page's cursor is made as the
daemon makes it (api/routes/paging.cpp): "runs:asc:<id>" in base64url.
"""
import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from tsumd_proc import Daemon, cpu_model  # noqa: E402

CONFIGS = 20
REPS = 25  # 20 configs x 25 repetitions: 500 runs an experiment
BIG_CONFIGS, BIG_REPS = 100, 100  # the third experiment: 10,000 runs
LATER_REPS = 22  # then 440 runs an experiment: over 200 experiments at 100,000 runs
AHEAD = 2000
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def trace_csv(path):
    with open(path, "w") as f:
        f.write("config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,"
                "verify,save,poweroff\n")
        for i in range(BIG_CONFIGS):
            cores = 2 + 2 * (i % 8)
            f.write(f"t{i},trace,t{i},{cores},0,{0.05 * cores:.2f},40,60,30,10,{4000 // cores},20,10,20\n")


def experiment_body(n, configs=CONFIGS, reps=REPS):
    return {"name": f"scale-{n}", "workload": {"model": "mnist_cnn", "epochs": 1},
            "configs": [{"provider": "trace", "instance_type": f"t{i}"} for i in range(configs)],
            "repetitions": reps, "billing": ["per_second_60s_min", "per_minute", "per_10_minutes", "per_hour"]}


def dashboard(d, experiment):
    """The dashboard's load times in headless Chromium (bench/dashboard_load.mjs), or why they were not measured."""
    if not os.path.exists("/usr/bin/chromium") or not os.path.isdir(os.path.join(REPO, "web", "node_modules")):
        return {"skipped": "needs /usr/bin/chromium and web/node_modules (scripts/install-deps.sh, npm ci in web/)"}
    out = subprocess.run(["node", os.path.join(REPO, "bench", "dashboard_load.mjs"), f"http://127.0.0.1:{d.port}",
                          d.token, str(experiment)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return {"skipped": f"dashboard_load.mjs failed: {out.stderr.strip()[-500:]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed(d, path, n=11):
    """Median seconds and body bytes of GET path."""
    times, size = [], 0
    for _ in range(n):
        req = urllib.request.Request(f"http://127.0.0.1:{d.port}{path}", headers={"Authorization": f"Bearer {d.token}"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=120) as r:
            body = r.read()
            status = r.status
        times.append(time.perf_counter() - t0)
        size = len(body)
        if status != 200:
            raise SystemExit(f"GET {path}: {status}")
    return statistics.median(times), size


def total(d, query):
    status, body = d.call("GET", f"/v1/runs?limit=1&{query}", timeout=60)
    if status != 200:
        raise SystemExit(f"GET /v1/runs?{query}: {status} {body}")
    return body["total"]


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def db_mb(db):
    """The database file and its write-ahead log, MB."""
    return tuple(os.path.getsize(db + s) / 1e6 if os.path.exists(db + s) else 0.0 for s in ("", "-wal"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--marks", default="1000,10000,100000")
    ap.add_argument("--work")
    a = ap.parse_args()
    marks = [int(m) for m in a.marks.split(",") if int(m) <= a.runs]
    work = a.work or tempfile.mkdtemp(prefix="tsum-scale.")
    os.makedirs(work, exist_ok=True)
    tsumd = os.path.join(a.build, "bin", "tsumd")
    csv = os.path.join(work, "trace.csv")
    trace_csv(csv)
    db = os.path.join(work, "t.db")
    # The trace provider's stand-in agents download nothing: an empty file stands in for the trainer bundle.
    bundle = os.path.join(work, "bundle.tar.gz")
    open(bundle, "wb").close()
    d = Daemon(tsumd, work, db, ["--trace", csv, "--trace-speed", "20000", "--max-concurrent", "64",
                                 "--bundle", bundle])
    d.start()
    print(f"bench/scale.py: {a.runs} runs (experiments of {CONFIGS * REPS}, one of {BIG_CONFIGS * BIG_REPS}, then of "
          f"{CONFIGS * LATER_REPS}), trace provider, on {cpu_model()} "
          f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}; work in {work}", flush=True)
    created, created_runs, at_last, results, same_rows = 0, 0, 0, [], 0
    experiments = []
    for mark in marks:
        t0 = time.monotonic()
        while True:
            done = total(d, "status=done,failed,cancelled")
            if done >= mark and done >= created_runs:  # measured on a quiet daemon: every run created has finished
                break
            queued = created_runs - done
            while queued < AHEAD and created_runs < mark:
                big = created == 2 and a.runs >= 20_000 and results  # once the first mark is measured
                configs, reps = (BIG_CONFIGS, BIG_REPS) if big else (CONFIGS, REPS if created < 2 else LATER_REPS)
                status, body = d.call("POST", "/v1/experiments", experiment_body(created + 1, configs, reps), timeout=60)
                if status != 201:
                    raise SystemExit(f"POST /v1/experiments: {status} {body}")
                experiments.append(body["id"])
                created += 1
                created_runs += configs * reps
                queued += configs * reps
            time.sleep(0.5)
        flowed = time.monotonic() - t0
        rate = (done - at_last) / flowed if flowed > 0 else 0
        at_last = done
        time.sleep(1.5)  # the settling loop's second
        deep = base64.urlsafe_b64encode(f"runs:asc:{done // 2}".encode()).decode().rstrip("=")
        first = experiments[0]
        big = experiments[2] if len(experiments) > 2 and a.runs >= 20_000 else first
        big_runs = BIG_CONFIGS * BIG_REPS if big != first else CONFIGS * REPS
        same_rows = same_rows or min(created, 50)
        rows = {
            "GET /metrics": timed(d, "/metrics"),
            "GET /v1/runs?limit=100": timed(d, "/v1/runs?limit=100"),
            "GET /v1/runs?limit=100 (deep page)": timed(d, f"/v1/runs?limit=100&cursor={deep}"),
            "GET /v1/runs?status=learning&limit=100": timed(d, "/v1/runs?status=learning&limit=100"),
            "GET /v1/runs?experiment=ID&limit=100": timed(d, f"/v1/runs?experiment={experiments[-1]}&limit=100"),
            "GET /v1/experiments (first page)": timed(d, "/v1/experiments?order=desc&limit=50"),
            # The same number of rows at every mark: the first mark has only as many experiments as it has.
            f"GET /v1/experiments?limit={same_rows}": timed(d, f"/v1/experiments?order=desc&limit={same_rows}"),
            "GET /v1/experiments/{id} (500 runs)": timed(d, f"/v1/experiments/{first}", 3),
            f"GET /v1/experiments/{{id}} ({big_runs:,} runs)": timed(d, f"/v1/experiments/{big}", 3),
            f"GET /v1/plan?experiment=ID ({big_runs:,} runs)": timed(d, f"/v1/plan?experiment={big}&objective=cost", 3),
        }
        page_loads = dashboard(d, big)
        results.append({"runs": done, "experiments": created, "endpoints": rows, "rss_mb": rss_mb(d.proc.pid),
                        "db_mb": db_mb(db), "runs_per_s": rate, "dashboard": page_loads})
        r = results[-1]
        print(f"\nat {done} finished runs ({created} experiments): RSS {r['rss_mb']:.0f} MB, database "
              f"{r['db_mb'][0]:.1f} MB ({1e6 * r['db_mb'][0] / max(done, 1) / 1024:.2f} KB a run; its log "
              f"{r['db_mb'][1]:.1f} MB), "
              f"{rate:.0f} runs/s since the last mark", flush=True)
        for name, (s, size) in rows.items():
            print(f"  {name:45s} {1000 * s:9.1f} ms {size / 1024:9.1f} KB", flush=True)
        if "skipped" in page_loads:
            print(f"  dashboard in Chromium: not measured: {page_loads['skipped']}", flush=True)
        else:
            print(f"  {'dashboard: experiments page (Chromium)':45s} {page_loads['experiments_ms']:9.1f} ms", flush=True)
            print(f"  {f'dashboard: experiment of {big_runs:,} runs':45s} {page_loads['experiment_ms']:9.1f} ms "
                  f"({page_loads['experiment_runs_shown']} runs shown, charts: "
                  f"{', '.join(page_loads['experiment_charts']) or 'none'})", flush=True)
    if len(results) > 1:
        a0, z = results[0], results[-1]
        print(f"\nratios at {z['runs']} / at {a0['runs']} runs:")
        for name in z["endpoints"]:
            if name in a0["endpoints"]:  # the experiment of 10,000 is not there at the first mark
                print(f"  {name:45s} {z['endpoints'][name][0] / a0['endpoints'][name][0]:6.2f}")
        mid = results[-2]
        print(f"  RSS at {z['runs']} / at {mid['runs']}: {z['rss_mb'] / mid['rss_mb']:.2f}")
        flow = [r["runs_per_s"] for r in results]
        print(f"  runs/s between marks: {', '.join(f'{x:.0f}' for x in flow)}")
    with open(os.path.join(work, "scale.json"), "w") as f:
        json.dump(results, f, indent=1)
    d.kill(15)


if __name__ == "__main__":
    main()
