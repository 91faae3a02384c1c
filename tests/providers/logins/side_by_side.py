#!/usr/bin/python3
"""The goal of a user who has only logged in with the cloud's own tool (`aws configure --profile work` with
AWS_PROFILE=work; `gcloud auth application-default login`; `az login`; `hcloud context create work`; `yc init`): with an empty section and the default limits, an experiment of
2 configurations x 2 repetitions has its 4 machines up at once on the cloud's fake (its instances seen by the
cloud's own client or API: botocore, Compute Engine's aggregated list, ARM's list of VMs, hcloud-python, Yandex
Compute's list), and cancelling it leaves none running.
With --tight-quota (AWS), the account's quota is 4 vCPUs: the daemon's cap follows it, and only 2 of the 4
machines run at once while the other 2 wait in the queue.
Usage: side_by_side.py aws|gce|azure|hetzner|yandex <tsumd> <the cloud's fake> [--tight-quota]
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from login_testing import AZURE_CLI_CLIENT, Checks, azure_cli_login, write

CLOUD, TSUMD, FAKE = sys.argv[1], sys.argv[2], sys.argv[3]
TIGHT = sys.argv[4:] == ["--tight-quota"]


class Aws:
    fake_args = ["--region", "eu-central-1"]
    types = ["t3.micro", "c6i.large"]
    key, secret = "AKIDTSUMFAKE", "tsum-fake-secret-key"  # what the fake accepts

    def login(self, home, url):
        write(os.path.join(home, ".aws", "credentials"),
              f"[work]\naws_access_key_id = {self.key}\naws_secret_access_key = {self.secret}\n")
        write(os.path.join(home, ".aws", "config"), "[profile work]\nregion = eu-central-1\n")
        import botocore.session
        self.ec2 = botocore.session.get_session().create_client(
            "ec2", region_name="eu-central-1", endpoint_url=url, aws_access_key_id=self.key,
            aws_secret_access_key=self.secret)
        return {"AWS_PROFILE": "work", "AWS_ENDPOINT_URL": url}, "aws: login profile work"

    def live(self):
        return [(i["InstanceType"], i["InstanceId"]) for r in self.ec2.describe_instances()["Reservations"]
                for i in r["Instances"] if i["State"]["Name"] in ("pending", "running")]


class Gce:
    fake_args = ["--provisioning-s", "0.2", "--staging-s", "0.2", "--stopping-s", "0.2"]
    types = ["e2-standard-2", "e2-standard-4"]
    user = {"type": "authorized_user", "client_id": "tsum-fake.apps.googleusercontent.com",
            "client_secret": "tsum-fake-client-secret", "refresh_token": "1//tsum-fake-refresh-token"}

    def login(self, home, url):
        write(os.path.join(home, ".config", "gcloud", "application_default_credentials.json"), json.dumps(self.user))
        write(os.path.join(home, ".config", "gcloud", "configurations", "config_default"), "[core]\nproject = tsum-fake\n")
        self.url = url
        # The fake's endpoints (Google's SDKs have no variable for them): the only fields of the section.
        self.section = {"compute_endpoint": url + "/compute/v1", "billing_endpoint": url + "/v1", "token_endpoint": url + "/token"}
        return {}, "gce: login gcloud's application default login"

    def live(self):
        form = urllib.parse.urlencode({"grant_type": "refresh_token", **{k: v for k, v in self.user.items() if k != "type"}})
        with urllib.request.urlopen(self.url + "/token", data=form.encode(), timeout=30) as r:
            token = json.loads(r.read())["access_token"]
        req = urllib.request.Request(self.url + "/compute/v1/projects/tsum-fake/aggregated/instances",
                                     headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(req, timeout=30) as r:
            items = json.loads(r.read()).get("items", {})
        return [(i["machineType"].rsplit("/", 1)[-1], i["id"]) for zone in items.values() for i in zone.get("instances", [])
                if i["status"] in ("PROVISIONING", "STAGING", "RUNNING")]


class Yandex:
    fake_args = ["--provisioning-s", "0.2", "--starting-s", "0.2", "--operation-s", "0.2"]
    types = ["standard-v3-2c-4g", "standard-v3-16c-32g"]
    oauth = "y0_tsumfakeoauthtoken"  # what the fake's IAM endpoint exchanges
    folder = "b1gfakefolder0000001"

    def login(self, home, url):
        write(os.path.join(home, ".config", "yandex-cloud", "config.yaml"),
              f"current: default\nprofiles:\n  default:\n    token: {self.oauth}\n    folder-id: {self.folder}\n")
        self.url = url
        # The fake's endpoints (yc keeps one endpoint for all services): the only fields of the section.
        self.section = {"iam_endpoint": url + "/iam/v1/tokens", "compute_endpoint": url + "/compute/v1",
                        "operation_endpoint": url + "/operations", "billing_endpoint": url + "/billing/v1",
                        "vpc_endpoint": url + "/vpc/v1"}
        return {}, "yandex: login yc profile default"

    def live(self):
        req = urllib.request.Request(self.url + "/iam/v1/tokens", data=json.dumps({"yandexPassportOauthToken": self.oauth}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            token = json.loads(r.read())["iamToken"]
        req = urllib.request.Request(f"{self.url}/compute/v1/instances?folderId={self.folder}",
                                     headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(req, timeout=30) as r:
            items = json.loads(r.read()).get("instances", [])
        return [(i["resources"]["cores"], i["id"]) for i in items if i["status"] in ("PROVISIONING", "STARTING", "RUNNING")]


class Azure:
    tenant, subscription = "11111111-2222-4333-8444-555555555555", "00000000-0000-4000-8000-000000000001"
    refresh = "tsum-fake-refresh-token"  # what the fake's token endpoint takes for the Azure CLI's client
    fake_args = ["--refresh-token", refresh, "--operation-s", "0.2", "--starting-s", "0.2"]
    types = ["Standard_D2s_v5", "Standard_D4s_v5"]

    def login(self, home, url):
        azure_cli_login(home, self.subscription, self.tenant, "me@example.com", self.refresh)
        self.url = url
        # The fake's endpoints (the CLI's cloud settings hold them for a sovereign cloud): the only fields.
        self.section = {"login_endpoint": url, "management_endpoint": url, "prices_endpoint": url + "/api/retail/prices"}
        return {"AZURE_POD_IDENTITY_AUTHORITY_HOST": "http://127.0.0.1:9"}, "azure: login Azure CLI (~/.azure, user me@example.com)"

    def live(self):
        form = urllib.parse.urlencode({"grant_type": "refresh_token", "client_id": AZURE_CLI_CLIENT, "refresh_token": self.refresh,
                                       "scope": "https://management.azure.com/.default offline_access"})
        with urllib.request.urlopen(f"{self.url}/{self.tenant}/oauth2/v2.0/token", data=form.encode(), timeout=30) as r:
            token = json.loads(r.read())["access_token"]
        req = urllib.request.Request(f"{self.url}/subscriptions/{self.subscription}/providers/Microsoft.Compute/"
                                     "virtualMachines?api-version=2023-03-01", headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(req, timeout=30) as r:
            items = json.loads(r.read()).get("value", [])
        return [(v["properties"]["hardwareProfile"]["vmSize"], v["id"]) for v in items
                if v["properties"]["provisioningState"] in ("Creating", "Succeeded")]


class Hetzner:
    fake_args = ["--initializing-s", "0.2", "--starting-s", "0.2", "--deleting-s", "0.2"]
    types = ["cx22", "cpx11"]
    token = "tsum-fake-hcloud-token"  # what the fake accepts

    def login(self, home, url):
        write(os.path.join(home, ".config", "hcloud", "cli.toml"),
              f'active_context = "work"\n[[contexts]]\nname = "work"\ntoken = "{self.token}"\n'
              f'[contexts.preferences]\nendpoint = "{url}/v1"\n')
        from hcloud import Client
        self.client = Client(token=self.token, api_endpoint=url + "/v1")
        return {}, "hetzner: login context work"

    def live(self):
        return [(s.server_type.name, s.id) for s in self.client.servers.get_all()
                if s.status in ("initializing", "starting", "running")]


def until(what, predicate, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    sys.exit(f"FAIL: {what} within {timeout_s} s")


def main():
    cloud = {"aws": Aws, "gce": Gce, "azure": Azure, "hetzner": Hetzner, "yandex": Yandex}[CLOUD]()
    c = Checks(TSUMD)
    url = c.start_fake(FAKE, "--listen", "127.0.0.1:0", *cloud.fake_args, *(["--vcpu-quota", "4"] if TIGHT else []))
    daemon = None
    with tempfile.TemporaryDirectory(prefix="tsum-aws-runs-") as root:
        try:
            home = os.path.join(root, "home")
            login_env, login_line = cloud.login(home, url)
            config = os.path.join(root, "tsumd.json")
            write(config, json.dumps({"providers": {CLOUD: getattr(cloud, "section", {})}}))
            env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AWS_EC2_METADATA_DISABLED": "true",
                   "GCE_METADATA_IP": "127.0.0.1:9", **login_env}
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
            if TIGHT:
                def quota_line():
                    log.seek(0)
                    return next((l for l in log.read().splitlines() if "tsumd: aws: 2 machines at once (" in l), None)
                line = until("the cap from the quota", quota_line)
                c.check("vCPU quota 4 over 2-vCPU machines" in line, f"the account's 4 vCPUs: {line}")
            types = cloud.types
            created = api("POST", "/v1/experiments", {"name": "side by side", "repetitions": 2,
                                                      "workload": {"epochs": 1, "limit": 300, "test_limit": 200},
                                                      "configs": [{"provider": CLOUD, "instance_type": t} for t in types]})
            live = cloud.live

            def four_at_once():
                runs = api("GET", f"/v1/runs?experiment={created['id']}")["runs"]
                booting = [r for r in runs if r["status"] in ("provisioning", "booting")]
                return len(booting) == 4 and len(live()) == 4 and runs

            if TIGHT:
                def two_and_two():
                    runs = api("GET", f"/v1/runs?experiment={created['id']}")["runs"]
                    booting = [r for r in runs if r["status"] in ("provisioning", "booting")]
                    queued = [r for r in runs if r["status"] == "queued"]
                    return len(booting) == 2 and len(queued) == 2 and len(live()) == 2 and runs
                until("2 machines up, 2 runs queued", two_and_two)
                c.check(len(live()) == 2, "the quota holds: 2 machines at once, the other 2 runs wait")
                api("DELETE", f"/v1/experiments/{created['id']}")
                until("every machine terminated", lambda: not live())
                return
            runs = until("4 machines up at once", four_at_once)
            c.check(len(runs) == 4, f"2 configs x 2 repetitions: {types}, {len(runs)} runs")
            c.check(len({t for t, _ in live()}) == 2, "the fake has all 4 machines running, of both types")
            images = {r["id"]: api("GET", f"/v1/runs/{r['id']}").get("machine", {}).get("image", "") for r in runs}
            c.check(all(images.values()), f"each run shows the image its machine boots, found, not typed: {set(images.values())}")
            log.seek(0)
            text = log.read()
            limits = next((l for l in text.splitlines() if "runs at once: 64 in all;" in l), "")
            c.check(f"; {CLOUD} 8 machines" in limits and login_line in text,
                    "the daemon logs its limits and the login: " + " | ".join(l for l in text.splitlines() if CLOUD in l))
            if CLOUD in ("aws", "gce", "azure"):  # the clouds that report a quota: the fakes' are 16, 12 and 10 machines
                quota = next((l for l in text.splitlines() if f"tsumd: {CLOUD}: " in l and "machines at once (" in l), "")
                c.check(quota and int(quota.split(": ")[2].split()[0]) >= 4,
                        f"then the account's quota as the cap: {quota or text}")
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
