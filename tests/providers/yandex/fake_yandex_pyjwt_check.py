#!/usr/bin/python3
"""Drives the tsum-fake-yandex binary the way Yandex's own documentation does it in Python (Debian has no
Yandex Cloud SDK): a PS256 JWT signed with PyJWT (python3-jwt) from the authorized key file the fake wrote,
exchanged at the IAM endpoint, then plain REST calls with the IAM token: create, operation polling, get,
list with paging, delete, errors. A JWT with a flipped signature, RS256, an expired one and a wrong kid are
refused. Exit 0 when every check held."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import jwt

FAKE = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def wait(url, op, token):
    """Polls an operation until done, at most 50 times."""
    for _ in range(50):
        if op.get("done"):
            return op
        status, op = call("GET", url + "/operations/" + op["id"], token=token)
        time.sleep(0.01)
    check(False, "operation %s not done after 50 polls" % op.get("id"))
    return op


def call(method, url, body=None, token=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


with tempfile.TemporaryDirectory() as d:
    key_file = os.path.join(d, "key.json")
    fake = subprocess.Popen([FAKE, "--key-out", key_file, "--provisioning-s", "0.2", "--starting-s", "0.2",
                             "--page-size", "2", "--faults", "instances.get:429"], stdout=subprocess.PIPE, text=True)
    try:
        url, folder = re.search(r"listening on (\S+) \(folder (\S+),", fake.stdout.readline()).groups()
        key = json.load(open(key_file))
        iam = url + "/iam/v1/tokens"

        def token_for(alg="PS256", kid=key["id"], iat=None, tamper=False):
            now = int(time.time()) if iat is None else iat
            signed = jwt.encode({"iss": key["service_account_id"], "aud": iam, "iat": now, "exp": now + 3600},
                                key["private_key"].split("\n", 1)[1], algorithm=alg, headers={"kid": kid})
            if tamper:
                signed = signed[:-5] + ("A" if signed[-5] != "A" else "B") + signed[-4:]
            return call("POST", iam, {"jwt": signed})

        status, answer = token_for()
        check(status == 200 and answer["iamToken"].startswith("t1."), "an IAM token for PyJWT's PS256 JWT: %r" % answer)
        iam_token = answer.get("iamToken")
        for what, kwargs in (("a tampered signature", {"tamper": True}), ("RS256", {"alg": "RS256"}),
                             ("an expired JWT", {"iat": int(time.time()) - 7200}), ("another kid", {"kid": "nope"})):
            status, answer = token_for(**kwargs)
            check(status == 401 and answer.get("code") == 16, "%s is UNAUTHENTICATED: %s %r" % (what, status, answer))

        compute = url + "/compute/v1/instances"
        spec = {"folderId": folder, "zoneId": "ru-central1-a", "platformId": "standard-v3",
                "resourcesSpec": {"memory": str(2 << 30), "cores": "2"}, "metadata": {"user-data": "#cloud-config\n"},
                "bootDiskSpec": {"autoDelete": True, "diskSpec": {"size": str(20 << 30), "imageId": "fd8image"}},
                "networkInterfaceSpecs": [{"subnetId": "e9bsubnet", "primaryV4AddressSpec": {"oneToOneNatSpec": {"ipVersion": "IPV4"}}}]}
        ids = []
        for i in range(3):
            status, op = call("POST", compute, dict(spec, name="check-%d" % i, labels={"tsum": "check"}), iam_token)
            check(status == 200 and op["done"] is False, "create answers a running operation: %r" % op)
            op = wait(url, op, iam_token)
            ids.append(op["metadata"]["instanceId"])
        status, err = call("POST", compute, dict(spec, name="check-0"), iam_token)
        check(status == 409 and err["code"] == 6, "a taken name is ALREADY_EXISTS: %r" % err)
        time.sleep(0.5)
        status, inst = call("GET", compute + "/" + ids[0], token=iam_token)  # a 429 first: urllib does not retry
        check(status == 429, "the injected 429: %s" % status)
        status, inst = call("GET", compute + "/" + ids[0], token=iam_token)
        check(inst.get("status") == "RUNNING", "running: %r" % inst.get("status"))
        nat = inst["networkInterfaces"][0]["primaryV4Address"]["oneToOneNat"]["address"]
        check(nat.count(".") == 3, "a one-to-one NAT address: %s" % nat)
        names, token = [], ""
        while True:
            status, page = call("GET", compute + "?folderId=%s&pageSize=1000%s" % (folder, "&pageToken=" + token if token else ""),
                                token=iam_token)
            names += [x["name"] for x in page.get("instances", [])]
            token = page.get("nextPageToken", "")
            if not token:
                break
        check(names == ["check-0", "check-1", "check-2"], "every page: %r" % names)
        status, op = call("DELETE", compute + "/" + ids[1], token=iam_token)
        status, inst = call("GET", compute + "/" + ids[1], token=iam_token)
        check(inst.get("status") == "DELETING", "deleting: %r" % inst.get("status"))
        wait(url, op, iam_token)
        status, err = call("GET", compute + "/" + ids[1], token=iam_token)
        check(status == 404 and err["code"] == 5, "gone after the delete operation: %r" % err)
        status, err = call("GET", compute + "?folderId=" + folder, token="t1.forged")
        check(status == 401, "a forged IAM token is refused: %s" % status)
    finally:
        fake.terminate()
        fake.wait(10)

print("fake_yandex_pyjwt_check: %d failures" % len(failures))
sys.exit(1 if failures else 0)
