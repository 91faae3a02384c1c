#!/usr/bin/python3
"""Differential test: tsum's SigV4 against botocore.auth.SigV4Auth (Debian's python3-botocore).

Signs N seeded random requests (odd paths, repeated/empty/unicode query parameters, duplicate and messy
headers, binary bodies, session tokens, unsigned payloads) with botocore, has tsum-sigv4 sign the same
requests, and compares canonical request, signature and Authorization header.
Usage: sigv4_botocore_diff.py <path to tsum-sigv4> [count] [seed]
"""
import base64
import json
import random
import subprocess
import sys

try:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as e:
    sys.exit(f"FAIL: botocore is not importable ({e}); install python3-botocore (scripts/install-deps.sh)")

PATH_CHARS = "abcXYZ019-_.~ %+=;,@!$&'()*:\\" + "é" + "ሴ" + "😀"
QUERY_CHARS = "abcXYZ019-_.~ %+=&/?#;,@!$'()*:" + "é" + "ሴ" + "😀"
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
VALUE_CHARS = "".join(chr(c) for c in range(0x21, 0x7F))


def rand_str(rng, chars, lo, hi):
    return "".join(rng.choice(chars) for _ in range(rng.randint(lo, hi)))


def rand_path(rng):
    segs = []
    for _ in range(rng.randint(0, 5)):
        segs.append(rng.choice(["", ".", "..", rand_str(rng, PATH_CHARS, 1, 8), rand_str(rng, PATH_CHARS, 1, 3)]))
    path = "/" + "/".join(segs)
    if rng.random() < 0.3:
        path += "/"
    return path


def rand_value(rng):
    parts = [rand_str(rng, VALUE_CHARS, 0, 6) for _ in range(rng.randint(1, 4))]
    seps = [rng.choice([" ", "  ", "\t", " \t  "]) for _ in parts]
    value = "".join(p + s for p, s in zip(parts, seps))
    if rng.random() < 0.5:
        value = rng.choice(["", " ", "  "]) + value
    return value


def rand_request(rng):
    host = rng.choice(["example.amazonaws.com", "ec2.us-east-1.amazonaws.com", "127.0.0.1:8443"])
    query = []
    for _ in range(rng.randint(0, 6)):
        if query and rng.random() < 0.25:
            key = rng.choice(query)[0]  # a repeated name
        else:
            key = rand_str(rng, QUERY_CHARS, 0 if rng.random() < 0.1 else 1, 8)
        value = "" if rng.random() < 0.25 else rand_str(rng, QUERY_CHARS, 1, 10)
        query.append([key, value])
    headers = [[rng.choice(["Host", "host", "HOST"]), host]]
    for _ in range(rng.randint(0, 6)):
        roll = rng.random()
        if headers and roll < 0.2:
            name = rng.choice(headers)[0]
            name = rng.choice([name.lower(), name.upper(), name])  # the same header again, in another case
        elif roll < 0.3:
            name = rng.choice(["User-Agent", "Expect", "X-Amzn-Trace-Id", "X-Amz-Date", "Content-Type"])
        else:
            name = "X-" + rand_str(rng, NAME_CHARS, 1, 10)
        headers.append([name, rand_value(rng)])
    token = "" if rng.random() < 0.5 else rand_str(rng, VALUE_CHARS.replace(" ", ""), 20, 80)
    return {
        "method": rng.choice(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "get"]),
        "path": rand_path(rng),
        "query": query,
        "headers": headers,
        "body_b64": base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.choice([0, 0, 1, 13, 200])))).decode(),
        "access_key": "AKID" + rand_str(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 12, 16),
        "secret_key": rand_str(rng, NAME_CHARS + "/+", 40, 40),
        "token": token,
        "region": rng.choice(["us-east-1", "eu-central-1", "ap-south-1", "us-gov-west-1"]),
        "service": rng.choice(["ec2", "pricing", "sts", "service"]),
        "amz_date": "%04d%02d%02dT%02d%02d%02dZ" % (rng.randint(2000, 2037), rng.randint(1, 12), rng.randint(1, 28),
                                                    rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
        "unsigned_payload": rng.random() < 0.15,
        "url_host": host,
    }


def botocore_sign(r):
    auth = SigV4Auth(Credentials(r["access_key"], r["secret_key"], r["token"] or None), r["service"], r["region"])
    req = AWSRequest(method=r["method"], url="https://" + r["url_host"] + r["path"],
                     data=base64.b64decode(r["body_b64"]), params=[tuple(p) for p in r["query"]])
    for name, value in r["headers"]:
        req.headers[name] = value  # HTTPHeaders appends: repeated names stay repeated
    req.context["timestamp"] = r["amz_date"]
    if r["unsigned_payload"]:
        req.context["payload_signing_enabled"] = False
    auth._modify_request_before_signing(req)
    canonical = auth.canonical_request(req)
    signature = auth.signature(auth.string_to_sign(req, canonical), req)
    auth._inject_signature_to_request(req, signature)
    return {"canonical_request": canonical, "signature": signature, "authorization": req.headers["Authorization"]}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20240601
    rng = random.Random(seed)
    requests = [rand_request(rng) for _ in range(count)]
    expected = [botocore_sign(r) for r in requests]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run([sys.argv[1]], input=stdin, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        sys.exit(f"FAIL: tsum-sigv4 exited with {proc.returncode}: {proc.stderr}")
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    if len(got) != count:
        sys.exit(f"FAIL: tsum-sigv4 answered {len(got)} of {count} requests")
    failures = 0
    for i, (r, want, have) in enumerate(zip(requests, expected, got)):
        for key in ("canonical_request", "signature", "authorization"):
            if want[key] != have.get(key):
                failures += 1
                if failures <= 3:
                    print(f"MISMATCH request {i} ({key}):\n  request: {json.dumps(r)}\n"
                          f"  botocore: {want[key]!r}\n  tsum:     {have.get(key, have.get('error'))!r}")
                break
    print(f"botocore {__import__('botocore').__version__} differential, seed {seed}: "
          f"{count - failures}/{count} requests signed identically")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
