"""A `tsumd serve` child process for the Python benches (standard library only)."""
import json
import os
import platform
import socket
import subprocess
import time
import urllib.error
import urllib.request


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """tsumd serve on one database, its log appended to WORK/tsumd.log; start() again after kill() reuses the
    database and the port (a daemon keeps its URL: the machines of the runs it takes back reach it there)."""

    def __init__(self, tsumd, work, db, extra, preexec=None):
        self.tsumd, self.work, self.db, self.extra, self.proc = tsumd, work, db, extra, None
        self.preexec = preexec  # run in the child before exec, e.g. to set its open-files limit
        self.token = subprocess.check_output([tsumd, "token", "create", "--db", db], text=True).strip()

    def start(self, wait_s=30):
        self.port = getattr(self, "port", None) or free_port()
        log = open(os.path.join(self.work, "tsumd.log"), "a")
        self.proc = subprocess.Popen([self.tsumd, "serve", "--db", self.db, "--listen", f"127.0.0.1:{self.port}"] +
                                     self.extra, stdout=log, stderr=log, preexec_fn=self.preexec)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"tsumd exited with {self.proc.returncode}; see {log.name}")
            if self.call("GET", "/healthz", timeout=1)[0] in (200, 503):
                return
            time.sleep(0.05)
        raise SystemExit(f"tsumd did not answer /healthz within {wait_s} s")

    def kill(self, sig, wait_s=60):
        self.proc.send_signal(sig)
        self.proc.wait(wait_s)

    def call(self, method, path, body=None, timeout=10):
        """(HTTP status, decoded JSON body); status 0 and the error's text when nothing answered."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode(errors="replace")
        except (OSError, ValueError) as e:
            return 0, str(e)
