#!/usr/bin/python3
"""`tsumd check` and `tsumd offers` with the Google login a user already has, against the fake GCE (its token
endpoint takes the service account's JWT and the authorized user's refresh token; it is also the metadata
server of the VM tsumd would run on): gcloud's application default login, a service account's key named by
GOOGLE_APPLICATION_CREDENTIALS, the metadata server, a revoked login, and no login at all. The section names
only the fake's endpoints.
Usage: gce_check.py <tsumd> <tsum-fake-gce>
"""
import json
import os
import re
import sys
import tempfile

from login_testing import Checks, write

TSUMD, FAKE = sys.argv[1], sys.argv[2]
USER = {"type": "authorized_user", "client_id": "tsum-fake.apps.googleusercontent.com",
        "client_secret": "tsum-fake-client-secret", "refresh_token": "1//tsum-fake-refresh-token"}


def main():
    c = Checks(TSUMD)
    check, run = c.check, c.run
    with tempfile.TemporaryDirectory(prefix="tsum-gce-login-") as root:
        key = os.path.join(root, "key.json")
        url = c.start_fake(FAKE, "--listen", "127.0.0.1:0", "--account-out", key)
        host = url.split("://", 1)[1]
        try:
            home = os.path.join(root, "home")
            write(os.path.join(home, ".config", "gcloud", "application_default_credentials.json"), json.dumps(USER))
            write(os.path.join(home, ".config", "gcloud", "configurations", "config_default"),
                  "[core]\naccount = me@example.com\nproject = tsum-fake\n")
            config = os.path.join(root, "tsumd.json")
            write(config, json.dumps({"providers": {"gce": {
                "compute_endpoint": url + "/compute/v1", "billing_endpoint": url + "/v1", "token_endpoint": url + "/token"}}}))
            nowhere = {}  # Checks.run's default: no metadata server

            rc, out = run(home, nowhere, "check", "--config", config)
            check(rc == 0 and re.search(r"gce: usable, gcloud's application default login \(~/.config/gcloud/application_"
                                        r"default_credentials.json, user, client tsum-fake.apps.googleusercontent.com\), "
                                        r"project tsum-fake \(gcloud configuration default .*\), \d+ offers", out),
                  f"gcloud auth application-default login, the project from gcloud's configuration: {out.strip()}")
            rc, out = run(home, {**nowhere, "GOOGLE_APPLICATION_CREDENTIALS": key}, "check", "--config", config)
            check(rc == 0 and "gce: usable, GOOGLE_APPLICATION_CREDENTIALS" in out and "service account tsum@" in out and
                  "project tsum-fake (the key file)" in out, f"a service account's key: {out.strip()}")
            empty = os.path.join(root, "empty")
            os.makedirs(empty)
            rc, out = run(empty, {"GCE_METADATA_IP": host, "GCE_METADATA_ROOT": host}, "check", "--config", config)
            check(rc == 0 and "gce: usable, the metadata server" in out and "project tsum-fake (the metadata server)" in out,
                  f"on a GCE VM: the metadata server's account and project: {out.strip()}")
            rc, out = run(empty, {**nowhere, "GOOGLE_CLOUD_PROJECT": "p"}, "check", "--config", config)
            check(rc == 1 and "gce: not usable" in out and "~/.config/gcloud/application_default_credentials.json does "
                  "not exist" in out and "run 'gcloud auth application-default login'" in out and out.count("\n") == 1,
                  f"no login anywhere: where it looked, the fix: {out.strip()}")
            revoked = os.path.join(root, "revoked")
            write(os.path.join(revoked, ".config", "gcloud", "application_default_credentials.json"),
                  json.dumps({**USER, "refresh_token": "1//revoked"}))
            rc, out = run(revoked, {**nowhere, "GOOGLE_CLOUD_PROJECT": "tsum-fake"}, "check", "--config", config)
            check(rc == 1 and "invalid_grant" in out and "run 'gcloud auth application-default login' again" in out and
                  "1//revoked" not in out, f"a revoked login: the fix, the token redacted: {out.strip()}")
            rc, out = run(home, nowhere, "offers", "--config", config, "--json")
            offers = json.loads(out[out.index("{"):]).get("offers", []) if "{" in out else []
            check(rc == 0 and offers and all(o["provider"] == "gce" for o in offers), f"offers through the login: {len(offers)}")
        finally:
            c.finish()


if __name__ == "__main__":
    main()
