#!/usr/bin/python3
"""Differential test: tsum's AWS login chain (providers/aws/aws_login.h) against botocore's (Debian's
python3-botocore, the AWS CLI's SDK).

Generates N seeded random logins: ~/.aws/config and ~/.aws/credentials with profiles that hold static keys (some
half), regions, role_arn with source_profile (chains, loops, missing sources) or credential_source,
credential_process, SSO (legacy and sso-session, some incomplete), web identity; and environments with
AWS_ACCESS_KEY_ID (some half), AWS_PROFILE / AWS_DEFAULT_PROFILE (some naming no profile), AWS_DEFAULT_REGION,
AWS_WEB_IDENTITY_TOKEN_FILE, tokens; sometimes an explicit profile (tsum's `profile` field, botocore's
Session(profile=...)). botocore resolves each (nothing is fetched: its assume-role, SSO and web-identity
credentials are deferred, and IMDS is disabled), tsum-login-probe the same, and the two must agree on: error or
not, the method, the keys (credential_process is run by both), each role's ARN down the source chain, the SSO
start URL / region / account / role, the web identity's role and token file, and the region.
Usage: aws_login_diff.py <path to tsum-login-probe> [count] [seed]
"""
import json
import os
import random
import shutil
import sys
import tempfile

from login_testing import arguments, probe, verdict

try:
    import botocore.session
except ImportError as e:
    sys.exit(f"FAIL: botocore is not importable ({e}); install python3-botocore (scripts/install-deps.sh)")

NAMES = ["default", "work", "dev", "prod", "ci"]
REGIONS = ["us-east-1", "eu-central-1", "ap-south-1"]


def key(rng, prefix="AKIA"):
    return prefix + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(12))


def process_line(rng, home):
    """A credential_process that prints keys (sometimes with quotes and escapes to split), or fails."""
    ak, sk = key(rng, "ASIA"), key(rng, "S")
    doc = {"Version": 1, "AccessKeyId": ak, "SecretAccessKey": sk}
    if rng.random() < 0.5:
        doc["SessionToken"] = key(rng, "T")
    script = os.path.join(home, f"proc-{ak}.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n" + ("echo broken >&2; exit 3\n" if rng.random() < 0.1 else f"cat <<'EOF'\n{json.dumps(doc)}\nEOF\n"))
    os.chmod(script, 0o755)
    return rng.choice([script, f"'{script}' --profile x", f'"{script}" a\\ b'])


def profile_keys(rng, name, names, home):
    """One profile's keys: a mix of what real profiles hold."""
    keys = {}
    r = rng.random()
    if r < 0.35:
        keys["aws_access_key_id"] = key(rng)
        if rng.random() < 0.9:
            keys["aws_secret_access_key"] = key(rng, "S")
        if rng.random() < 0.3:
            keys[rng.choice(["aws_session_token", "aws_security_token"])] = key(rng, "T")
    elif r < 0.55:
        keys["role_arn"] = f"arn:aws:iam::123456789012:role/{name}-{rng.randint(0, 99)}"
        c = rng.random()
        if c < 0.75:
            keys["source_profile"] = rng.choice(names * 3 + ["nowhere"])
        elif c < 0.9:
            keys["credential_source"] = "Environment"
        elif c < 0.95:
            keys["source_profile"], keys["credential_source"] = rng.choice(names), "Environment"
        if rng.random() < 0.2:
            keys["aws_access_key_id"], keys["aws_secret_access_key"] = key(rng), key(rng, "S")
    elif r < 0.65:
        keys["credential_process"] = process_line(rng, home)
    elif r < 0.8:
        for k, v in (("sso_account_id", "123456789012"), ("sso_role_name", "Admin"),
                     ("sso_start_url", "https://example.awsapps.com/start"), ("sso_region", rng.choice(REGIONS))):
            if rng.random() < 0.9:
                keys[k] = v
        if rng.random() < 0.3:
            keys["sso_session"] = rng.choice(["corp", "gone"])
            keys.pop("sso_start_url", None)
    elif r < 0.88:
        keys["web_identity_token_file"] = os.path.join(home, "token")
        if rng.random() < 0.8:
            keys["role_arn"] = f"arn:aws:iam::123456789012:role/web-{name}"
    if rng.random() < 0.5:
        keys["region"] = rng.choice(REGIONS)
    return keys


def write_ini(path, sections):
    with open(path, "w") as f:
        for header, keys in sections:
            f.write(f"[{header}]\n")
            for k, v in keys.items():
                f.write(f"{k}{rng_sep(k)}{v}\n")
            f.write("\n")


def rng_sep(k):
    return " = " if len(k) % 2 else "="


def make_case(rng, home):
    names = rng.sample(NAMES, rng.randint(1, 4))
    config, creds = [], []
    for n in names:
        keys = profile_keys(rng, n, names, home)
        where = rng.random()
        if where < 0.6:
            config.append(("default" if n == "default" and rng.random() < 0.7 else f"profile {n}", keys))
        elif where < 0.9:
            creds.append((n, keys))
        else:  # split over both files
            a = dict(list(keys.items())[: len(keys) // 2])
            b = dict(list(keys.items())[len(keys) // 2:])
            config.append(("default" if n == "default" else f"profile {n}", a))
            creds.append((n, b))
    if rng.random() < 0.5:
        config.append(("sso-session corp", {"sso_start_url": "https://corp.awsapps.com/start",
                                            "sso_region": rng.choice(REGIONS)}))
    os.makedirs(os.path.join(home, ".aws"), exist_ok=True)
    write_ini(os.path.join(home, ".aws", "config"), config)
    write_ini(os.path.join(home, ".aws", "credentials"), creds)
    with open(os.path.join(home, "token"), "w") as f:
        f.write("eyJ.token\n")
    env = {"AWS_EC2_METADATA_DISABLED": "true"}
    if rng.random() < 0.3:
        env["AWS_ACCESS_KEY_ID"] = key(rng)
        if rng.random() < 0.9:
            env["AWS_SECRET_ACCESS_KEY"] = key(rng, "S")
        if rng.random() < 0.3:
            env["AWS_SESSION_TOKEN"] = key(rng, "T")
        if rng.random() < 0.1:
            env["AWS_SECURITY_TOKEN"] = key(rng, "U")
    if rng.random() < 0.6:
        env[rng.choice(["AWS_PROFILE", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"])] = rng.choice(names * 3 + ["missing"])
    if rng.random() < 0.3:
        env["AWS_DEFAULT_REGION"] = rng.choice(REGIONS)
    if rng.random() < 0.1:
        env["AWS_WEB_IDENTITY_TOKEN_FILE"] = os.path.join(home, "token")
        if rng.random() < 0.8:
            env["AWS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/from-env"
    explicit = rng.choice(names) if rng.random() < 0.15 else ""
    return env, explicit


def describe_botocore(creds):
    if creds is None:
        return None
    m = creds.method
    out = {"method": m}
    if m in ("env", "shared-credentials-file", "config-file", "custom-process", "explicit"):
        f = creds.get_frozen_credentials()
        out.update(access_key=f.access_key, secret_key=f.secret_key, token=f.token or "")
    elif m == "assume-role":
        fetcher = creds._refresh_using.__self__
        out["role_arn"] = fetcher._role_arn
        out["source"] = describe_botocore(fetcher._source_credentials)
    elif m == "assume-role-with-web-identity":
        fetcher = creds._refresh_using.__self__
        out["role_arn"] = fetcher._role_arn
        out["token_file"] = fetcher._web_identity_token_loader._web_identity_token_path
    elif m == "sso":
        fetcher = creds._refresh_using.__self__
        out.update(start_url=fetcher._start_url, sso_region=fetcher._sso_region, account_id=fetcher._account_id,
                   role_name=fetcher._role_name)
    return out


def botocore_resolve(env, home, explicit):
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        os.environ["HOME"] = home
        os.environ["PATH"] = saved.get("PATH", "/usr/bin:/bin")
        session = botocore.session.Session(profile=explicit or None)
        creds = session.get_credentials()
        region = session.get_config_variable("region") or ""
        if creds is None:
            return {"error": True, "detail": "no credentials"}
        return {"error": False, "region": region, "creds": describe_botocore(creds)}
    except Exception as e:  # botocore's ProfileNotFound, PartialCredentialsError, InvalidConfigError, ...
        return {"error": True, "detail": f"{type(e).__name__}: {e}"}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def strip(r):
    return {"error": True} if r["error"] else {"error": False, "region": r["region"], "creds": r["creds"]}


def main():
    tool, count, seed = arguments(400)
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix="tsum-aws-login-")
    cases, expected = [], []
    try:
        for i in range(count):
            home = os.path.join(root, str(i))
            os.makedirs(home)
            env, explicit = make_case(rng, home)
            expected.append(botocore_resolve(env, home, explicit))
            cases.append({"cloud": "aws", "env": env, "home": home, "profile": explicit})
        got = probe(tool, cases)
        differences = 0
        kinds = {}
        for i, (want, have) in enumerate(zip(expected, got)):
            kind = "error" if want["error"] else want["creds"]["method"]
            kinds[kind] = kinds.get(kind, 0) + 1
            if strip(want) != strip(have):
                differences += 1
                if differences <= 5:
                    home = cases[i]["home"]
                    print(f"case {i}: env={cases[i]['env']} profile={cases[i]['profile']!r}")
                    for f in ("config", "credentials"):
                        print(f"--- {f}\n" + open(os.path.join(home, ".aws", f)).read())
                    print(f"botocore: {json.dumps(want)}\ntsum:     {json.dumps(have)}\n")
        print(f"{count} logins, by botocore's answer: {json.dumps(kinds, sort_keys=True)}")
        verdict(differences, count, "botocore")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
