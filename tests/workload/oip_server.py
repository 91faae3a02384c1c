"""A second Open Inference Protocol server, not tsum's, for `tsum-train load` to drive (test_serve.cpp): Python's
standard library only, HTTP/1.1 keep-alive, one model "affine" with an input "features" (FP32 [-1, 4]) and a mask
"keep" (INT64 [-1, 4]), and outputs "score" (FP32 [-1, 2]) and "top" (INT64 [-1]). It lists no extension, so a
client must send JSON: a binary request (Inference-Header-Content-Length) is refused with 400, as is any tensor
that does not match the metadata. Prints its port, then serves until killed; GET /stats says what it answered.

    python3 oip_server.py
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INPUTS = {"features": ("FP32", 4), "keep": ("INT64", 4)}
METADATA = {
    "name": "affine",
    "versions": ["1"],
    "platform": "python",
    "inputs": [{"name": n, "datatype": t, "shape": [-1, w]} for n, (t, w) in INPUTS.items()],
    "outputs": [{"name": "score", "datatype": "FP32", "shape": [-1, 2]},
                {"name": "top", "datatype": "INT64", "shape": [-1]}],
}
STATS = {"ok": 0, "refused": 0, "batch_sizes": [], "outputs_asked": []}
LOCK = threading.Lock()


def check(body, headers):
    """The answer to an infer request, or raises ValueError naming what is wrong."""
    if headers.get("Inference-Header-Content-Length") is not None:
        raise ValueError("binary tensors are not spoken here: no binary_tensor_data extension")
    request = json.loads(body)
    inputs = {i["name"]: i for i in request["inputs"]}
    if set(inputs) != set(INPUTS):
        raise ValueError(f"inputs {sorted(inputs)}, the model takes {sorted(INPUTS)}")
    rows = None
    for name, (datatype, width) in INPUTS.items():
        t = inputs[name]
        if t["datatype"] != datatype or len(t["shape"]) != 2 or t["shape"][1] != width:
            raise ValueError(f"{name}: {t['datatype']} {t['shape']}, the model takes {datatype} [-1, {width}]")
        data = t["data"]
        if len(data) != t["shape"][0] * width:
            raise ValueError(f"{name}: {len(data)} elements for shape {t['shape']}")
        if datatype == "INT64" and not all(isinstance(v, int) for v in data):
            raise ValueError(f"{name}: INT64 data holds a non-integer")
        rows = t["shape"][0]
    x = inputs["features"]["data"]
    score = []
    top = []
    for r in range(rows):
        a = sum(x[r * 4:r * 4 + 2])
        b = sum(x[r * 4 + 2:r * 4 + 4])
        score += [a, b]
        top.append(0 if a >= b else 1)
    asked = [o["name"] for o in request.get("outputs", [])]
    outputs = [{"name": "score", "datatype": "FP32", "shape": [rows, 2], "data": score},
               {"name": "top", "datatype": "INT64", "shape": [rows], "data": top}]
    if asked:
        outputs = [o for o in outputs if o["name"] in asked]
    with LOCK:
        STATS["batch_sizes"].append(rows)
        STATS["outputs_asked"] = asked
    return {"model_name": "affine", "outputs": outputs}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.rstrip("/")
        if path == "/v2":
            self.answer(200, {"name": "oip-python", "version": "1", "extensions": []})
        elif path == "/v2/health/live":
            self.answer(200, {"live": True})
        elif path == "/v2/models/affine":
            self.answer(200, METADATA)
        elif path == "/stats":
            with LOCK:
                self.answer(200, STATS)
        else:
            self.answer(404, {"error": f"no route {path}"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.rstrip("/") != "/v2/models/affine/infer":
            self.answer(404, {"error": f"no route {self.path}"})
            return
        try:
            result = check(body, self.headers)
        except (ValueError, KeyError, TypeError) as e:
            with LOCK:
                STATS["refused"] += 1
            self.answer(400, {"error": str(e)})
            return
        with LOCK:
            STATS["ok"] += 1
        self.answer(200, result)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
