#!/usr/bin/python3
"""Drives the tsum-fake-gce binary with Debian's python3-google-auth, Google's own auth library: it reads
the key file the fake writes, makes and signs its own JWT, exchanges it at the fake's token endpoint and
sends the bearer token on Compute and Billing calls (AuthorizedSession). If that works, and a key the
fake does not trust fails the way Google fails it, the fake's OAuth2 speaks the real protocol.
Exit 0 when every check held."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import exceptions
from google.auth.transport.requests import AuthorizedSession, Request
from google.oauth2 import service_account

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as d:
    key_file = os.path.join(d, "sa.json")
    fake = subprocess.Popen([sys.argv[1], "--account-out", key_file, "--provisioning-s", "0.2", "--staging-s", "0.2",
                             "--stopping-s", "0.2", "--page-size", "3"], stdout=subprocess.PIPE, text=True)
    try:
        base = re.search(r"listening on (\S+)", fake.stdout.readline()).group(1)
        compute = base + "/compute/v1/projects/tsum-fake"
        creds = service_account.Credentials.from_service_account_file(key_file, scopes=[SCOPE])
        creds.refresh(Request())
        check(creds.token and creds.token.startswith("ya29."), "google-auth got an access token")
        check(creds.expiry is not None, "with an expiry")
        session = AuthorizedSession(creds)

        names, token = [], None
        while True:
            r = session.get(compute + "/zones/us-central1-a/machineTypes",
                            params={"maxResults": 500, **({"pageToken": token} if token else {})})
            check(r.status_code == 200, "machineTypes.list: %d" % r.status_code)
            names += [m["name"] for m in r.json()["items"]]
            token = r.json().get("nextPageToken")
            if not token:
                break
        check(len(names) == 10 and "a2-highgpu-1g" in names, "every machine type over the pages: %r" % names)

        body = {"name": "tsum-check", "machineType": "zones/us-central1-a/machineTypes/e2-standard-2",
                "labels": {"tsum": "check"}, "metadata": {"items": [{"key": "user-data", "value": "#cloud-config\n"}]},
                "disks": [{"boot": True, "autoDelete": True,
                           "initializeParams": {"sourceImage": "projects/debian-cloud/global/images/family/debian-12"}}],
                "networkInterfaces": [{"network": "global/networks/default", "accessConfigs": [{"type": "ONE_TO_ONE_NAT"}]}],
                "scheduling": {"maxRunDuration": {"seconds": "3600"}, "instanceTerminationAction": "DELETE"}}
        rid = str(uuid.uuid4())
        op = session.post(compute + "/zones/us-central1-a/instances", params={"requestId": rid}, json=body).json()
        again = session.post(compute + "/zones/us-central1-a/instances", params={"requestId": rid}, json=body).json()
        check(op["name"] == again["name"], "the same requestId gives the same operation")
        for _ in range(50):
            op = session.get(compute + "/zones/us-central1-a/operations/" + op["name"]).json()
            if op["status"] == "DONE":
                break
            time.sleep(0.05)
        check(op["status"] == "DONE" and "error" not in op, "the insert operation finished: %r" % op)
        time.sleep(0.5)
        inst = session.get(compute + "/zones/us-central1-a/instances/tsum-check").json()
        check(inst["status"] == "RUNNING", "RUNNING after PROVISIONING and STAGING: %s" % inst["status"])
        check(inst["networkInterfaces"][0]["accessConfigs"][0].get("natIP"), "a RUNNING instance has a natIP")

        listed = session.get(compute + "/aggregated/instances", params={"filter": 'labels.tsum = "check"'}).json()
        found = [i["name"] for scope in listed["items"].values() for i in scope.get("instances", [])]
        check(found == ["tsum-check"], "the label filter finds it: %r" % found)

        skus, token = 0, None
        while True:
            r = session.get(base + "/v1/services/6F81-5844-456A/skus", params={"pageToken": token} if token else {})
            skus += len(r.json()["skus"])
            token = r.json()["nextPageToken"]
            if not token:
                break
        check(skus == 21, "every SKU over the pages: %d" % skus)

        check(session.delete(compute + "/zones/us-central1-a/instances/tsum-check").status_code == 200, "delete")
        time.sleep(0.4)
        check(session.get(compute + "/zones/us-central1-a/instances/tsum-check").status_code == 404, "gone after STOPPING")

        impostor = json.load(open(key_file))
        impostor["private_key"] = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
        bad = service_account.Credentials.from_service_account_info(impostor, scopes=[SCOPE])
        try:
            bad.refresh(Request())
            check(False, "a key the fake does not trust got a token")
        except exceptions.RefreshError as e:
            check("invalid_grant" in str(e), "an untrusted key is invalid_grant: %s" % str(e)[:80])
    finally:
        fake.terminate()
        fake.wait(timeout=10)

print("fake_google_auth_check: %d failures" % len(failures))
sys.exit(1 if failures else 0)
