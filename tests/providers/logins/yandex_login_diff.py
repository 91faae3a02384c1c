#!/usr/bin/python3
"""Differential test: tsum's Yandex login (providers/yandex/yandex_login.h) against the yc CLI's documented
configuration (`yc config`, `yc init`: ~/.config/yandex-cloud/config.yaml, `current` and `profiles`, each with
service-account-key, token, instance-service-account or federation-id, folder-id and compute-default-zone) and the
variables of Yandex's Terraform provider (YC_SERVICE_ACCOUNT_KEY_FILE, YC_FOLDER_ID, YC_ZONE), read back with
Python's YAML parser. No SDK in Debian reads the file.

Generates N seeded random files (profiles with a key, an OAuth token, the VM's account, a federation, nothing;
broken keys; a missing current profile), environments and named profiles, and compares: error or not, the kind
of login, the key's service account, the token, the folder and the zone.
Usage: yandex_login_diff.py <path to tsum-login-probe> [count] [seed]
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import yaml

from login_testing import arguments, compare, failed_alike, probe

NAMES = ["default", "prod", "sa"]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def key(rng, pem, i):
    k = {"id": f"ajekey{i:06d}", "service_account_id": f"ajesa{i:06d}", "created_at": "2026-01-01T00:00:00Z",
         "key_algorithm": "RSA_2048", "public_key": "-----BEGIN PUBLIC KEY-----\n...\n", "private_key": pem}
    if rng.random() < 0.05:
        del k["private_key"]
    return k


def profile(rng, pem, i):
    p = {}
    r = rng.random()
    if r < 0.4:
        p["service-account-key"] = key(rng, pem, i)
    elif r < 0.7:
        p["token"] = f"y0_token{i}"
    elif r < 0.8:
        p["instance-service-account"] = True
    elif r < 0.9:
        p["federation-id"] = "bpffed"
    if rng.random() < 0.8:
        p["folder-id"] = f"b1gfolder{i}"
    if rng.random() < 0.5:
        p["compute-default-zone"] = rng.choice(["ru-central1-a", "ru-central1-b"])
    if rng.random() < 0.5:
        p["cloud-id"] = f"b1gcloud{i}"
    return p


def make_case(rng, root, pem, i):
    home = os.path.join(root, f"h{i}")
    os.makedirs(home)
    env = {}
    if rng.random() < 0.85:
        doc = {"profiles": {n: profile(rng, pem, i * 10 + j) for j, n in enumerate(rng.sample(NAMES, rng.randint(1, 3)))}}
        if rng.random() < 0.9:
            doc["current"] = rng.choice(NAMES + list(doc["profiles"]) * 2)
        text = yaml.safe_dump(doc)
        if rng.random() < 0.03:
            text += "profiles: [unclosed\n"
        write(os.path.join(home, ".config", "yandex-cloud", "config.yaml"), text)
    if rng.random() < 0.15:
        path = os.path.join(home, "key.json")
        env["YC_SERVICE_ACCOUNT_KEY_FILE"] = path
        if rng.random() < 0.9:
            write(path, json.dumps(key(rng, pem, 90000 + i)))
    if rng.random() < 0.15:
        env["YC_FOLDER_ID"] = f"b1genv{i}"
    if rng.random() < 0.1:
        env["YC_ZONE"] = "ru-central1-d"
    named = rng.choice(NAMES) if rng.random() < 0.2 else ""
    return {"cloud": "yandex", "env": env, "home": home, "profile": named}


def reference(case):
    env, home = case["env"], case["home"]
    path = os.path.join(home, ".config", "yandex-cloud", "config.yaml")
    prof, name = None, case["profile"]
    if os.path.isfile(path):
        try:
            doc = yaml.safe_load(open(path))
        except yaml.YAMLError:
            return {"error": True}
        name = name or (doc or {}).get("current", "")
        if name:
            prof = ((doc or {}).get("profiles") or {}).get(name)
            if not isinstance(prof, dict):
                return {"error": True}
    elif name:
        return {"error": True}
    prof = prof or {}
    folder = env.get("YC_FOLDER_ID") or prof.get("folder-id", "")
    zone = env.get("YC_ZONE") or prof.get("compute-default-zone", "")
    out = {"error": False, "kind": "key", "service_account_id": "", "oauth_token": "", "folder": folder, "zone": zone}

    def with_key(k):
        if not isinstance(k, dict) or not k.get("id") or not k.get("service_account_id") or not k.get("private_key"):
            return {"error": True}
        return {**out, "service_account_id": k["service_account_id"]}

    if env.get("YC_SERVICE_ACCOUNT_KEY_FILE"):
        f = env["YC_SERVICE_ACCOUNT_KEY_FILE"]
        return with_key(json.load(open(f))) if os.path.isfile(f) else {"error": True}
    if not prof:
        return {"error": True}
    if "service-account-key" in prof:
        return with_key(prof["service-account-key"])
    if prof.get("token"):
        return {**out, "kind": "oauth", "oauth_token": prof["token"]}
    if prof.get("instance-service-account") is True:
        return {**out, "kind": "metadata"}
    return {"error": True}


def main():
    tool, count, seed = arguments(300)
    rng = random.Random(seed)
    pem = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                         capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory(prefix="tsum-yandex-login-") as root:
        cases = [make_case(rng, root, pem, i) for i in range(count)]
        compare(cases, [reference(c) for c in cases], probe(tool, cases),
                lambda want, got: failed_alike(want, got, "yandex: ", ["'yc "]) if want["error"] or got["error"] else got == want,
                "the yc CLI's documented configuration")

if __name__ == "__main__":
    main()
