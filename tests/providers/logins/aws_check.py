#!/usr/bin/python3
"""`tsumd check` and `tsumd offers` with the AWS login a user already has, against the fake cloud (its STS,
SSM, EC2 and Price List on one endpoint, named by AWS_ENDPOINT_URL as the SDKs read it).

Each case is a home directory with ~/.aws files and an environment, as `aws configure` and friends leave them:
a profile's keys (AWS_PROFILE=work), a role assumed from it, a credential_process, SSO profiles logged in (the
portal's GetRoleCredentials), expired and never logged in, an EC2 instance's role (IMDSv2), no login at all, and
a config file whose AWS section is empty.
Usage: aws_check.py <tsumd> <tsum-fake-cloud>
"""
import hashlib
import json
import os
import sys
import tempfile

from login_testing import Checks

TSUMD, FAKE = sys.argv[1], sys.argv[2]
SSO_TOKEN = "aoaAAAAAGtsumfakessoaccesstoken"


def sso_cache(home, start_url, token, expires):
    """What `aws sso login` caches: ~/.aws/sso/cache/<sha1 of the start URL>.json."""
    path = os.path.join(home, ".aws", "sso", "cache", hashlib.sha1(start_url.encode()).hexdigest() + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"startUrl": start_url, "region": "eu-west-1", "accessToken": token, "expiresAt": expires}, f)


def main():
    c = Checks(TSUMD)
    check, run = c.check, c.run
    url = c.start_fake(FAKE, "--listen", "127.0.0.1:0", "--region", "eu-central-1,us-east-1",
                       "--sso-access-token", SSO_TOKEN, "--instance-role", "tsum-node")
    try:
        with tempfile.TemporaryDirectory(prefix="tsum-login-") as root:
            home = os.path.join(root, "home")
            os.makedirs(os.path.join(home, ".aws"))
            proc = os.path.join(root, "creds.sh")
            with open(proc, "w") as f:
                f.write('#!/bin/sh\necho \'{"Version": 1, "AccessKeyId": "AKIDTSUMFAKE", '
                        '"SecretAccessKey": "tsum-fake-secret-key"}\'\n')
            os.chmod(proc, 0o755)
            with open(os.path.join(home, ".aws", "config"), "w") as f:
                f.write("[profile work]\nregion = eu-central-1\n\n"
                        "[profile trainer]\nrole_arn = arn:aws:iam::123456789012:role/trainer\nsource_profile = work\n"
                        "role_session_name = nightly\n\n"
                        f"[profile tool]\ncredential_process = {proc}\nregion = us-east-1\n\n"
                        f"[profile web]\nweb_identity_token_file = {root}/token\nrole_arn = arn:aws:iam::123456789012:role/ci\n\n"
                        "[profile corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n"
                        "sso_account_id = 123456789012\nsso_role_name = Admin\n\n"
                        "[profile team]\nsso_start_url = https://team.awsapps.com/start\nsso_region = eu-west-1\n"
                        "sso_account_id = 210987654321\nsso_role_name = Trainer\nregion = eu-central-1\n\n"
                        "[profile old]\nsso_start_url = https://old.awsapps.com/start\nsso_region = eu-west-1\n"
                        "sso_account_id = 210987654321\nsso_role_name = Trainer\n")
            sso_cache(home, "https://team.awsapps.com/start", SSO_TOKEN, "2099-01-01T00:00:00Z")
            sso_cache(home, "https://old.awsapps.com/start", SSO_TOKEN, "2020-01-01T00:00:00Z")
            with open(os.path.join(home, ".aws", "credentials"), "w") as f:
                f.write("[work]\naws_access_key_id = AKIDTSUMFAKE\naws_secret_access_key = tsum-fake-secret-key\n")
            os.chmod(os.path.join(home, ".aws", "credentials"), 0o600)
            with open(os.path.join(root, "token"), "w") as f:
                f.write("eyJhbGciOiJSUzI1NiJ9.ci-token\n")
            base = {"AWS_ENDPOINT_URL": url, "AWS_EC2_METADATA_DISABLED": "true"}

            rc, out = run(home, {**base, "AWS_PROFILE": "work"}, "check")
            check(rc == 0 and "aws: usable, profile work (~/.aws/credentials), region eu-central-1 (profile work), "
                              "account arn:aws:iam::123456789012:user/tsum-fake" in out, f"profile work: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "trainer"}, "check")
            check(rc == 0 and "role arn:aws:iam::123456789012:role/trainer from profile work" in out and
                  "assumed-role/trainer/nightly" in out, f"role from source_profile: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "tool"}, "check")
            check(rc == 0 and "credential_process" in out, f"credential_process: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "web"}, "check")
            check(rc == 0 and "web identity, role arn:aws:iam::123456789012:role/ci" in out and "assumed-role/ci/tsum-" in out,
                  f"web identity: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "corp"}, "check")
            aws_lines = [line for line in out.splitlines() if line.startswith("aws")]
            check(rc == 1 and "run 'aws sso login --profile corp'" in out and len(aws_lines) == 1,
                  f"SSO never logged in: one line with the fix: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "team"}, "check")
            check(rc == 0 and "aws: usable, profile team (~/.aws/config, SSO)" in out and
                  "account arn:aws:sts::210987654321:assumed-role/AWSReservedSSO_Trainer_" in out,
                  f"SSO logged in: the portal's role credentials: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "old"}, "check")
            check(rc == 1 and "the SSO login expired; run 'aws sso login --profile old'" in out,
                  f"SSO login expired: the fix: {out.strip()}")
            os.makedirs(os.path.join(root, "ec2"))
            rc, out = run(os.path.join(root, "ec2"), {"AWS_ENDPOINT_URL": url, "AWS_EC2_METADATA_DISABLED": "false",
                                                     "AWS_EC2_METADATA_SERVICE_ENDPOINT": url}, "check")
            check(rc == 0 and "account arn:aws:sts::123456789012:assumed-role/tsum-node/" in out,
                  f"on EC2: the instance role from IMDSv2: {out.strip()}")
            rc, out = run(home, {**base, "AWS_PROFILE": "nope"}, "check")
            check(rc == 1 and "run 'aws configure --profile nope'" in out, f"a profile that is not there: {out.strip()}")
            rc, out = run(home, {**base, "AWS_ACCESS_KEY_ID": "AKIDTSUMFAKE", "AWS_SECRET_ACCESS_KEY": "wrong"}, "check")
            check(rc == 1 and "SignatureDoesNotMatch" in out and "environment (AWS_ACCESS_KEY_ID)" in out,
                  f"environment keys the cloud refuses: {out.strip()}")
            empty = os.path.join(root, "empty")
            os.makedirs(empty)
            rc, out = run(empty, base, "check")
            check(rc == 1 and "no login found" in out and "~/.aws/credentials" in out and "run 'aws configure'" in out,
                  f"no login anywhere: where it looked: {out.strip()}")
            lines = {line.split(":")[0]: line for line in out.splitlines() if ": not usable" in line}
            check(sorted(lines) == ["aws", "azure", "gce", "hetzner", "kubernetes", "yandex"] and
                  all("run '" in line or "set " in line for line in lines.values()),
                  f"no login anywhere: a line per cloud, each with where it looked and the fix: {sorted(lines)}")

            # A config whose AWS section is empty: the login, its region, the image found in SSM.
            config = os.path.join(root, "tsumd.json")
            with open(config, "w") as f:
                json.dump({"providers": {"aws": {}}}, f)
            os.chmod(config, 0o600)
            rc, out = run(home, {**base, "AWS_PROFILE": "trainer"}, "check", "--config", config, "--json")
            doc = json.loads(out[out.index("{"):]) if "{" in out else {}
            p = (doc.get("providers") or [{}])[0]
            check(rc == 0 and p.get("usable") and "image ami-0deb12x" in p.get("detail", ""),
                  f"an empty section: usable, the Debian 12 image found: {p}")
            rc, out = run(home, {**base, "AWS_PROFILE": "work"}, "offers", "--config", config, "--json")
            offers = json.loads(out[out.index("{"):]).get("offers", []) if "{" in out else []
            check(rc == 0 and offers and all(o["region"] == "eu-central-1" for o in offers),
                  f"offers through the login, in its region: {len(offers)} offers")
            check(offers and all(o["image"].startswith("ami-") for o in offers),
                  f"each offer names its AMI, found in SSM: {sorted({o['image'] for o in offers})}")
    finally:
        c.finish()


if __name__ == "__main__":
    main()
