#!/usr/bin/env python3
"""Every command docs/cli.md shows, run as written (issue 52), and the README's worked example (issue 63): their code
blocks are sessions, in order.

usage: run_cli_doc.py SOURCE_DIR BUILD_BIN_DIR

A block's `$ cat NAME` writes NAME (the lines that follow, up to the next `$` or `[exit N]`) into the directory
every command runs in, which also holds `examples/` (the repository's). A block with `$ tsumd serve ...` is a session of its own:
that daemon is started with its flags (on a free port; `TOKEN=$(...)` and `export TSUM_URL=...` are what the
harness does). The other blocks share one daemon of the local provider; a block whose files name the trace provider
gets one that replays a small trace. Every other `$ ...` line runs in sh with `tsumd` on PATH, and must end with
the `[exit N]` the doc shows after it (0 when it shows none), its first output line starting with the doc's
first word (numbers, hashes and times aside); a plan's first line (`objective cost, from 2 done runs`) must be as
the doc shows it, number of runs and all. A `$ cat` of a file the repository has (`examples/...`) is not written:
the doc must show that file as it is (its comment lines aside). The README's blocks run against a daemon of their
own, after docs/cli.md's. Prints each command and its verdict; exit status 1 if any differs.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT, BIN = sys.argv[1], sys.argv[2]
TSUMD = os.path.join(BIN, "tsumd")
TRACE_CSV = ("config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,"
             "save,poweroff\n"
             "t-2c,trace,t-2c,2,0,0.10,10,20,10,5,800,5,5,10\n"
             "t-4c,trace,t-4c,4,0,0.12,10,20,10,5,400,5,5,10\n")
problems = []


def blocks(text):
    """The indented code blocks that hold a `$ ` line: each a list of its lines, indentation removed."""
    out, cur = [], []
    for line in text.split("\n") + [""]:
        if line.startswith("    "):
            cur.append(line[4:])
        elif line.strip() == "" and cur:
            cur.append("")
        else:
            while cur and cur[-1] == "":
                cur.pop()
            if any(l.startswith("$ ") for l in cur):
                out.append(cur)
            cur = []
    return out


def steps(block):
    """(command, the doc's output lines, the doc's exit code) for each `$ ` line."""
    out, i = [], 0
    while i < len(block):
        if not block[i].startswith("$ "):
            i += 1
            continue
        cmd, shown, code = block[i][2:], [], 0
        i += 1
        while i < len(block) and not block[i].startswith("$ "):
            m = re.fullmatch(r"\[exit (\d+)\]", block[i])
            if m:
                code = int(m.group(1))
            else:
                shown.append(block[i])
            i += 1
        out.append((cmd, shown, code))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, work, flags):
        os.makedirs(work)
        self.work, self.port = work, free_port()
        db = os.path.join(work, "tsum.db")
        self.token = subprocess.check_output([TSUMD, "token", "create", "--db", db], text=True).strip()
        self.log = open(os.path.join(work, "tsumd.log"), "a")
        self.proc = subprocess.Popen([TSUMD, "serve", "--db", db, "--listen", f"127.0.0.1:{self.port}"] + flags,
                                     stdout=self.log, stderr=self.log, cwd=work)
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("tsumd did not come up; see " + self.log.name)

    def env(self):
        return dict(os.environ, PATH=BIN + ":" + os.environ["PATH"], TSUM_URL=f"http://127.0.0.1:{self.port}",
                    TSUM_TOKEN=self.token, HOME=self.work)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def shape(line):
    """A line's first word with what varies (digits, hashes) left out."""
    word = (line.split() or [""])[0]
    return re.sub(r"[0-9a-f]{8,}|\d+", "", word)


def uncommented(text):
    return [l for l in text.rstrip("\n").split("\n") if not l.lstrip().startswith("#")]


def run_block(block, daemon, work):
    for cmd, shown, code in steps(block):
        m = re.fullmatch(r"cat (\S+)", cmd)
        if m:
            path = os.path.join(work, m.group(1))
            if os.path.exists(path):  # the repository's own file: shown as it is
                same = uncommented(open(path, encoding="utf-8").read()) == uncommented("\n".join(shown))
                print(f"{'ok  ' if same else 'FAIL'} $ {cmd} (the repository's file as the doc shows it)", flush=True)
                if not same:
                    problems.append(cmd)
                continue
            with open(path, "w") as f:
                f.write("\n".join(shown) + "\n")
            continue
        if cmd.startswith(("TOKEN=", "export ", "tsumd serve ")):
            continue  # the harness's part
        r = subprocess.run(["sh", "-c", cmd], cwd=work, env=daemon.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=900)
        got = r.stdout.split("\n")
        ok = r.returncode == code and (not shown or shape(got[0]) == shape(shown[0]))
        if shown and re.fullmatch(r"objective \S+, from \d+ done runs", shown[0]):
            ok = ok and got[0] == shown[0]  # the plan from as many runs as the doc says
        print(f"{'ok  ' if ok else 'FAIL'} [exit {r.returncode}] $ {cmd}", flush=True)
        if not ok:
            problems.append(cmd)
            print(f"     expected [exit {code}], first line starting {shown[0].split()[0] if shown and shown[0].split() else '-'!r}")
            print("     got: " + "\n          ".join(r.stdout.strip().split("\n")[:8]))


def main():
    text = open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8").read()
    root = tempfile.mkdtemp(prefix="tsum-cli-doc-")
    work = os.path.join(root, "work")  # where every command runs, and the spec files are
    os.makedirs(work)
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
    shared = None
    try:
        for n, block in enumerate(blocks(text)):
            serve = next((c for c, _, _ in steps(block) if c.startswith("tsumd serve ")), None)
            files = " ".join(" ".join(s) for c, s, _ in steps(block) if c.startswith("cat "))
            if serve:
                words = serve.rstrip(" &").split()[2:]
                flags = []
                while words:  # its own --db and --listen are the harness's
                    w = words.pop(0)
                    if w in ("--db", "--listen"):
                        words.pop(0)
                    else:
                        flags.append(w)
                d = Daemon(os.path.join(root, f"daemon{n}"), flags)
                run_block(block, d, work)
                d.stop()
            elif "provider: trace" in files or '"trace"' in files:
                trace = os.path.join(root, f"trace{n}.csv")
                with open(trace, "w") as f:
                    f.write(TRACE_CSV)
                d = Daemon(os.path.join(root, f"daemon{n}"), ["--trace", trace, "--trace-speed", "200"])
                run_block(block, d, work)
                d.stop()
            else:
                if shared is None:
                    shared = Daemon(os.path.join(root, "shared"), [])
                run_block(block, shared, work)
        # The README's worked example, on a daemon of its own (its experiment is number 1, as written).
        readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
        d = Daemon(os.path.join(root, "readme"), [])
        try:
            for block in blocks(readme):
                run_block(block, d, work)
        finally:
            d.stop()
    finally:
        if shared:
            shared.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"run_cli_doc: {len(problems)} command(s) not as written")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
