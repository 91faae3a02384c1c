#!/usr/bin/python3
"""`tsumd check` with the kubeconfig a user already has (~/.kube/config, or KUBECONFIG's files), against the fake
Kubernetes API server: usable through the current context, a context whose token the server refuses, and no
kubeconfig at all.
Usage: kube_check.py <tsumd> <fake_kube.py>
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from login_testing import Checks, write

TSUMD, FAKE = sys.argv[1], sys.argv[2]


def kubeconfig(url, current):
    return ("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: %s\nusers:\n"
            "- name: tsum\n  user:\n    token: t0ken\n- name: stranger\n  user:\n    token: wrong\ncontexts:\n"
            "- name: fake\n  context: {cluster: fake, user: tsum, namespace: ml}\n"
            "- name: other\n  context: {cluster: fake, user: stranger}\n"
            "current-context: %s\n" % (url, current))


def main():
    c = Checks(TSUMD)
    with tempfile.TemporaryDirectory(prefix="tsum-kube-login-") as root:
        nodes, port_file = os.path.join(root, "nodes.json"), os.path.join(root, "port")
        write(nodes, json.dumps([{"name": "node-a", "cpu": "2", "memory": "4Gi",
                                  "labels": {"node.kubernetes.io/instance-type": "small"}}]))
        server = subprocess.Popen([sys.executable, FAKE, "--nodes", nodes, "--port-file", port_file, "--token", "t0ken"])
        try:
            for _ in range(100):
                if os.path.exists(port_file) and open(port_file).read():
                    break
                time.sleep(0.1)
            url = "http://127.0.0.1:" + open(port_file).read()
            home = os.path.join(root, "home")
            write(os.path.join(home, ".kube", "config"), kubeconfig(url, "fake"))
            rc, out = c.run(home, {}, "check")
            c.check(rc == 0 and f"kubernetes: usable, server {url}, 1 offers" in out,
                    f"~/.kube/config's current context: {out.strip()}")
            # KUBECONFIG's first file sets the current context: one whose token the server refuses.
            first = os.path.join(root, "first.yaml")
            write(first, "apiVersion: v1\nkind: Config\ncurrent-context: other\n")
            rc, out = c.run(home, {"KUBECONFIG": first + ":" + os.path.join(home, ".kube", "config")}, "check")
            c.check(rc == 1 and "kubernetes: not usable" in out and "401" in out and "wrong" not in out,
                    f"KUBECONFIG's merge, a refused token (redacted): {out.strip()}")
            config = os.path.join(root, "tsumd.json")
            write(config, json.dumps({"providers": {"kubernetes": {"context": "fake"}}}))
            rc, out = c.run(home, {"KUBECONFIG": first + ":" + os.path.join(home, ".kube", "config")}, "check",
                            "--config", config)
            c.check(rc == 0 and "kubernetes: usable" in out, f"a section naming only the context: {out.strip()}")
            empty = os.path.join(root, "empty")
            os.makedirs(empty)
            rc, out = c.run(empty, {}, "check")
            c.check(rc == 1 and "kubernetes: not usable" in out and "/.kube/config: not there" in out and
                    "set KUBECONFIG" in out, f"no kubeconfig: where it looked, the fix: {out.strip()}")
        finally:
            server.terminate()
            server.wait(timeout=10)
            c.finish()


if __name__ == "__main__":
    main()
