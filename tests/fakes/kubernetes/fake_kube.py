#!/usr/bin/python3
"""A stateful fake of the Kubernetes API server (core/v1: nodes, namespaces, pods, services, secrets), for tsum's
tests. It keeps state as the real one does: every change bumps a global resourceVersion and goes to a watch log;
creating what exists is 409 AlreadyExists, a replace with a stale resourceVersion 409 Conflict, a missing object
404, an invalid spec 422 Invalid (with causes); lists take labelSelector and fieldSelector; watches stream JSON
lines (chunked) from a resourceVersion, or 410 Expired once it is compacted away.

Faults, as the real service has them: POST /fake/faults {"method": "POST", "path": "/api/v1/namespaces/default/pods",
"status": 429, "retry_after": 1, "times": 2} answers the next `times` matching requests (method and path prefix;
either may be left out) with that status and a Status body, without doing them; {"lose_answer": true, ...} does
them and closes the connection without an answer (a create whose answer was lost). GET /fake/faults lists what is
left. The /fake/ paths need no credential.

A scheduler binds Pods to the configured nodes by their requests (cpu, memory, nvidia.com/gpu) and, where none
fits, sets PodScheduled False/Unschedulable with the real scheduler's message ("0/2 nodes are available: 2
Insufficient cpu."). A kubelet runs each bound Pod as a real container in a Docker engine (--docker-network: the
container gets its own address there, shares nothing else with this host) honouring command, env, envFrom
(Secrets), fieldRef (status.podIP, metadata.name, ...), workingDir, emptyDir, cpu/memory limits and
activeDeadlineSeconds; an image it cannot pull gives ErrImagePull then ImagePullBackOff with Docker's message.
Without --docker-network, Pods "run" without containers (Running until deleted; an image whose name contains
"does-not-exist" cannot be pulled) for tests of the API alone.

  fake_kube.py --nodes NODES.json --port-file F [--port P] [--tls-cert C --tls-key K [--client-ca CA]]
               [--token T] [--docker-network NET --docker-subnet 10.231.5 --docker-host unix://...] [--watch-log N]

NODES.json: [{"name": "node-a", "cpu": "2", "memory": "4Gi", "gpus": 0, "labels": {...}, "taints": [...]}].
Authentication: with --token, requests need "Authorization: Bearer T"; with --client-ca, a client certificate
that CA signed also authenticates. Everything it made in Docker carries the label tsum-fake-kube=<pid> and is
removed when it stops (SIGTERM/SIGINT).
"""
import argparse
import base64
import copy
import datetime
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.RLock()
CHANGED = threading.Condition(LOCK)
STATE = {"rv": 1, "log": [], "objects": {"pods": {}, "services": {}, "secrets": {}, "nodes": {}, "namespaces": {}}}
NAMESPACED = {"pods": "Pod", "services": "Service", "secrets": "Secret"}
CLUSTER = {"nodes": "Node", "namespaces": "Namespace"}
ARGS = None
STOPPING = threading.Event()
FAULTS = []  # armed faults, first match wins: {"method", "path", "status", "retry_after", "lose_answer", "times"}
OWNER = str(os.getpid())


def now_rfc3339(t=None):
    return datetime.datetime.fromtimestamp(time.time() if t is None else t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------- quantities
SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3,
          "Ti": 1024 ** 4, "n": 1e-9, "u": 1e-6}
QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|[kMGTmnu])?$")


def quantity(q):
    if isinstance(q, (int, float)):
        return float(q)
    m = QUANTITY.match(str(q))
    if not m:
        raise ValueError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return float(m.group(1) + (m.group(2) or "")) * SUFFIX[m.group(3) or ""]


# ---------------------------------------------------------------------------------------------- errors
class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def body(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
                "reason": self.reason, "details": self.details, "code": self.code}


def not_found(kind, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (kind, name), {"name": name, "kind": kind})


def invalid(kind_name, name, causes):
    msg = '%s "%s" is invalid: %s' % (kind_name, name, "; ".join("%s: %s" % (c["field"], c["message"]) for c in causes))
    return ApiError(422, "Invalid", msg, {"name": name, "kind": kind_name, "causes": [
        {"reason": "FieldValueInvalid", "message": c["message"], "field": c["field"]} for c in causes]})


# ---------------------------------------------------------------------------------------------- validation
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def check_meta(meta, causes, name_re, name_max):
    name = meta.get("name", "")
    if not name:
        causes.append({"field": "metadata.name", "message": "Required value: name or generateName is required"})
    elif len(name) > name_max or not name_re.match(name):
        causes.append({"field": "metadata.name", "message": 'Invalid value: "%s": a lowercase RFC 1123 name' % name})
    for k, v in (meta.get("labels") or {}).items():
        key = k.split("/", 1)[-1]
        if len(key) > 63 or not LABEL_NAME.match(key) or ("/" in k and not DNS_SUBDOMAIN.match(k.split("/")[0])):
            causes.append({"field": "metadata.labels", "message": 'Invalid value: "%s": a qualified name' % k})
        if not isinstance(v, str) or len(v) > 63 or not LABEL_VALUE.match(v):
            causes.append({"field": "metadata.labels", "message": 'Invalid value: "%s": a valid label value' % v})


def check_pod(pod):
    causes = []
    check_meta(pod.get("metadata", {}), causes, DNS_SUBDOMAIN, 253)
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return causes + [{"field": "spec", "message": "Required value"}]
    containers = spec.get("containers") or []
    if not containers:
        causes.append({"field": "spec.containers", "message": "Required value"})
    volumes = {v.get("name") for v in spec.get("volumes") or []}
    for i, c in enumerate(containers):
        at = "spec.containers[%d]" % i
        if not DNS_LABEL.match(c.get("name", "")):
            causes.append({"field": at + ".name", "message": "Invalid value: a lowercase RFC 1123 label"})
        if not c.get("image"):
            causes.append({"field": at + ".image", "message": "Required value"})
        res = c.get("resources") or {}
        amounts = {}
        for part in ("requests", "limits"):
            for k, v in (res.get(part) or {}).items():
                try:
                    amounts[(part, k)] = quantity(v)
                except ValueError as e:
                    causes.append({"field": "%s.resources.%s[%s]" % (at, part, k), "message": "Invalid value: %s" % e})
        for (part, k), v in amounts.items():
            if part == "requests" and ("limits", k) in amounts and v > amounts[("limits", k)]:
                causes.append({"field": "%s.resources.requests" % at,
                               "message": "Invalid value: must be less than or equal to %s limit" % k})
            if "/" in k and part == "requests" and amounts.get(("limits", k)) != v:
                causes.append({"field": "%s.resources.requests[%s]" % (at, k),
                               "message": "Invalid value: must be equal to %s limit" % k})
        for j, e in enumerate(c.get("env") or []):
            if not ENV_NAME.match(e.get("name", "")):
                causes.append({"field": "%s.env[%d].name" % (at, j), "message": "Invalid value: a valid environment variable name"})
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in volumes:
                causes.append({"field": at + ".volumeMounts.name", "message": 'Not found: "%s"' % m.get("name")})
    if spec.get("restartPolicy", "Always") not in ("Always", "OnFailure", "Never"):
        causes.append({"field": "spec.restartPolicy", "message": "Unsupported value"})
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads <= 0):
        causes.append({"field": "spec.activeDeadlineSeconds", "message": "Invalid value: must be greater than 0"})
    for f in ("hostname", "subdomain"):
        if f in spec and not DNS_LABEL.match(str(spec[f])):
            causes.append({"field": "spec." + f, "message": "Invalid value: a lowercase RFC 1123 label"})
    return causes


def check_secret(s):
    causes = []
    check_meta(s.get("metadata", {}), causes, DNS_SUBDOMAIN, 253)
    for part in ("data", "stringData"):
        for k, v in (s.get(part) or {}).items():
            if not SECRET_KEY.match(k):
                causes.append({"field": "%s[%s]" % (part, k), "message": "Invalid value: a valid config key"})
            if part == "data":
                try:
                    base64.b64decode(v, validate=True)
                except Exception:
                    causes.append({"field": "data[%s]" % k, "message": "Invalid value: not base64"})
    return causes


def check_service(s):
    causes = []
    check_meta(s.get("metadata", {}), causes, DNS_1035, 63)
    spec = s.get("spec") or {}
    if spec.get("clusterIP") not in (None, "", "None") and not re.match(r"^\d+\.\d+\.\d+\.\d+$", spec["clusterIP"]):
        causes.append({"field": "spec.clusterIP", "message": "Invalid value"})
    if not spec.get("ports") and spec.get("clusterIP") != "None":
        causes.append({"field": "spec.ports", "message": "Required value"})
    return causes


CHECKS = {"pods": check_pod, "secrets": check_secret, "services": check_service}


# ---------------------------------------------------------------------------------------------- store
def bump(kind, event, obj):
    """Records a change (LOCK held): a new resourceVersion for obj, an event in the watch log."""
    STATE["rv"] += 1
    obj["metadata"]["resourceVersion"] = str(STATE["rv"])
    STATE["log"].append((STATE["rv"], kind, event, copy.deepcopy(obj)))
    if len(STATE["log"]) > ARGS.watch_log:
        del STATE["log"][: len(STATE["log"]) - ARGS.watch_log]
    CHANGED.notify_all()


def put_new(kind, ns, obj):
    meta = obj.setdefault("metadata", {})
    meta.update({"uid": str(uuid.uuid4()), "creationTimestamp": now_rfc3339()})
    if ns is not None:
        meta["namespace"] = ns
    STATE["objects"][kind][(ns, meta["name"])] = obj
    bump(kind, "ADDED", obj)


def remove(kind, key):
    obj = STATE["objects"][kind].pop(key, None)
    if obj is not None:
        bump(kind, "DELETED", obj)
    return obj


def selector_matches(sel, labels):
    if not sel:
        return True
    # Equality- and set-based requirements, comma-separated (a comma inside "in (...)" belongs to it).
    reqs, depth, cur = [], 0, ""
    for ch in sel:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            reqs.append(cur)
            cur = ""
        else:
            cur += ch
    reqs.append(cur)
    for r in (x.strip() for x in reqs):
        m = re.match(r"^(\S+)\s+(in|notin)\s+\((.*)\)$", r)
        if m:
            vals = {v.strip() for v in m.group(3).split(",")}
            ok = labels.get(m.group(1)) in vals
            if (m.group(2) == "in") != ok:
                return False
        elif "!=" in r:
            k, v = r.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in r:
            k, v = r.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif r.startswith("!"):
            if r[1:].strip() in labels:
                return False
        elif r and r not in labels:
            return False
    return True


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        cur = cur.get(part, "") if isinstance(cur, dict) else ""
    return str(cur)


def fields_match(sel, obj):
    for r in filter(None, (x.strip() for x in (sel or "").split(","))):
        if "!=" in r:
            k, v = r.split("!=", 1)
            if field_value(obj, k) == v:
                return False
        else:
            k, v = r.replace("==", "=").split("=", 1)
            if field_value(obj, k) != v:
                return False
    return True


def select(kind, ns, q):
    out = []
    for (ons, _), obj in sorted(STATE["objects"][kind].items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        if ns is not None and ons != ns:
            continue
        if selector_matches(q.get("labelSelector"), obj["metadata"].get("labels") or {}) and \
                fields_match(q.get("fieldSelector"), obj):
            out.append(obj)
    return out


# ---------------------------------------------------------------------------------------------- scheduler
def pod_requests(pod):
    total = {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0}
    for c in pod["spec"].get("containers", []):
        res = c.get("resources") or {}
        for k in total:
            v = (res.get("requests") or {}).get(k, (res.get("limits") or {}).get(k))
            if v is not None:
                total[k] += quantity(v)
    return total


def term_matches(term, node):
    labels = node["metadata"].get("labels") or {}
    for e in term.get("matchExpressions") or []:
        have, vals, op = labels.get(e["key"]), e.get("values") or [], e["operator"]
        if (op == "In" and have not in vals) or (op == "NotIn" and have in vals) or \
                (op == "Exists" and e["key"] not in labels) or (op == "DoesNotExist" and e["key"] in labels):
            return False
    for e in term.get("matchFields") or []:
        name, vals, op = node["metadata"]["name"], e.get("values") or [], e["operator"]
        if e["key"] != "metadata.name" or (op == "In" and name not in vals) or (op == "NotIn" and name in vals):
            return False
    return True


def placeable(pod, node):
    """The Pod's nodeSelector and required node affinity (terms ORed, their requirements ANDed)."""
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    req = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    return not req or any(term_matches(t, node) for t in req.get("nodeSelectorTerms") or [])


def schedule():
    with LOCK:
        nodes = sorted(STATE["objects"]["nodes"].values(), key=lambda n: n["metadata"]["name"])
        used = {}
        for p in STATE["objects"]["pods"].values():
            n = p["spec"].get("nodeName")
            if n and p["status"].get("phase") not in ("Succeeded", "Failed"):
                u = used.setdefault(n, {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0})
                for k, v in pod_requests(p).items():
                    u[k] += v
        for key, p in sorted(STATE["objects"]["pods"].items(), key=lambda kv: kv[1]["metadata"]["creationTimestamp"]):
            if p["spec"].get("nodeName") or p["metadata"].get("deletionTimestamp"):
                continue
            want = pod_requests(p)
            reasons = {}
            chosen = None
            for n in nodes:
                if not placeable(p, n):
                    r = "node(s) didn't match Pod's node affinity/selector"
                    reasons[r] = reasons.get(r, 0) + 1
                    continue
                if n["spec"].get("unschedulable"):
                    reasons["node(s) were unschedulable"] = reasons.get("node(s) were unschedulable", 0) + 1
                    continue
                taints = [t for t in n["spec"].get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]
                if taints:
                    t = taints[0]
                    r = "node(s) had untolerated taint {%s: %s}" % (t.get("key"), t.get("value", ""))
                    reasons[r] = reasons.get(r, 0) + 1
                    continue
                alloc = {k: quantity(v) for k, v in n["status"]["allocatable"].items()}
                u = used.get(n["metadata"]["name"], {})
                short = [k for k in ("cpu", "memory", "nvidia.com/gpu")
                         if want[k] > 0 and want[k] > alloc.get(k, 0) - u.get(k, 0) + 1e-9]
                for k in short:
                    reasons["Insufficient " + k] = reasons.get("Insufficient " + k, 0) + 1
                if not short:
                    chosen = n
                    break
            if chosen is None:
                parts = ", ".join("%d %s" % (c, r) for r, c in sorted(reasons.items()))
                msg = "0/%d nodes are available: %s." % (len(nodes), parts or "no nodes available to schedule pods")
                cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg,
                        "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
                old = [c for c in p["status"].get("conditions", []) if c["type"] == "PodScheduled"]
                if not old or old[0].get("message") != msg:
                    p["status"]["conditions"] = [cond]
                    bump("pods", "MODIFIED", p)
                continue
            name = chosen["metadata"]["name"]
            p["spec"]["nodeName"] = name
            p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                          "lastTransitionTime": now_rfc3339()}]
            p["status"]["hostIP"] = chosen["status"]["addresses"][0]["address"]
            u = used.setdefault(name, {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0})
            for k, v in want.items():
                u[k] += v
            bump("pods", "MODIFIED", p)
            threading.Thread(target=kubelet, args=(key,), daemon=True).start()


def scheduler_loop():
    while not STOPPING.is_set():
        schedule()
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------------- kubelet
def docker(*args, timeout=120):
    env = dict(os.environ)
    if ARGS.docker_host:
        env["DOCKER_HOST"] = ARGS.docker_host
    try:
        r = subprocess.run(["docker"] + list(args), capture_output=True, text=True, timeout=timeout, env=env)
        return r.returncode, (r.stdout + r.stderr).strip()
    except subprocess.TimeoutExpired:
        return 124, "docker %s: timed out after %d s" % (args[0], timeout)


def update_pod(key, fn):
    """Applies fn to the stored Pod and records the change; False once the Pod is gone."""
    with LOCK:
        p = STATE["objects"]["pods"].get(key)
        if p is None:
            return False
        if fn(p) is not False:
            bump("pods", "MODIFIED", p)
        return True


def pod_gone_or_deleting(key):
    with LOCK:
        p = STATE["objects"]["pods"].get(key)
        return p is None or bool(p["metadata"].get("deletionTimestamp"))


def set_waiting(p, image, reason, message=None):
    st = {"reason": reason}
    if message:
        st["message"] = message
    cs = {"name": p["spec"]["containers"][0]["name"], "state": {"waiting": st}, "ready": False, "restartCount": 0,
          "image": image, "imageID": "", "started": False}
    old = p["status"].get("containerStatuses")
    if old and old[0]["state"] == cs["state"]:
        return False
    p["status"]["containerStatuses"] = [cs]


IPS = set()  # the addresses of Pods that have (or are getting) a container


def allocate_ip():
    with LOCK:
        for i in range(10, 250):
            ip = "%s.%d" % (ARGS.docker_subnet, i)
            if ip not in IPS:
                IPS.add(ip)
                return ip
    return None


def container_env(p, ip):
    env = {}
    c = p["spec"]["containers"][0]
    ns = p["metadata"]["namespace"]
    with LOCK:
        for ef in c.get("envFrom") or []:
            ref = (ef.get("secretRef") or {}).get("name")
            s = STATE["objects"]["secrets"].get((ns, ref))
            if s is None:
                raise ApiError(0, "CreateContainerConfigError", 'secret "%s" not found' % ref)
            for k, v in (s.get("data") or {}).items():
                env[k] = base64.b64decode(v).decode()
        for e in c.get("env") or []:
            if "value" in e:
                env[e["name"]] = e["value"]
            elif "valueFrom" in e:
                vf = e["valueFrom"]
                if "fieldRef" in vf:
                    path = vf["fieldRef"]["fieldPath"]
                    env[e["name"]] = ip if path == "status.podIP" else field_value(p, path)
                elif "secretKeyRef" in vf:
                    ref = vf["secretKeyRef"]
                    s = STATE["objects"]["secrets"].get((ns, ref["name"]))
                    if s is None or ref["key"] not in (s.get("data") or {}):
                        raise ApiError(0, "CreateContainerConfigError", 'secret "%s" not found' % ref["name"])
                    env[e["name"]] = base64.b64decode(s["data"][ref["key"]]).decode()
    return env


def kubelet(key):
    """Runs one bound Pod until it ends or is deleted."""
    with LOCK:
        p = STATE["objects"]["pods"].get(key)
        if p is None:
            return
        spec = copy.deepcopy(p["spec"])
        start = time.time()
        p["status"]["startTime"] = now_rfc3339(start)
    c = spec["containers"][0]
    image = c["image"]
    update_pod(key, lambda p: set_waiting(p, image, "ContainerCreating"))
    deadline = spec.get("activeDeadlineSeconds")
    # The image: present, else pulled, else ErrImagePull then ImagePullBackOff, tried again with back-off.
    backoff = 2
    while True:
        if pod_gone_or_deleting(key):
            return finish_delete(key, None)
        if not ARGS.docker_network:
            ok, msg = "does-not-exist" not in image, 'failed to resolve reference "%s": not found' % image
        else:
            rc, out = docker("image", "inspect", image, timeout=30)
            ok, msg = rc == 0, ""
            if not ok and c.get("imagePullPolicy") != "Never":
                rc, out = docker("pull", image, timeout=300)
                ok, msg = rc == 0, out.splitlines()[-1] if out else "pull failed"
        if ok:
            break
        update_pod(key, lambda p: set_waiting(p, image, "ErrImagePull", "rpc error: code = Unknown desc = " + msg))
        time.sleep(min(backoff, 2))
        update_pod(key, lambda p: set_waiting(p, image, "ImagePullBackOff", 'Back-off pulling image "%s"' % image))
        for _ in range(int(backoff * 10)):
            if pod_gone_or_deleting(key):
                return finish_delete(key, None)
            time.sleep(0.1)
        backoff = min(backoff * 2, 60)
    ip = allocate_ip() if ARGS.docker_network else "10.244.0.%d" % (abs(hash(key)) % 200 + 10)
    cid = None
    if ARGS.docker_network:
        try:
            env = container_env(p, ip)
        except ApiError as e:
            with LOCK:
                IPS.discard(ip)
            update_pod(key, lambda p: set_waiting(p, image, e.reason, e.message))
            return await_delete(key, None)
        name = "k8s-%s-%s-%s" % (key[0], key[1], uuid.uuid4().hex[:6])
        args = ["run", "-d", "--name", name, "--label", "tsum-fake-kube=" + OWNER, "--network", ARGS.docker_network,
                "--ip", ip, "--hostname", spec.get("hostname") or key[1]]
        lim = (c.get("resources") or {}).get("limits") or {}
        if "cpu" in lim:
            args += ["--cpus", "%.3f" % quantity(lim["cpu"])]
        if "memory" in lim:
            args += ["--memory", str(int(quantity(lim["memory"])))]
        for m in c.get("volumeMounts") or []:
            args += ["-v", m["mountPath"]]  # emptyDir: an anonymous volume, removed with the container
        if c.get("workingDir"):
            args += ["-w", c["workingDir"]]
        for k, v in env.items():
            args += ["-e", "%s=%s" % (k, v)]
        cmd = list(c.get("command") or []) + list(c.get("args") or [])
        if c.get("command"):
            args += ["--entrypoint", cmd[0], image] + cmd[1:]
        else:
            args += [image] + cmd
        rc, out = docker(*args, timeout=120)
        ids = [line for line in out.splitlines() if re.match(r"^[0-9a-f]{64}$", line)]
        if rc != 0 or not ids:
            if ids:
                docker("rm", "-f", "-v", ids[0])
            with LOCK:
                IPS.discard(ip)
            update_pod(key, lambda p: set_waiting(p, image, "CreateContainerError", out[-300:]))
            return await_delete(key, None)
        cid = ids[0]
    started = now_rfc3339()

    def run(p):
        p["status"].update({"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]})
        p["status"]["conditions"] = p["status"].get("conditions", []) + [
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": started}]
        p["status"]["containerStatuses"] = [{"name": c["name"], "state": {"running": {"startedAt": started}},
                                             "ready": True, "restartCount": 0, "image": image, "imageID": "",
                                             "containerID": "docker://%s" % (cid or "fake"), "started": True}]
    update_pod(key, run)
    while True:
        time.sleep(0.3)
        if pod_gone_or_deleting(key):
            return finish_delete(key, cid)
        if deadline and time.time() - start > deadline:
            if cid:
                docker("rm", "-f", "-v", cid)

            def expire(p):
                p["status"].update({"phase": "Failed", "reason": "DeadlineExceeded",
                                    "message": "Pod was active on the node longer than the specified deadline"})
            update_pod(key, expire)
            return await_delete(key, None)
        if not cid:
            continue
        rc, out = docker("inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", cid, timeout=30)
        if rc == 0 and out.split()[0] in ("exited", "dead"):
            code = int(out.split()[1])
            finished = now_rfc3339()

            def end(p):
                p["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
                p["status"]["containerStatuses"][0].update({"ready": False, "state": {"terminated": {
                    "exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": started,
                    "finishedAt": finished, "containerID": "docker://" + cid}}})
            update_pod(key, end)
            return await_delete(key, cid)  # the container stays (its logs) until the Pod is deleted


def await_delete(key, cid):
    """A Pod whose kubelet has nothing more to run: it waits for the Pod's deletion."""
    while not pod_gone_or_deleting(key):
        time.sleep(0.3)
    finish_delete(key, cid)


def finish_delete(key, cid):
    """The kubelet's part of a deletion: the container stopped within the grace period, then the object goes."""
    with LOCK:
        p = STATE["objects"]["pods"].get(key)
        grace = p["metadata"].get("deletionGracePeriodSeconds", 30) if p else 0
    if cid:
        docker("stop", "-t", str(max(0, int(grace))), cid, timeout=int(grace) + 60)
        docker("rm", "-f", "-v", cid)
    with LOCK:
        if p is not None and ARGS.docker_network:
            IPS.discard(p["status"].get("podIP"))
        remove("pods", key)


def delete_pod(key, grace):
    """DELETE of a Pod: marked (deletionTimestamp), then removed once its kubelet has stopped it."""
    p = STATE["objects"]["pods"][key]
    if p["metadata"].get("deletionTimestamp"):
        return p
    p["metadata"]["deletionTimestamp"] = now_rfc3339(time.time() + grace)
    p["metadata"]["deletionGracePeriodSeconds"] = grace
    bump("pods", "MODIFIED", p)
    if not p["spec"].get("nodeName") or grace == 0 and not ARGS.docker_network:
        remove("pods", key)  # never bound (no kubelet), or forced
    elif p["status"].get("phase") in ("Succeeded", "Failed") and not ARGS.docker_network:
        remove("pods", key)
    return p


# ---------------------------------------------------------------------------------------------- HTTP
API_RESOURCES = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": n, "singularName": k.lower(), "namespaced": n in NAMESPACED, "kind": k,
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
     "shortNames": {"pods": ["po"], "services": ["svc"], "nodes": ["no"], "namespaces": ["ns"]}.get(n, [])}
    for n, k in list(NAMESPACED.items()) + list(CLUSTER.items())] + [
    {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]}]}


class LostAnswer:
    """Where a lost answer goes."""

    def write(self, data):
        return len(data)

    def flush(self):
        pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if ARGS.verbose:
            sys.stderr.write("fake-kube: " + fmt % args + "\n")

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authenticated(self):
        if ARGS.client_ca and self.request.getpeercert():
            return True
        if not ARGS.token and not ARGS.client_ca:
            return True
        return ARGS.token and self.headers.get("Authorization") == "Bearer " + ARGS.token

    def body_json(self):
        if hasattr(self, "body_json_cache"):
            return self.body_json_cache
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            self.body_json_cache = json.loads(raw or b"{}")
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format: %s" % e)
        return self.body_json_cache

    def route(self):
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        if parts[:2] == ["api", "v1"] and len(parts) > 2 and parts[2] == "watch":
            parts = parts[:2] + parts[3:]
            q["watch"] = "true"
        return url.path, parts, q

    def fault(self, method):
        """The armed fault this request meets, if any (its count taken)."""
        with LOCK:
            for f in FAULTS:
                if f.get("method", method) == method and self.path.startswith(f.get("path", "")) and f["times"] > 0:
                    f["times"] -= 1
                    return dict(f)
        return None

    def dispatch(self, method):
        self.__dict__.pop("body_json_cache", None)  # one handler serves a connection's requests
        if self.path.startswith("/fake/faults"):
            if method == "POST":
                with LOCK:
                    FAULTS.append(dict(self.body_json(), times=int(self.body_json_cache.get("times", 1))))
            with LOCK:
                return self.send_json(200, {"faults": [f for f in FAULTS if f["times"] > 0]})
        f = self.fault(method)
        if f and not f.get("lose_answer"):
            if int(self.headers.get("Content-Length") or 0):
                self.rfile.read(int(self.headers["Content-Length"]))
            reason = {429: "TooManyRequests", 500: "InternalError"}.get(f.get("status"), "ServiceUnavailable")
            e = ApiError(f.get("status", 503), reason, "injected fault")
            body = json.dumps(e.body()).encode()
            self.send_response(e.code)
            self.send_header("Content-Type", "application/json")
            if f.get("retry_after") is not None:
                self.send_header("Retry-After", str(f["retry_after"]))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if f and f.get("lose_answer"):
            self.wfile = LostAnswer()  # the request is carried out; its answer goes nowhere
            self.close_connection = True
        try:
            if not self.authenticated():
                raise ApiError(401, "Unauthorized", "Unauthorized")
            path, parts, q = self.route()
            if path == "/version":
                return self.send_json(200, {"major": "1", "minor": "29", "gitVersion": "v1.29.0-tsum-fake",
                                            "platform": "linux/amd64"})
            if path == "/api":
                return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server.server_address[0]}]})
            if path == "/apis":
                return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
            if path == "/api/v1":
                return self.send_json(200, API_RESOURCES)
            if parts[:2] != ["api", "v1"] or len(parts) < 3:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            rest = parts[2:]
            ns = None
            if rest[0] == "namespaces" and len(rest) >= 3:
                ns, rest = rest[1], rest[2:]
                with LOCK:
                    if (None, ns) not in STATE["objects"]["namespaces"]:
                        raise not_found("namespaces", ns)
            kind = rest[0]
            if kind not in NAMESPACED and kind not in CLUSTER:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            name = rest[1] if len(rest) > 1 else None
            sub = rest[2] if len(rest) > 2 else None
            if kind in NAMESPACED and name and ns is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self.serve(method, kind, ns if kind in NAMESPACED else None, name, sub, q)
        except ApiError as e:
            self.send_json(e.code, e.body())

    def serve(self, method, kind, ns, name, sub, q):
        if method == "GET" and name is None and str(q.get("watch", "")).lower() in ("true", "1"):
            return self.watch(kind, ns, q)
        if method == "GET" and sub == "log":
            return self.pod_log(ns, name)
        with LOCK:
            objs = STATE["objects"][kind]
            if method == "GET" and name is None:
                items = [copy.deepcopy(o) for o in select(kind, ns, q)]
                kname = (NAMESPACED.get(kind) or CLUSTER[kind]) + "List"
                return self.send_json(200, {"kind": kname, "apiVersion": "v1",
                                            "metadata": {"resourceVersion": str(STATE["rv"])}, "items": items})
            if method == "GET":
                if (ns, name) not in objs:
                    raise not_found(kind, name)
                return self.send_json(200, objs[(ns, name)])
            if method == "POST" and name is None and kind in NAMESPACED:
                obj = self.body_json()
                if obj.get("kind") not in (None, NAMESPACED[kind]):
                    raise ApiError(400, "BadRequest", "the kind %s does not match %s" % (obj.get("kind"), NAMESPACED[kind]))
                obj.setdefault("metadata", {})
                oname = obj["metadata"].get("name", "")
                if obj["metadata"].get("namespace") not in (None, ns):
                    raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
                causes = CHECKS[kind](obj)
                if causes:
                    raise invalid(NAMESPACED[kind], oname, causes)
                if (ns, oname) in objs:
                    raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (kind, oname),
                                   {"name": oname, "kind": kind})
                obj["apiVersion"], obj["kind"] = "v1", NAMESPACED[kind]
                if kind == "secrets":
                    data = obj.setdefault("data", {})
                    for k, v in (obj.pop("stringData", None) or {}).items():
                        data[k] = base64.b64encode(v.encode()).decode()
                    obj.setdefault("type", "Opaque")
                if kind == "pods":
                    obj["status"] = {"phase": "Pending", "qosClass": "Guaranteed"}
                    obj["spec"].setdefault("restartPolicy", "Always")
                    obj["spec"].setdefault("terminationGracePeriodSeconds", 30)
                if kind == "services":
                    obj.setdefault("spec", {}).setdefault("clusterIP", "10.96.0.%d" % (len(objs) + 10))
                    obj["status"] = {"loadBalancer": {}}
                put_new(kind, ns, obj)
                return self.send_json(201, obj)
            if method in ("PUT", "PATCH") and name:
                if (ns, name) not in objs:
                    raise not_found(kind, name)
                cur = objs[(ns, name)]
                new = self.body_json()
                rv = (new.get("metadata") or {}).get("resourceVersion")
                if method == "PUT" and rv and rv != cur["metadata"]["resourceVersion"]:
                    raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been '
                                   "modified; please apply your changes to the latest version and try again" % (kind, name),
                                   {"name": name, "kind": kind})
                meta = new.get("metadata") or {}
                for f in ("labels", "annotations"):
                    if f in meta:
                        merged = dict(cur["metadata"].get(f) or {}) if method == "PATCH" else {}
                        merged.update({k: v for k, v in (meta[f] or {}).items() if v is not None})
                        for k, v in (meta[f] or {}).items():
                            if v is None:
                                merged.pop(k, None)
                        cur["metadata"][f] = merged
                causes = CHECKS.get(kind, lambda o: [])(cur)
                if causes:
                    raise invalid(NAMESPACED.get(kind, kind), name, causes)
                bump(kind, "MODIFIED", cur)
                return self.send_json(200, cur)
            if method == "DELETE" and name:
                if (ns, name) not in objs:
                    raise not_found(kind, name)
                if kind == "pods":
                    body = self.body_json() if int(self.headers.get("Content-Length") or 0) else {}
                    grace = int(q.get("gracePeriodSeconds", body.get("gracePeriodSeconds",
                                      objs[(ns, name)]["spec"].get("terminationGracePeriodSeconds", 30))))
                    return self.send_json(200, copy.deepcopy(delete_pod((ns, name), grace)))
                return self.send_json(200, remove(kind, (ns, name)))
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def pod_log(self, ns, name):
        with LOCK:
            p = STATE["objects"]["pods"].get((ns, name))
            if p is None:
                raise not_found("pods", name)
            cid = ((p["status"].get("containerStatuses") or [{}])[0].get("containerID") or "").replace("docker://", "")
        out = docker("logs", cid, timeout=30)[1] if ARGS.docker_network and cid else ""
        body = out.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, kind, ns, q):
        timeout = float(q.get("timeoutSeconds") or 1800)
        end = time.time() + timeout
        with LOCK:
            since = q.get("resourceVersion")
            if since in (None, "", "0"):
                start = STATE["rv"]
                initial = [("ADDED", copy.deepcopy(o)) for o in select(kind, ns, q)]
            else:
                start = int(since)
                oldest = STATE["log"][0][0] if STATE["log"] else STATE["rv"] + 1
                initial = None
                if start < oldest - 1 and start < STATE["rv"]:
                    initial = "expired"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if initial == "expired":
                self.chunk({"type": "ERROR", "object": ApiError(
                    410, "Expired", "too old resource version: %s (%d)" % (since, STATE["rv"])).body()})
            else:
                for ev, o in initial or []:
                    self.chunk({"type": ev, "object": o})
                sent = start
                while time.time() < end and not STOPPING.is_set():
                    with LOCK:
                        if STATE["log"] and sent < STATE["log"][0][0] - 1:  # fell behind the log: as the real one
                            self.chunk({"type": "ERROR", "object": ApiError(
                                410, "Expired", "too old resource version: %d (%d)" % (sent, STATE["rv"])).body()})
                            break
                        out = [(rv, ev, o) for rv, k, ev, o in STATE["log"] if rv > sent and k == kind]
                        if not out:
                            CHANGED.wait(min(1.0, max(0.0, end - time.time())))
                            continue
                    for rv, ev, o in out:
                        sent = rv
                        if (ns is None or o["metadata"].get("namespace") == ns) and \
                                selector_matches(q.get("labelSelector"), o["metadata"].get("labels") or {}) and \
                                fields_match(q.get("fieldSelector"), o):
                            self.chunk({"type": ev, "object": o})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        self.close_connection = True

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")


def load_nodes(path):
    with open(path) as f:
        nodes = json.load(f)
    for i, n in enumerate(nodes):
        labels = {"kubernetes.io/hostname": n["name"], "kubernetes.io/os": "linux"}
        labels.update(n.get("labels") or {})
        alloc = {"cpu": str(n.get("cpu", "2")), "memory": str(n.get("memory", "4Gi")), "pods": "110"}
        if n.get("gpus"):
            alloc["nvidia.com/gpu"] = str(n["gpus"])
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n["name"], "labels": labels},
                "spec": {"taints": n.get("taints") or [], "unschedulable": bool(n.get("unschedulable"))},
                "status": {"capacity": dict(alloc), "allocatable": alloc,
                           "conditions": [{"type": "Ready", "status": "False" if n.get("not_ready") else "True",
                                           "reason": "KubeletReady", "lastHeartbeatTime": now_rfc3339()}],
                           "addresses": [{"type": "InternalIP", "address": "192.168.77.%d" % (i + 10)},
                                         {"type": "Hostname", "address": n["name"]}],
                           "nodeInfo": {"kubeletVersion": "v1.29.0-tsum-fake", "kubeProxyVersion": "v1.29.0-tsum-fake",
                                        "containerRuntimeVersion": "docker://20.10", "kernelVersion": os.uname().release,
                                        "osImage": "Debian GNU/Linux 12 (bookworm)", "architecture": "amd64",
                                        "operatingSystem": "linux", "bootID": str(uuid.uuid4()),
                                        "machineID": uuid.uuid4().hex, "systemUUID": str(uuid.uuid4())}}}
        put_new("nodes", None, node)
        if n.get("pods"):  # Pods already bound to the node: a DaemonSet's ("daemonset": true) or another tenant's
            for j, req in enumerate(n["pods"]):
                req = dict(req)
                meta = {"name": "%s-other-%d" % (n["name"], j), "labels": {"app": "other"}}
                if req.pop("daemonset", False):
                    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                                "uid": str(uuid.uuid4()), "controller": True}]
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                       "spec": {"nodeName": n["name"], "containers": [{"name": "c", "image": "other",
                                                                       "resources": {"requests": req}}]},
                       "status": {"phase": "Running"}}
                put_new("pods", "kube-system", pod)


def cleanup():
    if ARGS.docker_network:
        rc, out = docker("ps", "-aq", "--filter", "label=tsum-fake-kube=" + OWNER, timeout=30)
        ids = out.split() if rc == 0 else []
        if ids:
            docker("rm", "-f", "-v", *ids, timeout=120)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca")
    ap.add_argument("--token")
    ap.add_argument("--namespaces", default="default,kube-system")
    ap.add_argument("--docker-network")
    ap.add_argument("--docker-subnet", default="10.231.5")
    ap.add_argument("--docker-host")
    ap.add_argument("--watch-log", type=int, default=2000)
    ap.add_argument("--verbose", action="store_true")
    ARGS = ap.parse_args()
    with LOCK:
        for ns in ARGS.namespaces.split(","):
            put_new("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                                         "status": {"phase": "Active"}})
        load_nodes(ARGS.nodes)
    server = ThreadingHTTPServer((ARGS.listen, ARGS.port), Handler)
    server.daemon_threads = True
    if ARGS.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        if ARGS.client_ca:
            ctx.load_verify_locations(ARGS.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        server.socket = ctx.wrap_socket(server.socket, server_side=True)

    def stop(*_):
        STOPPING.set()
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=scheduler_loop, daemon=True).start()
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, ARGS.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
