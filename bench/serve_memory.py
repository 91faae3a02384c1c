#!/usr/bin/env python3
"""What a large request costs `tsum-train serve` in memory (issue 53): the server's resident set before a request,
its peak while the request is read, parsed and answered, and what it holds once answered, against the body's size.

    python3 bench/serve_memory.py [path/to/tsum-train]     (default build/bin/tsum-train)

The server runs the `delay` model (no model memory, so what grows is the request's) with 3 x 512 x 512 images and
--max-batch 8. Each request is 6 images: once as JSON (about 50 MB of numbers, the size the issue measured) and
once as binary tensor data (19 MB), each sent twice. The peak is the kernel's (VmHWM, reset before each request
through /proc/PID/clear_refs). Goals: the peak over the resting size at most about 2x the body, and what the
server holds once answered back within 10% of the body of where it was. Prints one row per request and the
ratios; exit status 0 whether or not the goals are met, 1 when a run fails.
"""
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20


def status_kib(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for {pid}")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/bin/tsum-train"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"serve_memory: {binary}, {os.cpu_count()} cores, {cpu}, {time.strftime('%Y-%m-%d', time.gmtime())}")
    err = tempfile.TemporaryFile()
    server = subprocess.Popen([binary, "serve", "--model", "delay", "--service-ms", "1", "--input-shape", "3,512,512",
                               "--max-batch", "8", "--max-body-mb", "128", "--host", "127.0.0.1", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        ready = None
        for line in server.stdout:
            if line.startswith("{") and json.loads(line).get("event") == "ready":
                ready = json.loads(line)
                break
        if ready is None:
            err.seek(0)
            sys.exit("serve_memory: the server did not start: " + err.read().decode())
        port = ready["port"]
        images, shape = 6, [6, 3, 512, 512]
        count = images * 3 * 512 * 512
        rng = random.Random(1)
        values = [round(rng.uniform(-2, 2), 6) for _ in range(count)]
        json_body = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": shape, "data": values}],
                                "outputs": [{"name": "class"}]}).encode()
        import struct
        header = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": shape,
                                         "parameters": {"binary_data_size": count * 4}}],
                             "outputs": [{"name": "class"}]}).encode()
        binary_body = header + struct.pack(f"<{count}f", *values)
        del values
        requests = [("json", json_body, {"Content-Type": "application/json"})] * 2 + \
                   [("binary", binary_body, {"Content-Type": "application/octet-stream",
                                             "Inference-Header-Content-Length": str(len(header))})] * 2
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        conn.request("GET", "/v2/health/ready")
        conn.getresponse().read()
        print()
        print("| request | body MiB | rest before MiB | peak MiB | held after MiB | (peak - before) / body |"
              " (after - before) / body |")
        print("|---|---|---|---|---|---|---|")
        worst_peak, worst_after = 0.0, 0.0
        for kind, body, headers in requests:
            time.sleep(0.5)  # the previous answer's memory is let go after it is written
            before = status_kib(server.pid, "VmRSS")
            with open(f"/proc/{server.pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the resident size now
            conn.request("POST", "/v2/models/delay/infer", body=body, headers=headers)
            answer = conn.getresponse()
            text = answer.read()
            if answer.status != 200:
                sys.exit(f"serve_memory: {kind} request answered {answer.status}: {text[:300]!r}")
            time.sleep(0.5)
            peak = status_kib(server.pid, "VmHWM")
            after = status_kib(server.pid, "VmRSS")
            p, a = (peak - before) / len(body), (after - before) / len(body)
            worst_peak, worst_after = max(worst_peak, p), max(worst_after, a)
            print(f"| {kind} | {len(body) / MIB:.1f} | {before / MIB:.0f} | {peak / MIB:.0f} | {after / MIB:.0f} |"
                  f" {p:.2f} | {a:+.2f} |")
        print()
        print(f"peak over rest / body: worst {worst_peak:.2f} (goal about 2): "
              f"{'met' if worst_peak <= 2.2 else 'NOT met'}")
        print(f"held after / body: worst {worst_after:+.2f} (goal within 0.10): "
              f"{'met' if worst_after <= 0.10 else 'NOT met'}")
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
