#!/usr/bin/python3
"""Differential test: tsum's kubeconfig reading (providers/kubernetes/kubeconfig.h) against kubectl's own.

Generates N seeded random sets of kubeconfig files: clusters, users and contexts whose names repeat across
files with other contents, current-context in some files, CAs and client certificates inline (-data) or as
files relative to their kubeconfig, tokens; KUBECONFIG naming one to three of them (and one that is not there),
or none (~/.kube/config); sometimes a context named (tsum's `context` field, kubectl's --context). kubectl
resolves each (`kubectl config view --minify --flatten -o json`: the context's cluster, user and namespace, with
files inlined) and they must agree on: error or not, the server, the CA, the token, the client certificate and
key, the namespace.
Usage: kubeconfig_diff.py <path to tsum-login-probe> [count] [seed]
"""
import base64
import json
import os
import random
import subprocess
import sys
import tempfile

import yaml

from login_testing import arguments, compare, probe

CLUSTERS, USERS, CONTEXTS = ["c1", "c2"], ["u1", "u2"], ["dev", "prod", "ml"]


def b64(text):
    return base64.b64encode(text.encode()).decode()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def kubeconfig(rng, path, tag):
    """One file's clusters, users, contexts; CA and certificates inline or beside it."""
    d = os.path.dirname(path)
    doc = {"apiVersion": "v1", "kind": "Config"}
    clusters = []
    for name in rng.sample(CLUSTERS, rng.choice([0, 1, 2, 2])):
        c = {"server": f"https://{tag}-{name}:6443"}
        r = rng.random()
        if r < 0.4:
            c["certificate-authority-data"] = b64(f"CA of {tag}/{name}\n")
        elif r < 0.8:
            write(os.path.join(d, f"{tag}-{name}-ca.pem"), f"CA file of {tag}/{name}\n")
            c["certificate-authority"] = f"{tag}-{name}-ca.pem"
        clusters.append({"name": name, "cluster": c})
    users = []
    for name in rng.sample(USERS, rng.choice([0, 1, 2, 2])):
        r = rng.random()
        if r < 0.4:
            u = {"token": f"token-{tag}-{name}"}
        elif r < 0.7:
            u = {"client-certificate-data": b64(f"cert {tag}/{name}\n"), "client-key-data": b64(f"key {tag}/{name}\n")}
        else:
            write(os.path.join(d, "certs", f"{tag}-{name}.crt"), f"cert file {tag}/{name}\n")
            write(os.path.join(d, "certs", f"{tag}-{name}.key"), f"key file {tag}/{name}\n")
            u = {"client-certificate": f"certs/{tag}-{name}.crt", "client-key": f"certs/{tag}-{name}.key"}
        users.append({"name": name, "user": u})
    contexts = []
    for name in rng.sample(CONTEXTS, rng.randint(0, 3)):
        c = {"cluster": rng.choice(CLUSTERS), "user": rng.choice(USERS)}
        if rng.random() < 0.5:
            c["namespace"] = f"ns-{tag}-{name}"
        contexts.append({"name": name, "context": c})
    for key, value in (("clusters", clusters), ("users", users), ("contexts", contexts)):
        if value or rng.random() < 0.5:
            doc[key] = value
    if rng.random() < 0.6:
        doc["current-context"] = rng.choice([c["name"] for c in contexts] * 2 + CONTEXTS)
    write(path, yaml.safe_dump(doc))


def make_case(rng, root, i):
    home = os.path.join(root, f"h{i}")
    files = [os.path.join(home, ".kube", "config")] + [os.path.join(home, f"k{j}", "config.yaml") for j in range(3)]
    for j, f in enumerate(files):
        kubeconfig(rng, f, f"f{j}")
    env = {}
    if rng.random() < 0.7:
        listed = rng.sample(files, rng.randint(1, 3))
        if rng.random() < 0.3:
            listed.insert(rng.randint(0, len(listed)), os.path.join(home, "missing.yaml"))
        env["KUBECONFIG"] = ":".join(listed)
    context = rng.choice(CONTEXTS) if rng.random() < 0.3 else ""
    return {"cloud": "kubernetes", "env": env, "home": home, "context": context}


def kubectl(case):
    cmd = ["kubectl", "config", "view", "--minify", "--flatten", "-o", "json"]
    if case["context"]:
        cmd += ["--context", case["context"]]
    p = subprocess.run(cmd, env={**case["env"], "HOME": case["home"], "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return {"error": True, "detail": p.stderr.strip()}
    doc = json.loads(p.stdout)
    ctx = (doc.get("contexts") or [{}])[0].get("context", {})
    cluster = (doc.get("clusters") or [{}])[0].get("cluster", {})
    user = next((u.get("user", {}) for u in doc.get("users") or [] if u.get("name") == ctx.get("user")), {})
    dec = lambda v: base64.b64decode(v).decode() if v else ""
    return {"error": False, "server": cluster.get("server", ""), "ca": dec(cluster.get("certificate-authority-data")),
            "token": user.get("token", ""), "cert": dec(user.get("client-certificate-data")),
            "key": dec(user.get("client-key-data")), "namespace": ctx.get("namespace", "")}


def main():
    tool, count, seed = arguments(200)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="tsum-kubeconfig-") as root:
        cases = [make_case(rng, root, i) for i in range(count)]
        compare(cases, [kubectl(c) for c in cases], probe(tool, cases),
                lambda want, got: want["error"] and got["error"] if want["error"] or got["error"] else got == want, "kubectl")

if __name__ == "__main__":
    main()
