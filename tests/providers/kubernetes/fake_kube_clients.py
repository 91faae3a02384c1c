#!/usr/bin/python3
"""The fake Kubernetes API server (tests/fakes/kubernetes/fake_kube.py) checked with real clients: Debian's
python3-kubernetes (the official Python client) and kubectl. Over TLS with a bearer token, as a cluster is
reached. Each step asserts what the real API server answers: create, get, list by label, watch from a
resourceVersion, 409 on a second create and on a stale replace, 404 on a missing Pod, 422 on an invalid spec,
the scheduler's Unschedulable condition, deletion; nodes' allocatable resources and labels.

  [KUBECTL=/path/to/kubectl] fake_kube_clients.py FAKE_KUBE_PY WORKDIR
Exit 0 when every check passed; prints each check. KUBECTL: another kubectl than the first on PATH (e.g.
Debian's kubernetes-client unpacked with dpkg-deb -x where another package owns /usr/bin/kubectl).
"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

fake, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60, **kw)


# A CA, and the server's certificate for 127.0.0.1.
ca_key, ca, key, cert = (os.path.join(work, n) for n in ("ca.key", "ca.pem", "srv.key", "srv.pem"))
run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
    "-subj", "/CN=tsum-fake-kube-ca")
run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", key + ".csr", "-subj", "/CN=127.0.0.1")
with open(os.path.join(work, "ext"), "w") as f:
    f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
run("openssl", "x509", "-req", "-in", key + ".csr", "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
    "-days", "2", "-extfile", os.path.join(work, "ext"))
nodes = os.path.join(work, "nodes.json")
with open(nodes, "w") as f:
    json.dump([{"name": "node-a", "cpu": "2", "memory": "4Gi", "labels": {"node.kubernetes.io/instance-type": "small"}},
               {"name": "gpu-a", "cpu": "8", "memory": "30Gi", "gpus": 1,
                "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}}], f)
port_file = os.path.join(work, "port")
if os.path.exists(port_file):
    os.remove(port_file)
server = subprocess.Popen([sys.executable, fake, "--nodes", nodes, "--port-file", port_file, "--token", "t0ken",
                           "--tls-cert", cert, "--tls-key", key, "--watch-log", "10"])
try:
    for _ in range(100):
        if os.path.exists(port_file):
            break
        time.sleep(0.1)
    url = "https://127.0.0.1:" + open(port_file).read()
    kubeconfig = os.path.join(work, "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: %s\n"
                "    certificate-authority: %s\nusers:\n- name: tsum\n  user:\n    token: t0ken\ncontexts:\n"
                "- name: fake\n  context:\n    cluster: fake\n    user: tsum\n    namespace: default\n"
                "current-context: fake\n" % (url, ca))

    # --- python3-kubernetes ---------------------------------------------------------------------------
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()
    ns = v1.list_node()
    names = sorted(n.metadata.name for n in ns.items)
    check(names == ["gpu-a", "node-a"], "python: list_node names the nodes (%s)" % names)
    gpu = [n for n in ns.items if n.metadata.name == "gpu-a"][0]
    check(gpu.status.allocatable.get("nvidia.com/gpu") == "1" and
          gpu.metadata.labels.get("nvidia.com/gpu.product") == "NVIDIA-A100-SXM4-40GB",
          "python: a node's allocatable nvidia.com/gpu and GPU product label")

    def pod(name, cpu="1", image="debian:12", labels=None):
        return client.V1Pod(metadata=client.V1ObjectMeta(name=name, labels=labels or {"app": "t"}),
                            spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(
                                name="c", image=image, command=["sleep", "60"],
                                resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": "256Mi"},
                                                                        limits={"cpu": cpu, "memory": "256Mi"}))]))

    start_rv = v1.list_namespaced_pod("default").metadata.resource_version
    events = []
    w = watch.Watch()

    def watcher():
        for e in w.stream(v1.list_namespaced_pod, "default", label_selector="app=t", resource_version=start_rv,
                          timeout_seconds=20):
            events.append((e["type"], e["object"].metadata.name))
            if ("DELETED", "p1") in events:
                w.stop()
    t = threading.Thread(target=watcher)
    t.start()
    created = v1.create_namespaced_pod("default", pod("p1"))
    check(created.metadata.uid and created.metadata.resource_version, "python: create gives a uid and resourceVersion")
    try:
        v1.create_namespaced_pod("default", pod("p1"))
        check(False, "python: a second create of p1 is 409 AlreadyExists")
    except ApiException as e:
        check(e.status == 409 and json.loads(e.body)["reason"] == "AlreadyExists", "python: a second create of p1 is 409 AlreadyExists")
    try:
        v1.read_namespaced_pod("nope", "default")
        check(False, "python: reading a missing Pod is 404")
    except ApiException as e:
        check(e.status == 404 and json.loads(e.body)["reason"] == "NotFound", "python: reading a missing Pod is 404")
    bad = pod("Bad_Name", image="")
    try:
        v1.create_namespaced_pod("default", bad)
        check(False, "python: an invalid Pod is 422")
    except ApiException as e:
        body = json.loads(e.body)
        fields = sorted(c["field"] for c in body["details"]["causes"])
        check(e.status == 422 and body["reason"] == "Invalid" and "metadata.name" in fields and
              "spec.containers[0].image" in fields, "python: an invalid Pod is 422 Invalid naming its fields (%s)" % fields)
    for _ in range(50):
        p1 = v1.read_namespaced_pod("p1", "default")
        if p1.status.phase == "Running":
            break
        time.sleep(0.1)
    check(p1.status.phase == "Running" and p1.spec.node_name in ("node-a", "gpu-a"),
          "python: p1 is scheduled and running (%s on %s)" % (p1.status.phase, p1.spec.node_name))
    stale = p1.metadata.resource_version
    p1.metadata.labels["extra"] = "x"
    v1.replace_namespaced_pod("p1", "default", p1)
    p1.metadata.resource_version = stale
    try:
        v1.replace_namespaced_pod("p1", "default", p1)
        check(False, "python: a replace with a stale resourceVersion is 409 Conflict")
    except ApiException as e:
        check(e.status == 409 and json.loads(e.body)["reason"] == "Conflict",
              "python: a replace with a stale resourceVersion is 409 Conflict")
    v1.create_namespaced_pod("default", pod("huge", cpu="64", labels={"app": "other"}))
    time.sleep(0.6)
    huge = v1.read_namespaced_pod("huge", "default")
    cond = [c for c in huge.status.conditions or [] if c.type == "PodScheduled"]
    check(huge.status.phase == "Pending" and cond and cond[0].reason == "Unschedulable" and
          cond[0].message.startswith("0/2 nodes are available: 2 Insufficient cpu"),
          "python: a Pod no node fits is Unschedulable with the scheduler's message (%s)" % (cond[0].message if cond else None))
    listed = v1.list_namespaced_pod("default", label_selector="app=t")
    check([p.metadata.name for p in listed.items] == ["p1"], "python: list by labelSelector app=t finds p1 alone")
    listed = v1.list_namespaced_pod("default", label_selector="app in (t,other)")
    check(sorted(p.metadata.name for p in listed.items) == ["huge", "p1"], "python: a set-based selector finds both")
    v1.delete_namespaced_pod("p1", "default", grace_period_seconds=0)
    v1.delete_namespaced_pod("huge", "default")
    t.join(25)
    kinds = [e for e in events if e[1] == "p1"]
    check(kinds[:1] == [("ADDED", "p1")] and kinds[-1:] == [("DELETED", "p1")] and ("MODIFIED", "p1") in kinds,
          "python: a watch from the list's resourceVersion sees p1 ADDED, MODIFIED, DELETED (%d events)" % len(kinds))
    check(all(e[1] != "huge" for e in events), "python: the watch's labelSelector leaves the other Pod out")
    try:
        list(watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version="1", timeout_seconds=2))
        check(False, "python: a watch from a compacted resourceVersion is 410 Expired")
    except ApiException as e:
        check(e.status == 410, "python: a watch from a compacted resourceVersion is 410 Expired")
    except Exception as e:  # older clients raise the ERROR event's Status otherwise
        check("410" in str(e) or "Expired" in str(e), "python: a watch from a compacted resourceVersion is 410 Expired (%s)" % e)

    # --- kubectl ---------------------------------------------------------------------------------------
    kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl")
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=work)
    r = run(kubectl, "version", "--client", env=env)
    print("kubectl: " + r.stdout.strip().replace("\n", "; "))
    r = run(kubectl, "get", "nodes", "-o", "json", env=env)
    items = json.loads(r.stdout)["items"] if r.returncode == 0 else []
    check(sorted(i["metadata"]["name"] for i in items) == ["gpu-a", "node-a"], "kubectl: get nodes " + r.stderr.strip())
    r = run(kubectl, "run", "k1", "--image=debian:12", "--restart=Never", "--labels=app=k",
            "--overrides", json.dumps({"spec": {"containers": [{"name": "k1", "image": "debian:12",
                                                                 "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}}),
            env=env)
    check(r.returncode == 0 and "created" in r.stdout, "kubectl: run k1 (%s)" % (r.stdout + r.stderr).strip())
    r = run(kubectl, "run", "k1", "--image=debian:12", "--restart=Never", env=env)
    check(r.returncode != 0 and "AlreadyExists" in r.stderr, "kubectl: a second run k1 is AlreadyExists")
    r = run(kubectl, "wait", "--for=condition=Ready", "pod/k1", "--timeout=10s", env=env)
    check(r.returncode == 0, "kubectl: wait for k1 Ready (%s)" % (r.stdout + r.stderr).strip())
    r = run(kubectl, "get", "pods", "-l", "app=k", "-o", "jsonpath={.items[*].metadata.name}", env=env)
    check(r.stdout.strip() == "k1", "kubectl: get pods -l app=k (%s)" % r.stdout.strip())
    r = run(kubectl, "get", "pod", "nope", env=env)
    check(r.returncode != 0 and "NotFound" in r.stderr, "kubectl: get pod nope is NotFound")
    r = run(kubectl, "label", "pod", "k1", "extra=y", env=env)
    check(r.returncode == 0, "kubectl: label pod k1 (%s)" % (r.stdout + r.stderr).strip())
    w = subprocess.Popen([kubectl, "get", "pods", "-l", "app=k", "--watch", "-o", "name", "--request-timeout=20s"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(1.5)
    r = run(kubectl, "delete", "pod", "k1", "--grace-period=1", "--wait=true", "--timeout=20s", env=env)
    check(r.returncode == 0 and "deleted" in r.stdout, "kubectl: delete pod k1 waits until it is gone (%s)" % (r.stdout + r.stderr).strip())
    time.sleep(0.5)
    w.terminate()
    out, _ = w.communicate(timeout=10)
    check("pod/k1" in out, "kubectl: get --watch saw k1 (%s)" % out.strip().replace("\n", " "))
    r = run(kubectl, "get", "pods", "-o", "json", env=env)
    check(r.returncode == 0 and json.loads(r.stdout)["items"] == [], "kubectl: nothing left in default")
    bad_env = dict(env)
    with open(os.path.join(work, "kc-bad"), "w") as f:
        f.write(open(kubeconfig).read().replace("token: t0ken", "token: wrong"))
    bad_env["KUBECONFIG"] = os.path.join(work, "kc-bad")
    r = run(kubectl, "get", "pods", env=bad_env)
    check(r.returncode != 0 and ("Unauthorized" in r.stderr or "credentials" in r.stderr), "kubectl: a wrong token is refused")
finally:
    server.terminate()
    server.wait(10)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
