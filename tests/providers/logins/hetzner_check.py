#!/usr/bin/python3
"""`tsumd check` and `tsumd offers` with the Hetzner login a user already has (`hcloud context create work`
leaves ~/.config/hcloud/cli.toml), against the fake Hetzner Cloud; and `tsumd check` with no login anywhere.
Usage: hetzner_check.py <tsumd> <tsum-fake-hetzner>
"""
import json
import os
import re
import sys
import tempfile

from login_testing import Checks, write

TSUMD, FAKE = sys.argv[1], sys.argv[2]
TOKEN = "tsum-fake-hcloud-token"  # what the fake accepts


def main():
    c = Checks(TSUMD)
    check, run = c.check, c.run
    url = c.start_fake(FAKE, "--listen", "127.0.0.1:0")
    try:
        with tempfile.TemporaryDirectory(prefix="tsum-hetzner-login-") as root:
            home = os.path.join(root, "home")
            write(os.path.join(home, ".config", "hcloud", "cli.toml"),
                  f'active_context = "work"\n\n[[contexts]]\nname = "work"\ntoken = "{TOKEN}"\n\n'
                  f'[contexts.preferences]\nendpoint = "{url}/v1"\n\n'
                  f'[[contexts]]\nname = "old"\ntoken = "revoked-{TOKEN}"\n\n[contexts.preferences]\nendpoint = "{url}/v1"\n')
            config = os.path.join(root, "tsumd.json")
            write(config, json.dumps({"providers": {"hetzner": {}}}))

            rc, out = run(home, {}, "check", "--config", config)
            check(rc == 0 and re.search(r"hetzner: usable, context work \(~/.config/hcloud/cli.toml\), \d+ offers", out),
                  f"an empty section takes the active context: {out.strip()}")
            rc, out = run(home, {"HCLOUD_CONTEXT": "old"}, "check", "--config", config)
            check(rc == 1 and "hetzner: not usable with context old" in out and "401" in out and out.count("\n") == 1 and
                  "run 'hcloud context create NAME'" in out,
                  f"a context whose token the cloud refuses: one line: {out.strip()}")
            rc, out = run(home, {"HCLOUD_CONTEXT": "gone"}, "check", "--config", config)
            check(rc == 1 and "context 'gone' is not in ~/.config/hcloud/cli.toml (it has work, old)" in out and
                  "run 'hcloud context create gone'" in out, f"a context that is not there: {out.strip()}")
            rc, out = run(home, {"HCLOUD_TOKEN": TOKEN}, "offers", "--config", config, "--json")
            offers = json.loads(out[out.index("{"):]).get("offers", []) if "{" in out else []
            check(rc == 0 and offers and all(o["provider"] == "hetzner" for o in offers),
                  f"HCLOUD_TOKEN wins over the file, the context's endpoint stays: {len(offers)} offers")

            # No login anywhere, no config: every cloud says where it looked, and check fails.
            empty = os.path.join(root, "empty")
            os.makedirs(empty)
            rc, out = run(empty, {}, "check")
            lines = out.strip().splitlines()
            check(rc == 1 and any(l.startswith("aws: not usable") and "~/.aws/credentials" in l for l in lines) and
                  any(l.startswith("hetzner: not usable") and "~/.config/hcloud/cli.toml does not exist" in l and
                      "run 'hcloud context create NAME' or set HCLOUD_TOKEN" in l for l in lines),
                  f"no login anywhere: each cloud says where it looked: {out.strip()}")
            # A login found without a config: check proves it.
            rc, out = run(home, {}, "check")
            check(rc == 0 and re.search(r"^hetzner: usable, context work", out, re.M), f"no config, a login: {out.strip()}")
    finally:
        c.finish()


if __name__ == "__main__":
    main()
