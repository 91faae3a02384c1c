#!/usr/bin/python3
"""`tsumd check` and `tsumd offers` with the Azure login a user already has, against the fake Azure (its token
endpoint takes a client secret, a certificate's signed assertion, a federated token and the Azure CLI's
refresh token; it is also the metadata service of the VM tsumd would run on): `az login` as a user, a service
principal's secret and certificate in the environment, workload identity, a managed identity, an expired CLI
login, and no login at all. The section names only the fake's endpoints.
Usage: azure_check.py <tsumd> <tsum-fake-azure>
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from login_testing import Checks, azure_cli_login, write

TSUMD, FAKE = sys.argv[1], sys.argv[2]
TENANT, CLIENT = "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-9999-000000000000"
SUBSCRIPTION = "00000000-0000-4000-8000-000000000001"
SECRET, FEDERATED, REFRESH = "tsum-fake-secret", "eyJhbGciOiJSUzI1NiJ9.tsum-federated.sig", "tsum-fake-refresh-token"


def main():
    c = Checks(TSUMD)
    check, run = c.check, c.run
    with tempfile.TemporaryDirectory(prefix="tsum-azure-login-") as root:
        cert = os.path.join(root, "app.pem")
        key = os.path.join(root, "app.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=tsum-app"], check=True, capture_output=True)
        with open(key) as k:
            pem_and_key = cert + ".with-key"
            write(pem_and_key, open(cert).read() + k.read())
        url = c.start_fake(FAKE, "--listen", "127.0.0.1:0", "--client-secret", SECRET, "--client-certificate", cert,
                           "--federated-token", FEDERATED, "--refresh-token", REFRESH, "--managed-identity")
        try:
            config = os.path.join(root, "tsumd.json")
            write(config, json.dumps({"providers": {"azure": {
                "login_endpoint": url, "management_endpoint": url, "prices_endpoint": url + "/api/retail/prices"}}}))
            empty = os.path.join(root, "empty")
            os.makedirs(empty)

            home = os.path.join(root, "home")
            azure_cli_login(home, SUBSCRIPTION, TENANT, "me@example.com", REFRESH)
            rc, out = run(home, {}, "check", "--config", config)
            check(rc == 0 and re.search(r"azure: usable, Azure CLI \(~/.azure, user me@example.com\), subscription "
                                        + SUBSCRIPTION + r" \(the Azure CLI's default subscription\), \d+ offers", out),
                  f"az login: the CLI's user and default subscription: {out.strip()}")

            sp = {"AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_ID": CLIENT, "AZURE_SUBSCRIPTION_ID": SUBSCRIPTION}
            rc, out = run(empty, {**sp, "AZURE_CLIENT_SECRET": SECRET}, "check", "--config", config)
            check(rc == 0 and f"azure: usable, AZURE_CLIENT_SECRET (service principal {CLIENT}), subscription "
                  f"{SUBSCRIPTION} (AZURE_SUBSCRIPTION_ID)" in out, f"a service principal's secret: {out.strip()}")
            rc, out = run(empty, {**sp, "AZURE_CLIENT_SECRET": "wrong"}, "check", "--config", config)
            check(rc == 1 and "azure: not usable" in out and "invalid_client" in out and "'wrong'" not in out,
                  f"a wrong secret: refused, the secret redacted: {out.strip()}")
            rc, out = run(empty, {**sp, "AZURE_CLIENT_CERTIFICATE_PATH": pem_and_key}, "check", "--config", config)
            check(rc == 0 and "azure: usable, AZURE_CLIENT_CERTIFICATE_PATH" in out,
                  f"a service principal's certificate (a signed assertion): {out.strip()}")
            token = os.path.join(root, "federated-token")
            write(token, FEDERATED)
            arm_only = os.path.join(root, "arm-only.json")  # the login's authority from AZURE_AUTHORITY_HOST, as AKS sets it
            write(arm_only, json.dumps({"providers": {"azure": {"management_endpoint": url,
                                                                "prices_endpoint": url + "/api/retail/prices"}}}))
            rc, out = run(empty, {**sp, "AZURE_FEDERATED_TOKEN_FILE": token, "AZURE_AUTHORITY_HOST": url}, "check",
                          "--config", arm_only)
            check(rc == 0 and "azure: usable, workload identity (AZURE_FEDERATED_TOKEN_FILE" in out,
                  f"workload identity, the authority from AZURE_AUTHORITY_HOST: {out.strip()}")
            rc, out = run(empty, {"AZURE_POD_IDENTITY_AUTHORITY_HOST": url}, "check", "--config", config)
            check(rc == 0 and f"azure: usable, managed identity ({url}), subscription {SUBSCRIPTION} (the VM's metadata)" in out,
                  f"on an Azure VM: its managed identity and subscription: {out.strip()}")

            rc, out = run(empty, {}, "check", "--config", config)
            lines = [l for l in out.splitlines() if l.strip()]
            check(rc == 1 and "azure: not usable" in out and "no managed identity at http://127.0.0.1:9" in out and
                  "~/.azure/azureProfile.json does not exist" in out and "run 'az login'" in out and len(lines) == 1,
                  f"no login anywhere: where it looked, the fix, one line: {out.strip()}")
            expired = os.path.join(root, "expired")
            azure_cli_login(expired, SUBSCRIPTION, TENANT, "me@example.com", "expired-refresh-token")
            rc, out = run(expired, {}, "check", "--config", config)
            check(rc == 1 and "invalid_grant" in out and "run 'az login'" in out and "expired-refresh-token" not in out,
                  f"an expired CLI login: the fix, the token redacted: {out.strip()}")
            rc, out = run(home, {}, "offers", "--config", config, "--json")
            offers = json.loads(out[out.index("{"):]).get("offers", []) if "{" in out else []
            check(rc == 0 and offers and all(o["provider"] == "azure" for o in offers), f"offers through the login: {len(offers)}")
            check(offers and all(o["image"] == "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202611200" for o in offers),
                  f"each offer names the marketplace image's newest version: {offers[0]['image'] if offers else None}")
        finally:
            c.finish()


if __name__ == "__main__":
    main()
