#!/usr/bin/env python3
"""Numbers a user can trust (issue 63): a campaign of 200 runs on the local provider, then every run checked as a
user would read it over REST.

  python3 bench/campaign.py [BUILD_DIR] [--scale F]      (bench/campaign.sh; make build first)

The runs: tsum-train (Fashion-MNIST, small) and folder jobs (one that marks its phases and reports epochs, one that
marks nothing), on 1 and 2 cores; some fail in setup (a traceback of several lines), some in learn (exit 3 after an
epoch), some are cancelled while they learn. --scale multiplies every count (0.1: a 20-run smoke).

What is checked of every run, each a count of violations that must be 0:
  - figures: every resource figure (stats.<phase>.<metric> min/avg/max) is >= 0, in min <= avg <= max order, and
    CPU is at most 100 x the run's cores;
  - setup_lines: a run that failed in setup holds the setup's own lines and `install failed` in its log (a1n0);
  - billed: a failed or cancelled run whose machine was up shows what that billed (cost, partial);
  - phases: no phase that did not run is timed: none after the phase a run failed or was cancelled in (poweroff
    aside), none negative, each timed phase with its began_at/ended_at on the daemon's clock (their difference
    its seconds) in phase order, and a done run's t_sum the sum of its phases (a job's unmarked ones add 0).
Prints the machine, the counts by kind and outcome, each check's violations (with the first few runs), and the
wall time; exit status 1 when any check failed.
"""
import io
import json
import os
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsumd_proc import Daemon, cpu_model  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:]]
SCALE = 1.0
if "--scale" in args:
    i = args.index("--scale")
    SCALE = float(args[i + 1])
    del args[i:i + 2]
BUILD = os.path.abspath(args[0] if args else os.path.join(HERE, "..", "build"))
TSUMD = os.path.join(BUILD, "bin", "tsumd")
PHASES = ["startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"]

EPOCH = '{"event": "epoch", "epoch": 1, "loss": 0.5, "images_per_s": 100}'
MARKED = f"""echo '{{"phase": "start", "mark": "end"}}' > "$TSUM_EVENTS"
i=1; while [ $i -le 3 ]; do echo "step $i"; i=$((i + 1)); done
echo '{EPOCH}' > "$TSUM_EVENTS"
echo '{{"phase": "learn", "mark": "end"}}' > "$TSUM_EVENTS"
echo '{{"phase": "verify", "mark": "begin"}}' > "$TSUM_EVENTS"
echo '{{"phase": "verify", "mark": "end", "attrs": {{"test_accuracy": 0.5}}}}' > "$TSUM_EVENTS"
"""
# (kind, workload, run.sh, setup.sh, repetitions per core count, cancel while learning)
KINDS = [
    ("train", {"epochs": 1, "limit": 300, "test_limit": 100}, None, None, 25, False),
    ("train-cancelled", {"epochs": 1, "limit": 60000, "test_limit": 100}, None, None, 5, True),
    ("job-marked", None, MARKED, None, 20, False),
    ("job-unmarked", None, "echo working; sleep 0.2; echo done\n", None, 10, False),
    ("job-setup-fails", None, "echo never\n",
     "echo hello from setup\nprintf 'Traceback (most recent call last):\\n  File x\\nModuleNotFoundError: no_such_module\\n' >&2\n"
     "exit 3\n", 15, False),
    ("job-learn-fails", None, f"echo '{EPOCH}' > \"$TSUM_EVENTS\"\nsleep 0.3\necho giving up\nexit 3\n", None, 15, False),
    ("job-cancelled", None, f"echo '{EPOCH}' > \"$TSUM_EVENTS\"\nwhile :; do sleep 0.2; done\n", None, 10, True),
]


def upload_folder(d, files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    req = urllib.request.Request(f"http://127.0.0.1:{d.port}/v1/workdirs", data=buf.getvalue(), method="POST",
                                 headers={"Authorization": f"Bearer {d.token}", "Content-Type": "application/gzip"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return "sha256:" + json.loads(r.read())["sha256"]


def submit(d, kind, workload, run, setup, reps):
    if run is not None:
        files = {"run.sh": run}
        workload = {"run": "sh run.sh"}
        if setup is not None:
            files["setup.sh"] = setup
            workload["setup"] = "sh setup.sh"
        workload["workdir"] = upload_folder(d, files)
    spec = {"name": kind, "workload": workload, "configs": [{"provider": "local", "cores": [1, 2]}],
            "repetitions": reps, "billing": ["per_second_60s_min", "per_hour"]}
    st, body = d.call("POST", "/v1/experiments", spec)
    if st != 201:
        raise SystemExit(f"{kind}: the experiment was refused: {st} {body}")
    return body["id"]


def runs_of(d, exp):
    out, cursor = [], ""
    while True:
        st, page = d.call("GET", f"/v1/runs?experiment={exp}&limit=500" + (f"&cursor={cursor}" if cursor else ""))
        if st != 200:
            raise SystemExit(f"GET /v1/runs: {st} {page}")
        out += page["runs"]
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return out


def canceller(d, experiments, stop):
    """Cancels each run of `experiments` once it learns (the user's DELETE while it runs)."""
    done = set()
    while not stop.is_set():
        for exp in experiments:
            st, page = d.call("GET", f"/v1/runs?experiment={exp}&status=learning&limit=100")
            for r in page.get("runs", []) if st == 200 else []:
                if r["id"] not in done:
                    d.call("DELETE", f"/v1/runs/{r['id']}")
                    done.add(r["id"])
        time.sleep(0.2)


def log_text(d, run_id, source):
    text, after = [], 0
    while True:
        st, page = d.call("GET", f"/v1/runs/{run_id}/logs?after={after}&limit=1000")
        if st != 200 or not page["lines"]:
            return "\n".join(text)
        text += [l["text"] for l in page["lines"] if l["source"] == source]
        after = page["after"]


def check(d, run, kind, problems):
    def bad(check_name, what):
        problems.setdefault(check_name, []).append(f"run {run['id']} ({kind}, {run['status']}): {what}")

    cores = int(run["config"]["instance_type"].split("-")[1].rstrip("c"))
    for phase, metrics in run["stats"].items():
        for metric, v in metrics.items():
            if min(v.values()) < 0 or not v["min"] <= v["avg"] <= v["max"]:
                bad("figures", f"{phase}.{metric} {v}")
            if metric == "cpu_pct" and v["max"] > 100 * cores:
                bad("figures", f"{phase}.cpu_pct max {v['max']} over 100 x {cores} cores")
    reason = run["reason"] or ""
    if kind == "job-setup-fails":
        text = log_text(d, run["id"], "a1n0")
        for want in ("hello from setup", "ModuleNotFoundError: no_such_module", "install failed: setup exited with status 3"):
            if want not in text:
                bad("setup_lines", f"its log lacks {want!r}")
    if run["status"] in ("failed", "cancelled"):
        up = any((a.get("up_s") or 0) > 0 for a in run["attempts"])
        if up and not (run["cost"] and all(c.get("partial") for c in run["cost"].values())):
            bad("billed", f"machine up {[a.get('up_s') for a in run['attempts']]} s, cost {run['cost']}")
    phases, times, unmarked = run["phases"], run["phase_times"], set(run.get("unmarked", []))
    stop_at = None  # the phase it failed in: it and every later one but poweroff did not end
    if run["status"] == "failed" and " failed" in reason and reason.split(" failed")[0] in PHASES:
        stop_at = PHASES.index(reason.split(" failed")[0])
    gap = False
    last_end = None
    for i, p in enumerate(PHASES):
        s = phases[p]
        if s is None:
            gap = gap or p not in unmarked
            continue
        if s < 0:
            bad("phases", f"{p} {s} s")
        if p != "poweroff" and (gap or (stop_at is not None and i >= stop_at)):
            bad("phases", f"{p} timed ({s} s) after a phase that did not run, reason {reason!r}")
        b, e = times[p]["began_at"], times[p]["ended_at"]
        if b is None or e is None or abs((e - b) - s) > 0.002:
            bad("phases", f"{p}: {s} s but began {b}, ended {e}")
        elif last_end is not None and e < last_end - 0.002:
            bad("phases", f"{p} ended at {e}, before the phase before it ({last_end})")
        else:
            last_end = e
    if run["status"] == "done":
        if any(phases[p] is None and p not in unmarked for p in PHASES):
            bad("phases", f"done with untimed phases {phases}")
        total = sum(phases[p] or 0 for p in PHASES)
        if run["t_sum"] is None or abs(run["t_sum"] - total) > 1e-6:
            bad("phases", f"t_sum {run['t_sum']} is not its phases' sum {total}")


def main():
    started = time.time()
    work = tempfile.mkdtemp(prefix="tsum-campaign-")
    d = Daemon(TSUMD, work, os.path.join(work, "tsum.db"), [])
    d.start()
    try:
        experiments, cancelling = {}, []
        for kind, workload, run, setup, reps, cancel in KINDS:
            n = max(1, round(reps * SCALE))
            exp = submit(d, kind, workload, run, setup, n)
            experiments[exp] = kind
            if cancel:
                cancelling.append(exp)
        total = sum(len(runs_of(d, e)) for e in experiments)
        print(f"campaign: {total} runs in {len(experiments)} experiments, {cpu_model()}, {os.cpu_count()} cores, "
              f"{time.strftime('%Y-%m-%d')}", flush=True)
        stop = threading.Event()
        t = threading.Thread(target=canceller, args=(d, cancelling, stop), daemon=True)
        t.start()
        deadline = time.monotonic() + 3600
        while True:
            unfinished = [e for e in experiments if d.call("GET", f"/v1/experiments/{e}")[1]["status"] in ("queued", "running")]
            if not unfinished:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"experiments {unfinished} still running after an hour")
            time.sleep(2)
        stop.set()
        problems, outcomes = {}, {}
        for exp, kind in experiments.items():
            for r in runs_of(d, exp):
                st, run = d.call("GET", f"/v1/runs/{r['id']}")
                outcomes[(kind, run["status"])] = outcomes.get((kind, run["status"]), 0) + 1
                check(d, run, kind, problems)
        print(f"{'kind':<18} {'outcome':<10} runs")
        for (kind, status), n in sorted(outcomes.items()):
            print(f"{kind:<18} {status:<10} {n}")
        for name in ("figures", "setup_lines", "billed", "phases"):
            found = problems.get(name, [])
            print(f"check {name:<12} {len(found)} violations" + ("" if not found else ": " + "; ".join(found[:5])))
        print(f"wall {time.time() - started:.0f} s")
        return 1 if problems else 0
    finally:
        d.kill(15)


if __name__ == "__main__":
    sys.exit(main())
