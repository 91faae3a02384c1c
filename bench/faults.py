#!/usr/bin/env python3
"""Fault campaign against a real tsumd (issue 17, deliverable 3). Python's standard library only (any python3).

  python3 bench/faults.py [BUILD_DIR] [PART ...]      PART: kill9 diskfull offline openfiles twodaemons (default:
                                                       all five)
  sh bench/faults.sh [BUILD_DIR]                       the five, then the SIGTERM case (a test of its own)

Environment: KILLS (100) kill -9 points, OFFLINE_S (300) how long the agent's daemon is away, SEED (1).

kill9     tsumd serves the trace provider (recorded phases replayed at 4x) and the local one (real tsum-train runs of
          the MNIST CNN), several runs live, experiments with budgets queued behind them. KILLS times: kill -9 at a
          random moment (0.05-3 s after it answers), read the database as the killed daemon left it, start it again
          on the same database and port. Counted after each restart: runs that were live at the kill and are not
          terminal 120 s later (stuck: a local run is taken back and finishes, a trace run is settled); agent processes and sandboxes of runs that are terminal (orphans); phase marks and
          epochs committed before the kill and missing or changed after it (lost); then, at the end: done runs
          without all 16 marks, every experiment's charge against its budget, processes left after a SIGTERM.
diskfull  the database on a 16 MiB tmpfs: fill it while runs are live. The daemon must refuse new work with 503
          and say why (/healthz 503 "degraded"), keep answering, lose nothing committed, and once space returns
          take new work again and finish the runs that were live. Needs root (mount).
offline   a local run: its daemon SIGSTOPped for OFFLINE_S seconds mid-learn (it accepts connections and answers
          none, as a daemon behind a dead network path does), then resumed. The run must finish with every phase
          mark and every epoch exactly once; learn is the trainer's own time, not the outage.
openfiles tsumd under `ulimit -n 1024` (soft and hard), 1,100 idle connections open to it: /healthz must answer
          within a second (five tries), and the log must say the limit and the connection cap.
twodaemons a second `tsumd serve` on the database of one with a live local run: it must refuse, naming the first's
          pid, and leave the run alone; after kill -9 of the first, the next serve must start.
Prints each part's figures and PASS/FAIL per goal; exits 1 if any goal failed.
"""
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

from tsumd_proc import Daemon, cpu_model

HERE = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
BUILD = os.path.abspath(args.pop(0) if args and os.path.isdir(args[0]) else os.path.join(HERE, "..", "build"))
PARTS = args or ["kill9", "diskfull", "offline", "openfiles", "twodaemons"]
TSUMD = os.path.join(BUILD, "bin", "tsumd")
KILLS = int(os.environ.get("KILLS", "100"))
OFFLINE_S = float(os.environ.get("OFFLINE_S", "300"))
rng = random.Random(int(os.environ.get("SEED", "1")))
LIVE = ["provisioning", "booting", "installing", "loading", "starting", "learning", "verifying", "saving",
        "terminating"]
TERMINAL = ["done", "failed", "cancelled"]
PHASES = ["startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"]
failures = []


def goal(ok, what):
    print(f"  {'PASS' if ok else 'FAIL'}  {what}", flush=True)
    if not ok:
        failures.append(what)


def read_db(path):
    """The database as it is on disk now (read-only): run statuses, every mark and epoch."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        runs = {r[0]: r[1:] for r in con.execute(
            "SELECT id, status, experiment_id, provider, hourly_price, updated_at, instance FROM runs")}
        marks = {(r[0], -1, r[1], r[2]): (r[3], r[4]) for r in con.execute(
            "SELECT run_id, phase, mark, t, attrs FROM phase_marks")}
        marks.update({(r[0], r[1], r[2], r[3]): (r[4], r[5]) for r in con.execute(
            "SELECT run_id, node, phase, mark, t, attrs FROM node_marks")})
        epochs = {(r[0], r[1]): r[2] for r in con.execute("SELECT run_id, epoch, attrs FROM run_epochs")}
        budgets = {r[0]: json.loads(r[1]).get("budget") for r in con.execute("SELECT id, spec FROM experiments")}
        return runs, marks, epochs, budgets
    finally:
        con.close()


def agent_processes(state_dir):
    """pid -> run id of every process whose environment names a sandbox under state_dir/local."""
    prefix = f"TSUM_SANDBOX={os.path.join(state_dir, 'local')}/".encode()
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for v in env:
            if v.startswith(prefix):
                out[int(pid)] = int(v[len(prefix):].decode().split("-")[1])
    return out


def sandboxes(state_dir):
    d = os.path.join(state_dir, "local")
    return {n: int(n.split("-")[1]) for n in os.listdir(d)} if os.path.isdir(d) else {}


TRACE_CSV = """config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,poweroff
k-1,trace,k-1,1,0,36.0,2,2,1,1,6,1,1,1
k-2,trace,k-2,2,0,72.0,2,2,1,1,3,1,1,1
"""


def trace_experiment(budget):
    # 36 $/h = 0.01 $/s; per second with a 60 s minimum, so a run costs at least 0.60 and its worst case (the
    # 60 s deadline) 0.60 on k-1, 1.20 on k-2: a budget of 6 admits some of the 8 runs (7.20 at worst) and refuses
    # the rest, all the more when runs failed by a kill have spent part of it.
    return {"name": "faults", "workload": {"epochs": 1},
            "configs": [{"provider": "trace", "instance_type": "k-1"}, {"provider": "trace", "instance_type": "k-2"}],
            "repetitions": 4, "billing": ["per_second_60s_min"], "budget": budget, "deadline": 60}


def local_experiment(limit=300, test_limit=200, epochs=1, reps=2):
    return {"name": "faults-local",
            "workload": {"model": "mnist_cnn", "dataset": "fashion-mnist", "epochs": epochs, "limit": limit,
                         "test_limit": test_limit},
            "configs": [{"provider": "local", "instance_type": "local-1c"}], "repetitions": reps,
            "billing": ["per_second_60s_min"]}


def charge(price, up_s):  # per_second_60s_min, as billing/prices/rules.json has it
    import math
    return price * max(60.0, math.ceil(max(0.0, up_s) - 1e-9)) / 3600.0


def part_kill9(root):
    print(f"\n== kill -9 campaign: {KILLS} kills ==", flush=True)
    work = os.path.join(root, "kill9")
    os.makedirs(work)
    state = os.path.join(work, "state")
    open(os.path.join(work, "trace.csv"), "w").write(TRACE_CSV)
    db = os.path.join(work, "t.db")
    d = Daemon(TSUMD, work, db, ["--state-dir", state, "--trace", os.path.join(work, "trace.csv"),
                                 "--trace-speed", "4", "--max-concurrent", "8", "--grace", "3"])
    d.start()
    at_kill = {s: 0 for s in LIVE}
    stuck = orphans_p = orphans_s = lost = changed = idle_kills = 0
    settle = []
    for i in range(KILLS):
        runs, _, _, _ = read_db(db)
        waiting = sum(1 for r in runs.values() if r[0] == "queued" or r[0] in LIVE)
        if waiting < 12:
            d.call("POST", "/v1/experiments", trace_experiment(6.0))
            d.call("POST", "/v1/experiments", local_experiment())
        time.sleep(rng.uniform(0.05, 5.0))
        d.kill(signal.SIGKILL)
        runs, marks, epochs, _ = read_db(db)
        live_at_kill = [rid for rid, r in runs.items() if r[0] in LIVE]
        for rid in live_at_kill:
            at_kill[runs[rid][0]] += 1
        idle_kills += not live_at_kill
        t0 = time.monotonic()
        d.start()
        while True:
            now_runs, now_marks, now_epochs, _ = read_db(db)
            if all(now_runs[rid][0] in TERMINAL for rid in live_at_kill):
                settle.append(time.monotonic() - t0)
                break
            if time.monotonic() - t0 > 120:
                stuck += sum(1 for rid in live_at_kill if now_runs[rid][0] not in TERMINAL)
                print(f"  kill {i + 1}: stuck: " + ", ".join(f"run {rid} {now_runs[rid][0]}" for rid in live_at_kill
                                                             if now_runs[rid][0] not in TERMINAL), flush=True)
                break
            time.sleep(0.05)
        now_runs, now_marks, now_epochs, _ = read_db(db)
        terminal = {rid for rid, r in now_runs.items() if r[0] in TERMINAL}
        procs = {p: rid for p, rid in agent_processes(state).items() if rid in terminal}
        boxes = {n: rid for n, rid in sandboxes(state).items() if rid in terminal}
        if procs or boxes:
            # A terminal run's terminate has returned: anything of it still here is an orphan (one more look after a
            # second, for a process caught between its group's kill and its exit).
            time.sleep(1)
            now_runs, _, _, _ = read_db(db)
            procs = {p: rid for p, rid in agent_processes(state).items() if now_runs[rid][0] in TERMINAL}
            boxes = {n: rid for n, rid in sandboxes(state).items() if now_runs[rid][0] in TERMINAL}
            if procs or boxes:
                print(f"  kill {i + 1}: orphans: processes {procs}, sandboxes {boxes}", flush=True)
        orphans_p += len(procs)
        orphans_s += len(boxes)
        for k, v in marks.items():
            if k not in now_marks:
                lost += 1
                print(f"  kill {i + 1}: mark {k} lost", flush=True)
            elif now_marks[k][0] != v[0]:
                changed += 1
                print(f"  kill {i + 1}: mark {k} changed from {v[0]} to {now_marks[k][0]}", flush=True)
        for k, v in epochs.items():
            if now_epochs.get(k) != v:
                lost += 1
                print(f"  kill {i + 1}: epoch {k} lost or changed", flush=True)
        if (i + 1) % 10 == 0:
            print(f"  {i + 1} kills; runs so far {len(now_runs)}", flush=True)
    # Let what is queued and live finish on the last daemon (or be refused by its budget), with one more of each
    # experiment: after 100 crashes the daemon still runs work to the end.
    final = [d.call("POST", "/v1/experiments", trace_experiment(6.0))[1]["id"],
             d.call("POST", "/v1/experiments", local_experiment())[1]["id"]]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        runs, marks, _, budgets = read_db(db)
        if all(r[0] in TERMINAL for r in runs.values()):
            break
        time.sleep(0.5)
    d.kill(signal.SIGTERM)
    runs, marks, _, budgets = read_db(db)
    left = agent_processes(state)
    by_status = {}
    for r in runs.values():
        by_status[r[0]] = by_status.get(r[0], 0) + 1
    incomplete = [rid for rid, r in runs.items() if r[0] == "done" and
                  sum(1 for p in PHASES for m in ("begin", "end") if (rid, -1, p, m) in marks) != 16]
    spent = {}
    for rid, r in runs.items():
        begin, end = marks.get((rid, -1, "startup", "begin")), marks.get((rid, -1, "poweroff", "end"))
        if begin:
            until = end[0] if end else r[4]
            spent[r[1]] = spent.get(r[1], 0.0) + charge(r[3], until - begin[0])
    # Enforcement allows one billing step (1 s here) per live instance past the cap: 8 at most, at 72 $/h.
    over = {e: round(s, 4) for e, s in spent.items() if budgets.get(e) and s > budgets[e] + 8 * 72.0 / 3600}
    settle.sort()
    print(f"  cpu: {cpu_model()}, {os.cpu_count()} cores")
    print(f"  runs: {len(runs)} ({', '.join(f'{k} {v}' for k, v in sorted(by_status.items()))})")
    print("  live runs at the kills, by status: " + ", ".join(f"{s} {n}" for s, n in at_kill.items()) +
          f"; kills with no run live: {idle_kills}")
    if settle:
        print(f"  restart to every run of the kill terminal: median {settle[len(settle) // 2]:.2f} s, "
              f"max {settle[-1]:.2f} s")
    budgeted = [e for e in budgets if budgets[e]]
    print(f"  experiments with a budget: {len(budgeted)}; highest spend / budget: "
          f"{max((spent.get(e, 0) / budgets[e] for e in budgeted), default=0):.3f}")
    goal(stuck == 0, f"0 runs stuck non-terminal 120 s after a restart (got {stuck})")
    goal(orphans_p == 0 and orphans_s == 0 and not left,
         f"0 orphans (processes of terminal runs {orphans_p}, sandboxes {orphans_s}, processes after SIGTERM {len(left)})")
    goal(lost == 0 and changed == 0, f"0 committed marks or epochs lost ({lost}) or changed ({changed})")
    goal(not incomplete, f"every done run has its 16 marks (missing in {incomplete[:10]})")
    goal(not over, f"no budget overspent (over: {over})")
    goal(all(r[0] in TERMINAL for r in runs.values()), "every run terminal at the end")
    final_done = sum(1 for r in runs.values() if r[1] in final and r[0] == "done")
    goal(final_done >= 4, f"after the last restart, new experiments run to the end ({final_done} runs done)")


def part_diskfull(root):
    print("\n== the database's disk full ==", flush=True)
    work = os.path.join(root, "diskfull")
    fs = os.path.join(work, "dbfs")
    os.makedirs(fs)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tsum-faults", fs], capture_output=True, text=True)
    if r.returncode != 0:
        goal(False, f"mount a tmpfs for the database (needs root): {r.stderr.strip()}")
        return
    d = None
    try:
        open(os.path.join(work, "trace.csv"), "w").write(TRACE_CSV.replace(",6,1,1,1\n", ",20,1,1,1\n"))
        d = Daemon(TSUMD, work, os.path.join(fs, "t.db"), ["--state-dir", os.path.join(work, "state"), "--trace",
                                                    os.path.join(work, "trace.csv"), "--trace-speed", "4",
                                                    "--max-concurrent", "2"])  # two runs wait in the queue
        d.start()
        code, exp = d.call("POST", "/v1/experiments", dict(trace_experiment(None), repetitions=2))
        assert code == 201, exp
        ids = [r["id"] for r in d.call("GET", f"/v1/experiments/{exp['id']}")[1]["runs"]]
        deadline = time.monotonic() + 60
        while d.call("GET", f"/v1/runs/{ids[0]}")[1]["status"] != "learning" and time.monotonic() < deadline:
            time.sleep(0.2)
        before = {i: d.call("GET", f"/v1/runs/{i}")[1] for i in ids}
        filler = os.path.join(fs, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for size in (65536, 4096, 1):
                try:
                    while os.write(fd, b"\0" * size):
                        pass
                except OSError:
                    pass
        finally:
            os.close(fd)
        # The WAL may still have room it reuses: write until the daemon says the disk is full (each experiment
        # adds 8 runs).
        refused = None
        for n in range(1, 400):
            code, body = d.call("POST", "/v1/experiments", trace_experiment(3.0))
            if code != 201:
                refused = (n, code, body)
                break
        print(f"  filled; new experiment refused after {refused[0] if refused else 'never'} tries: "
              f"HTTP {refused[1] if refused else '-'} {json.dumps(refused[2])[:160] if refused else ''}")
        goal(refused is not None and refused[1] == 503, "new work refused with 503 while the disk is full")
        hz = d.call("GET", "/healthz")
        print(f"  /healthz: {hz[0]} {json.dumps(hz[1])[:160]}")
        goal(hz[0] == 503 and hz[1].get("status") == "degraded", "/healthz says degraded (503) with the reason")
        time.sleep(8)  # the live runs' marks keep failing meanwhile
        goal(d.proc.poll() is None, "the daemon keeps running with its disk full")
        after = {i: d.call("GET", f"/v1/runs/{i}")[1] for i in ids}
        kept = all(all(after[i]["phases"].get(p) == v for p, v in before[i]["phases"].items() if v is not None)
                   for i in ids)
        goal(kept, "phases committed before the disk filled are all still there, unchanged")
        os.remove(filler)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30 and d.call("POST", "/v1/experiments", trace_experiment(3.0))[0] != 201:
            time.sleep(0.5)
        back = time.monotonic() - t0
        goal(back < 30, f"new work taken again {back:.1f} s after space returned")
        goal(d.call("GET", "/healthz")[0] == 200, "/healthz ok again")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
                d.call("GET", f"/v1/runs/{i}")[1]["status"] not in TERMINAL for i in ids):
            time.sleep(0.5)
        final = {i: d.call("GET", f"/v1/runs/{i}")[1] for i in ids}
        print("  runs live when the disk filled: " + ", ".join(
            f"{i} {final[i]['status']} {final[i]['reason'] or ''}".strip() for i in ids))
        goal(all(final[i]["status"] == "done" and final[i]["t_sum"] is not None for i in ids),
             "the runs live while the disk was full finish done, with all 8 phases")
    finally:
        if d and d.proc and d.proc.poll() is None:
            d.kill(signal.SIGTERM)
        subprocess.run(["umount", fs])


def part_offline(root):
    print(f"\n== the agent's daemon unreachable for {OFFLINE_S:.0f} s mid-run ==", flush=True)
    work = os.path.join(root, "offline")
    os.makedirs(work)
    d = Daemon(TSUMD, work, os.path.join(work, "t.db"), ["--state-dir", os.path.join(work, "state")])
    d.start()
    try:
        code, exp = d.call("POST", "/v1/experiments", local_experiment(limit=6000, test_limit=1000, epochs=4, reps=1))
        assert code == 201, exp
        rid = d.call("GET", f"/v1/experiments/{exp['id']}")[1]["runs"][0]["id"]
        deadline = time.monotonic() + 120
        while d.call("GET", f"/v1/runs/{rid}")[1]["status"] != "learning":
            if time.monotonic() > deadline:
                goal(False, "the run reached learning within 120 s")
                return
            time.sleep(0.2)
        d.proc.send_signal(signal.SIGSTOP)
        t_stop = time.monotonic()
        time.sleep(OFFLINE_S)
        d.proc.send_signal(signal.SIGCONT)
        print(f"  tsumd stopped {time.monotonic() - t_stop:.0f} s while run {rid} was learning", flush=True)
        deadline = time.monotonic() + max(300, OFFLINE_S)
        while d.call("GET", f"/v1/runs/{rid}")[1]["status"] not in TERMINAL and time.monotonic() < deadline:
            time.sleep(0.5)
        run = d.call("GET", f"/v1/runs/{rid}")[1]
        _, marks, epochs, _ = read_db(d.db)
        have = sum(1 for p in PHASES for m in ("begin", "end") if (rid, -1, p, m) in marks)
        n_epochs = sum(1 for (r, _) in epochs if r == rid)
        ph = run["phases"]
        print(f"  run {rid}: {run['status']} {run['reason'] or ''}; marks {have}/16, epochs {n_epochs}; "
              + ", ".join(f"{p} {ph[p]:.2f}" for p in PHASES if ph.get(p) is not None), flush=True)
        goal(run["status"] == "done", "the run finishes done")
        goal(have == 16 and n_epochs == 4, "every phase mark and every epoch arrived (16 marks, 4 epochs)")
        goal(ph.get("learn") is not None and ph["learn"] < OFFLINE_S,
             "learn is the trainer's own time, not the outage")
    finally:
        if d.proc.poll() is None:
            d.kill(signal.SIGTERM)


def part_openfiles(root):
    print("\n== 1,100 idle connections under ulimit -n 1024 ==", flush=True)
    import resource
    work = os.path.join(root, "openfiles")
    os.makedirs(work)
    d = Daemon(TSUMD, work, os.path.join(work, "t.db"), [],
               preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024)))
    d.start()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds the 1,100
    idle = []
    try:
        for _ in range(1100):
            s = socket.create_connection(("127.0.0.1", d.port))
            idle.append(s)
        times = []
        for _ in range(5):
            t0 = time.monotonic()
            code, _ = d.call("GET", "/healthz", timeout=30)
            times.append(time.monotonic() - t0 if code == 200 else float("inf"))
        print(f"  GET /healthz beside {len(idle)} idle connections: " + ", ".join(f"{t:.3f}" for t in times) + " s",
              flush=True)
        goal(max(times) < 1, "/healthz answers within a second, five times in a row")
        log = open(os.path.join(work, "tsumd.log")).read()
        goal("open files: up to 1024, connections: up to 768" in log, "tsumd says its limit and its cap")
    finally:
        for s in idle:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        d.kill(signal.SIGTERM)


def part_twodaemons(root):
    print("\n== two daemons on one database ==", flush=True)
    work = os.path.join(root, "two")
    os.makedirs(work)
    db = os.path.join(work, "t.db")
    first = Daemon(TSUMD, work, db, [])
    first.start()
    code, exp = first.call("POST", "/v1/experiments", local_experiment(
        limit=20000, test_limit=1000, epochs=3, reps=1))
    assert code == 201, exp
    rid = first.call("GET", f"/v1/experiments/{exp['id']}")[1]["runs"][0]["id"]
    deadline = time.monotonic() + 120
    while first.call("GET", f"/v1/runs/{rid}")[1]["status"] not in ("learning",) and time.monotonic() < deadline:
        time.sleep(0.2)
    second = subprocess.run([TSUMD, "serve", "--db", db, "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                            timeout=60)
    print(f"  second serve: exit {second.returncode}: {second.stderr.strip()}", flush=True)
    goal(second.returncode != 0 and f"pid {first.proc.pid}" in second.stderr, "the second refuses, naming the first")
    status = first.call("GET", f"/v1/runs/{rid}")[1]["status"]
    goal(status == "learning", f"the first daemon's live run is untouched ({status})")
    first.kill(signal.SIGKILL)
    again = Daemon(TSUMD, work, db, [])
    t0 = time.monotonic()
    again.start()
    print(f"  after kill -9 of the first, the next serve answered in {time.monotonic() - t0:.2f} s", flush=True)
    goal(True, "a clean start after kill -9 of the holder")
    again.kill(signal.SIGTERM)


def main():
    if not os.access(TSUMD, os.X_OK):
        raise SystemExit(f"bench/faults.py: {TSUMD} is missing: make build first")
    print(f"bench/faults.py: {cpu_model()}, {os.cpu_count()} cores; parts {' '.join(PARTS)}", flush=True)
    root = tempfile.mkdtemp(prefix="tsum-faults.")
    try:
        for p in PARTS:
            {"kill9": part_kill9, "diskfull": part_diskfull, "offline": part_offline, "openfiles": part_openfiles,
             "twodaemons": part_twodaemons}[p](root)
    finally:
        if os.environ.get("KEEP"):
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n{'all goals met' if not failures else str(len(failures)) + ' goal(s) failed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
