#!/usr/bin/python3
"""Differential test: tsum's Hetzner login (providers/hetzner/hetzner_login.h) against the hcloud CLI's order.

No Python SDK reads the CLI's file (python3-hcloud takes a token), and the CLI is not in Debian, so the reference
below is the CLI's documented order (`hcloud config --help`, its internal/state/config): the file HCLOUD_CONFIG,
else $XDG_CONFIG_HOME/hcloud/cli.toml, else ~/.config/hcloud/cli.toml; the context HCLOUD_CONTEXT, else
active_context, one of [[contexts]] by name; the token HCLOUD_TOKEN, else the context's; the endpoint
HCLOUD_ENDPOINT, else the context's preferences, else the global [preferences]. A context that tsum's config
names wins over HCLOUD_TOKEN, as the CLI's --context flag does not (tsum's own rule, documented). The file is
written with and read back by Python's TOML library (python3-toml), never by tsum's parser (toml++).

Generates N seeded random files and environments (missing files, unknown contexts, contexts without a token,
broken TOML) and compares: error or not, token, endpoint and context.
Usage: hetzner_login_diff.py <path to tsum-login-probe> [count] [seed]
"""
import os
import random
import sys
import tempfile

from login_testing import arguments, compare, failed_alike, probe

try:
    import toml
except ImportError as e:
    sys.exit(f"FAIL: toml is not importable ({e}); install python3-toml (scripts/install-deps.sh)")

NAMES = ["work", "prod", "dev", "my project", "ci-2"]
ENDPOINTS = ["https://api.hetzner.cloud/v1", "http://127.0.0.1:8080/v1", "https://hc.example/v1"]


def token(rng):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(64))


def make_case(rng, root, i):
    home = os.path.join(root, f"h{i}")
    os.makedirs(home)
    env = {}
    doc = {}
    contexts = []
    for name in rng.sample(NAMES, rng.randint(0, 3)):
        c = {"name": name}
        if rng.random() < 0.9:
            c["token"] = token(rng)
        if rng.random() < 0.3:
            c["preferences"] = {"endpoint": rng.choice(ENDPOINTS)}
        contexts.append(c)
    if contexts:
        doc["contexts"] = contexts
    if rng.random() < 0.8:
        doc["active_context"] = rng.choice(NAMES + ([contexts[0]["name"]] * 3 if contexts else []))
    if rng.random() < 0.3:
        doc["preferences"] = {"endpoint": rng.choice(ENDPOINTS), "poll_interval": "500ms"}
    text = toml.dumps(doc)
    if rng.random() < 0.05:
        text += "\nactive_context = [unclosed\n"
    where = rng.random()
    if where < 0.5:
        path = os.path.join(home, ".config", "hcloud", "cli.toml")
    elif where < 0.7:
        env["XDG_CONFIG_HOME"] = os.path.join(home, "xdg")
        path = os.path.join(home, "xdg", "hcloud", "cli.toml")
    elif where < 0.9:
        env["HCLOUD_CONFIG"] = os.path.join(home, "elsewhere.toml")
        path = env["HCLOUD_CONFIG"]
    else:
        path = None  # no file at all
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    if rng.random() < 0.25:
        env["HCLOUD_TOKEN"] = token(rng)
    if rng.random() < 0.25:
        env["HCLOUD_CONTEXT"] = rng.choice(NAMES)
    if rng.random() < 0.2:
        env["HCLOUD_ENDPOINT"] = rng.choice(ENDPOINTS)
    named = rng.choice(NAMES) if rng.random() < 0.15 else ""
    return {"cloud": "hetzner", "env": env, "home": home, "context": named}


def reference(case):
    """The hcloud CLI's order, over Python's TOML parser."""
    env, home = case["env"], case["home"]
    path = env.get("HCLOUD_CONFIG") or os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"),
                                                    "hcloud", "cli.toml")
    doc = {}
    if os.path.isfile(path):
        try:
            with open(path) as f:
                doc = toml.load(f)
        except toml.TomlDecodeError:
            return {"error": True}
    context = case["context"] or env.get("HCLOUD_CONTEXT") or doc.get("active_context", "")
    active = next((c for c in doc.get("contexts", []) if context and c.get("name") == context), None)
    endpoint = doc.get("preferences", {}).get("endpoint", "")
    if active and active.get("preferences", {}).get("endpoint"):
        endpoint = active["preferences"]["endpoint"]
    if env.get("HCLOUD_ENDPOINT"):
        endpoint = env["HCLOUD_ENDPOINT"]
    if env.get("HCLOUD_TOKEN") and not case["context"]:
        return {"error": False, "token": env["HCLOUD_TOKEN"], "endpoint": endpoint, "context": ""}
    if not active or not active.get("token"):
        return {"error": True}
    return {"error": False, "token": active["token"], "endpoint": endpoint, "context": context}


def main():
    tool, count, seed = arguments(300)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="tsum-hetzner-login-") as root:
        cases = [make_case(rng, root, i) for i in range(count)]
        compare(cases, [reference(c) for c in cases], probe(tool, cases),
                lambda want, got: (failed_alike(want, got, "hetzner: ", ["run '", "set "]) if want["error"] or got["error"]
                                   else got == want),
                "the hcloud CLI's order")

if __name__ == "__main__":
    main()
