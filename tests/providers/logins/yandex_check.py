#!/usr/bin/python3
"""`tsumd check` with the Yandex login a user already has (`yc init` leaves ~/.config/yandex-cloud/config.yaml),
against the fake Yandex Cloud (its IAM endpoint exchanges the user's OAuth token, and the service account's JWT):
an OAuth profile, a service-account-key profile named by the section, a revoked token, a federation profile, and
no login. The section names only the fake's endpoints; the machines' image and subnet are found (image family,
the folder's subnet in the zone) when a run is created.
Usage: yandex_check.py <tsumd> <tsum-fake-yandex>
"""
import json
import os
import re
import sys
import tempfile

import yaml

from login_testing import Checks, write

TSUMD, FAKE = sys.argv[1], sys.argv[2]
FOLDER = "b1gfakefolder0000001"


def main():
    c = Checks(TSUMD)
    with tempfile.TemporaryDirectory(prefix="tsum-yandex-login-") as root:
        key_file = os.path.join(root, "key.json")
        url = c.start_fake(FAKE, "--listen", "127.0.0.1:0", "--key-out", key_file, "--instance-service-account")
        try:
            home = os.path.join(root, "home")
            key = json.load(open(key_file))
            write(os.path.join(home, ".config", "yandex-cloud", "config.yaml"), yaml.safe_dump({
                "current": "default",
                "profiles": {"default": {"token": "y0_tsumfakeoauthtoken", "folder-id": FOLDER,
                                         "compute-default-zone": "ru-central1-a"},
                             "sa": {"service-account-key": key, "folder-id": FOLDER},
                             "old": {"token": "y0_revoked", "folder-id": FOLDER},
                             "corp": {"federation-id": "bpffed", "folder-id": FOLDER},
                             "vm": {"instance-service-account": True, "folder-id": FOLDER}}}))
            endpoints = {"iam_endpoint": url + "/iam/v1/tokens", "compute_endpoint": url + "/compute/v1",
                         "operation_endpoint": url + "/operations", "billing_endpoint": url + "/billing/v1",
                         "vpc_endpoint": url + "/vpc/v1"}

            def config(**fields):
                path = os.path.join(root, "tsumd.json")
                write(path, json.dumps({"providers": {"yandex": {**endpoints, **fields}}}))
                return path

            rc, out = c.run(home, {}, "check", "--config", config())
            c.check(rc == 0 and re.search(r"yandex: usable, yc profile default \(~/.config/yandex-cloud/config.yaml, OAuth "
                                          r"token\), folder " + FOLDER + r", zone ru-central1-a, \d+ offers", out),
                    f"the current profile's OAuth token: {out.strip()}")
            rc, out = c.run(home, {}, "check", "--config", config(profile="sa"))
            c.check(rc == 0 and "yandex: usable, yc profile sa" in out and "service account ajefakesa" in out,
                    f"a profile's service account key: {out.strip()}")
            rc, out = c.run(home, {}, "check", "--config", config(profile="old"))
            c.check(rc == 1 and "401" in out and "run 'yc init' again" in out and "y0_revoked" not in out,
                    f"a revoked OAuth token: the fix, the token redacted: {out.strip()}")
            rc, out = c.run(home, {}, "check", "--config", config(profile="corp"))
            c.check(rc == 1 and "federation" in out and "yc config set service-account-key" in out,
                    f"a federation profile: why and the fix: {out.strip()}")
            rc, out = c.run(home, {}, "check", "--config", config(profile="vm", metadata_endpoint=url))
            c.check(rc == 0 and "yandex: usable, yc profile vm" in out and "the VM's service account" in out,
                    f"on a Yandex VM: the metadata server's service account: {out.strip()}")
            empty = os.path.join(root, "empty")
            os.makedirs(empty)
            rc, out = c.run(empty, {}, "check", "--config", config())
            c.check(rc == 1 and "yandex: not usable" in out and "~/.config/yandex-cloud/config.yaml has no profile" in out and
                    "run 'yc init'" in out, f"no login: where it looked, the fix: {out.strip()}")
        finally:
            c.finish()


if __name__ == "__main__":
    main()
