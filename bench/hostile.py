#!/usr/bin/env python3
"""Hostile clients against a running tsumd, while /healthz is timed every 50 ms on fresh connections.

  python3 bench/hostile.py [BUILD_DIR]       (starts its own `tsumd serve` from BUILD_DIR/bin, default build/)

Environment: SLOW (10000) slow connections, HOLD_S (40) how long they are held.
Phases, each printing what the daemon did and how /healthz fared meanwhile (p50, p99, max latency; failures):
  1. a request header over the limit (64 KiB of headers): 431 and the connection closed;
  2. a body that never ends: Content-Length past the limit (413 at once) and a chunked body that trickles a byte
     every 0.2 s forever (cut off by the read deadline);
  3. SLOW slowloris connections, each sending one header byte every 5 s: all must be closed by the daemon's read
     deadline (30 s after accept), none answered.
Goal (issue 17): /healthz answers within 100 ms throughout (p99 and max printed), every hostile connection bounded
by a deadline and a size. Python's standard library only (any python3).
"""
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from tsumd_proc import cpu_model

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build"))
SLOW = int(os.environ.get("SLOW", "10000"))
HOLD_S = float(os.environ.get("HOLD_S", "40"))


class Prober(threading.Thread):
    """GET /healthz on a fresh connection every 50 ms; latencies in seconds, failures counted."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.lat, self.fail = port, [], 0
        self.running = True

    def run(self):
        while self.running:
            t = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    data = b""
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                if not data.startswith(b"HTTP/1.1 200"):
                    self.fail += 1
                else:
                    self.lat.append(time.monotonic() - t)
            except OSError:
                self.fail += 1
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))

    def take(self):
        lat, fail = sorted(self.lat), self.fail
        self.lat, self.fail = [], 0
        if not lat:
            return "healthz: no probe finished in this phase (%d failed)" % fail
        pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
        return "healthz: n=%d p50 %.1f ms p99 %.1f ms max %.1f ms, %d failed" % (
            len(lat), pick(0.5), pick(0.99), lat[-1] * 1000, fail)


def read_all(s, limit_s):
    s.settimeout(limit_s)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def big_header(port):
    s = socket.create_connection(("127.0.0.1", port))
    t = time.monotonic()
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 65536 + b"\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = read_all(s, 10)
    s.close()
    status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return "64 KiB header: %r after %.3f s, closed" % (status, time.monotonic() - t)


def endless_bodies(port):
    out = []
    s = socket.create_connection(("127.0.0.1", port))
    t = time.monotonic()
    s.sendall(b"POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n")
    data = read_all(s, 10)
    s.close()
    out.append("Content-Length 1e12: %r after %.3f s" % (data.split(b"\r\n", 1)[0].decode(errors="replace"),
                                                       time.monotonic() - t))
    s = socket.create_connection(("127.0.0.1", port))
    t = time.monotonic()
    s.sendall(b"POST /v1/experiments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    s.setblocking(False)
    closed_after, sent = None, 0
    while time.monotonic() - t < 60:
        try:
            s.send(b"1\r\na\r\n")
            sent += 1
            if s.recv(4096) == b"":
                closed_after = time.monotonic() - t
                break
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            closed_after = time.monotonic() - t
            break
        time.sleep(0.2)
    s.close()
    out.append("chunked body, a byte every 0.2 s: %s after %d chunks" % (
        "closed by the daemon %.1f s after it began" % closed_after if closed_after else "STILL OPEN after 60 s",
        sent))
    return out


def slowloris(port, n, hold_s):
    sel = selectors.DefaultSelector()
    socks, refused = [], 0
    t0 = time.monotonic()
    for i in range(n):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
        except OSError:
            refused += 1
    time.sleep(0.5)
    opened = time.monotonic() - t0
    for s in socks:
        try:
            s.send(b"GET /healthz HTTP/1.1\r\nX-")
            sel.register(s, selectors.EVENT_READ)
        except OSError:
            refused += 1
    closed, answered, last_drip = 0, 0, time.monotonic()
    close_times = []
    while time.monotonic() - t0 < hold_s and closed + refused < len(socks):
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                answered += 1
            sel.unregister(s)
            closed += 1
            close_times.append(time.monotonic() - t0)
        if time.monotonic() - last_drip >= 5:
            last_drip = time.monotonic()
            for key in list(sel.get_map().values()):
                try:
                    key.fileobj.send(b"a")
                except OSError:
                    pass
    still_open = len(sel.get_map())
    for s in socks:
        s.close()
    close_times.sort()
    when = ("first closed at %.1f s, last at %.1f s" % (close_times[0], close_times[-1])) if close_times else "none closed"
    return ("%d slow connections opened in %.1f s (%d refused): %d closed by the daemon (%s), %d answered, "
            "%d still open after %.0f s" % (len(socks), opened, refused, closed, when, answered, still_open, hold_s))


def main():
    tsumd = os.path.join(BUILD, "bin", "tsumd")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, SLOW + 1024)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    work = tempfile.mkdtemp(prefix="tsum-hostile-")
    port = 20000 + os.getpid() % 20000
    db = os.path.join(work, "t.db")
    subprocess.run([tsumd, "token", "create", "--db", db], check=True, stdout=subprocess.DEVNULL)
    log = open(os.path.join(work, "tsumd.log"), "w")
    daemon = subprocess.Popen([tsumd, "serve", "--db", db, "--listen", "127.0.0.1:%d" % port], stderr=log)
    try:
        for _ in range(120):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.25)
        print("hostile clients against tsumd (%s, %d cores, fd limit %d); %s" % (
            cpu_model(), os.cpu_count(), resource.getrlimit(resource.RLIMIT_NOFILE)[0], time.strftime("%Y-%m-%d")))
        probe = Prober(port)
        probe.start()
        time.sleep(1)
        print("baseline            " + probe.take())
        print("1. " + big_header(port))
        print("                    " + probe.take())
        for line in endless_bodies(port):
            print("2. " + line)
        print("                    " + probe.take())
        print("3. " + slowloris(port, SLOW, HOLD_S))
        print("                    " + probe.take())
        probe.running = False
        alive = daemon.poll() is None
        print("tsumd still running: %s" % ("yes" if alive else "NO (exit %s)" % daemon.returncode))
        return 0 if alive else 1
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.kill()


if __name__ == "__main__":
    sys.exit(main())
