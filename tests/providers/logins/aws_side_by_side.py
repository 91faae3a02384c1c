#!/usr/bin/python3
"""The goal of a user who has only done `aws configure --profile work`: with AWS_PROFILE=work, an empty aws
section and the default limits, an experiment of 2 configurations x 2 repetitions has its 4 machines up at
once on the fake EC2 (its instances seen by botocore), and cancelling it leaves none running.
Usage: aws_side_by_side.py <tsumd> <tsum-fake-cloud>
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import botocore.session

from login_testing import Checks, write

TSUMD, FAKE = sys.argv[1], sys.argv[2]
KEY, SECRET = "AKIDTSUMFAKE", "tsum-fake-secret-key"  # what the fake accepts


def until(what, predicate, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    sys.exit(f"FAIL: {what} within {timeout_s} s")


def main():
    c = Checks(TSUMD)
    url = c.start_fake(FAKE, "--listen", "127.0.0.1:0", "--region", "eu-central-1")
    daemon = None
    with tempfile.TemporaryDirectory(prefix="tsum-aws-runs-") as root:
        try:
            home = os.path.join(root, "home")
            write(os.path.join(home, ".aws", "credentials"), f"[work]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n")
            write(os.path.join(home, ".aws", "config"), "[profile work]\nregion = eu-central-1\n")
            config = os.path.join(root, "tsumd.json")
            write(config, json.dumps({"providers": {"aws": {}}}))
            env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AWS_PROFILE": "work",
                   "AWS_ENDPOINT_URL": url, "AWS_EC2_METADATA_DISABLED": "true"}
            db = os.path.join(root, "t.db")
            token = subprocess.run([TSUMD, "token", "create", "--db", db], env=env, capture_output=True, text=True,
                                   check=True).stdout.strip()
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            base = f"http://127.0.0.1:{port}"
            log = open(os.path.join(root, "tsumd.log"), "w+")
            # Loopback is the "public" URL: these machines never boot an agent.
            daemon = subprocess.Popen([TSUMD, "serve", "--db", db, "--listen", f"127.0.0.1:{port}", "--config", config,
                                       "--public-url", base], env=env, stdout=log, stderr=subprocess.STDOUT)

            def api(method, route, body=None):
                req = urllib.request.Request(base + route, method=method, data=json.dumps(body).encode() if body else None,
                                             headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        return json.loads(r.read() or b"{}")
                except urllib.error.HTTPError as e:
                    sys.exit(f"FAIL: {method} {route}: {e.code} {e.read().decode()}")

            def up():
                try:
                    return api("GET", "/healthz")
                except OSError:
                    return None

            until("tsumd to answer", up)
            types = ["t3.micro", "c6i.large"]
            created = api("POST", "/v1/experiments", {"name": "side by side", "repetitions": 2,
                                                      "workload": {"epochs": 1, "limit": 300, "test_limit": 200},
                                                      "configs": [{"provider": "aws", "instance_type": t} for t in types]})
            ec2 = botocore.session.get_session().create_client(
                "ec2", region_name="eu-central-1", endpoint_url=url, aws_access_key_id=KEY, aws_secret_access_key=SECRET)

            def live():
                return [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
                        if i["State"]["Name"] in ("pending", "running")]

            def four_at_once():
                runs = api("GET", f"/v1/runs?experiment={created['id']}")["runs"]
                booting = [r for r in runs if r["status"] in ("provisioning", "booting")]
                return len(booting) == 4 and len(live()) == 4 and runs

            runs = until("4 machines up at once", four_at_once)
            c.check(len(runs) == 4, f"2 configs x 2 repetitions: {types}, {len(runs)} runs")
            c.check(len({i["InstanceType"] for i in live()}) == 2, "the fake has all 4 machines running, of both types")
            log.seek(0)
            text = log.read()
            c.check("runs at once: 64 in all; aws 8 machines" in text and "aws: login profile work" in text,
                    "the daemon logs its limits and the login: " + " | ".join(l for l in text.splitlines() if "aws" in l))
            api("DELETE", f"/v1/experiments/{created['id']}")
            until("every machine terminated", lambda: not live())
            c.check(True, "cancelled: no machine left running")
        finally:
            if daemon:
                daemon.terminate()
                daemon.wait(timeout=90)
            c.finish()


if __name__ == "__main__":
    main()
