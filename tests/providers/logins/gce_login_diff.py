#!/usr/bin/python3
"""Differential test: tsum's Application Default Credentials (providers/gce/gce_login.h) against google-auth's
(Debian's python3-google-auth, google.auth.default()).

Generates N seeded random logins: GOOGLE_APPLICATION_CREDENTIALS naming a service account's key (with or
without project_id), an authorized user's file, a broken or missing file; gcloud's ADC file
(application_default_credentials.json under ~/.config/gcloud or CLOUDSDK_CONFIG); gcloud configurations with a
[core] project, an active_config file, CLOUDSDK_ACTIVE_CONFIG_NAME, CLOUDSDK_CORE_PROJECT; GOOGLE_CLOUD_PROJECT /
GCLOUD_PROJECT; and a metadata server that answers as Google's or does not (two local servers named by
GCE_METADATA_IP and GCE_METADATA_ROOT). google-auth asks gcloud for the project of gcloud's ADC file: a `gcloud`
on PATH answers `config config-helper` from the same configuration files, in gcloud's documented order, with
Python's configparser. google-auth 1.5.1 reads the metadata variables at import: the test sets GCE_METADATA_ROOT
before it imports google-auth, and the ping's address from each case's environment, as a fresh process would.

They must agree on: error or not, the kind of credentials (service account, authorized user, metadata server),
the account's email or the client id, and the project. Where google-auth finds no project, tsum may take gcloud's
configured one (its own rule, documented): that and nothing else.
Usage: gce_login_diff.py <path to tsum-login-probe> [count] [seed]
"""
import configparser
import http.server
import json
import os
import random
import subprocess
import sys
import tempfile
import threading

from login_testing import arguments, compare, failed_alike, probe


GCLOUD = r'''#!/usr/bin/python3
"""gcloud config config-helper --format json, in gcloud's order: CLOUDSDK_CORE_PROJECT, else [core] project of
the active configuration (CLOUDSDK_ACTIVE_CONFIG_NAME, else the active_config file, else "default")."""
import configparser, json, os, sys
if sys.argv[1:3] != ["config", "config-helper"]:
    sys.exit(2)
root = os.environ.get("CLOUDSDK_CONFIG") or os.path.join(os.path.expanduser("~"), ".config", "gcloud")
project = os.environ.get("CLOUDSDK_CORE_PROJECT")
if not project:
    name = os.environ.get("CLOUDSDK_ACTIVE_CONFIG_NAME")
    if not name and os.path.isfile(os.path.join(root, "active_config")):
        name = open(os.path.join(root, "active_config")).read().strip()
    p = configparser.RawConfigParser()
    p.read(os.path.join(root, "configurations", "config_" + (name or "default")))
    project = p.get("core", "project", fallback=None)
core = {"project": project} if project else {}
print(json.dumps({"configuration": {"properties": {"core": core}}}))
'''


class Metadata(http.server.BaseHTTPRequestHandler):
    present = True

    def do_GET(self):
        if not self.present:
            self.send_response(404)
            self.end_headers()
            return
        body = b"meta-proj" if self.path == "/computeMetadata/v1/project/project-id" else b"ok"
        self.send_response(200)
        self.send_header("Metadata-Flavor", "Google")
        self.send_header("Content-Type", "application/text")  # as Google's server says
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Absent(Metadata):
    present = False


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def key_file(rng, pem, i):
    doc = {"type": "service_account", "private_key_id": f"k{i}", "private_key": pem,
           "client_email": f"sa{i}@proj-{i}.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token"}
    if rng.random() < 0.6:
        doc["project_id"] = f"key-proj-{i}"
    if rng.random() < 0.05:
        del doc["client_email"]
    return doc


def user_file(rng, i):
    doc = {"type": "authorized_user", "client_id": f"{i}-app.apps.googleusercontent.com",
           "client_secret": f"secret-{i}", "refresh_token": f"1//refresh-{i}"}
    if rng.random() < 0.05:
        del doc[rng.choice(["client_id", "client_secret", "refresh_token"])]
    return doc


def credentials_text(rng, pem, i):
    r = rng.random()
    if r < 0.45:
        return json.dumps(key_file(rng, pem, i))
    if r < 0.9:
        return json.dumps(user_file(rng, i))
    if r < 0.95:
        return "{not json"
    return json.dumps({"type": "external_account"})


def make_case(rng, root, pem, i, present, absent):
    home = os.path.join(root, f"h{i}")
    os.makedirs(home)
    env = {}
    gcloud = os.path.join(home, ".config", "gcloud")
    if rng.random() < 0.2:
        gcloud = env["CLOUDSDK_CONFIG"] = os.path.join(home, "gc")
    if rng.random() < 0.5:
        write(os.path.join(gcloud, "application_default_credentials.json"), credentials_text(rng, pem, i))
    if rng.random() < 0.3:
        path = os.path.join(home, "keys", "key.json")
        env["GOOGLE_APPLICATION_CREDENTIALS"] = path
        if rng.random() < 0.9:
            write(path, credentials_text(rng, pem, i + 10000))
    names = ["default", "work", "dev"]
    for name in rng.sample(names, rng.randint(0, 3)):
        text = "[core]\naccount = me@example.com\n"
        if rng.random() < 0.8:
            text += f"project = {name}-proj-{i}\n"
        write(os.path.join(gcloud, "configurations", f"config_{name}"), text)
    if rng.random() < 0.4:
        write(os.path.join(gcloud, "active_config"), rng.choice(names) + "\n")
    if rng.random() < 0.15:
        env["CLOUDSDK_ACTIVE_CONFIG_NAME"] = rng.choice(names)
    if rng.random() < 0.15:
        env["CLOUDSDK_CORE_PROJECT"] = f"env-core-{i}"
    if rng.random() < 0.2:
        env["GOOGLE_CLOUD_PROJECT"] = f"gcp-{i}"
    if rng.random() < 0.1:
        env["GCLOUD_PROJECT"] = f"legacy-{i}"
    env["GCE_METADATA_IP"] = present if rng.random() < 0.4 else absent
    env["GCE_METADATA_ROOT"] = present
    return {"cloud": "gce", "env": env, "home": home}


def gcloud_project(case, bindir):
    out = subprocess.run([os.path.join(bindir, "gcloud"), "config", "config-helper", "--format", "json"],
                         env={**case["env"], "HOME": case["home"]}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["configuration"]["properties"]["core"].get("project", "")


def google_resolve(case, bindir):
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(case["env"])
        os.environ["HOME"] = case["home"]
        os.environ["PATH"] = bindir + ":" + saved.get("PATH", "/usr/bin:/bin")
        metadata._METADATA_IP_ROOT = "http://{}".format(case["env"]["GCE_METADATA_IP"])
        creds, project = google.auth.default()
        cls = type(creds).__module__ + "." + type(creds).__name__
        out = {"error": False, "project": project or ""}
        if cls == "google.oauth2.service_account.Credentials":
            out.update(kind="service_account", email=creds.service_account_email)
        elif cls == "google.oauth2.credentials.Credentials":
            out.update(kind="authorized_user", client_id=creds.client_id)
        elif cls == "google.auth.compute_engine.credentials.Credentials":
            out.update(kind="metadata")
        else:
            out.update(kind=cls)
        return out
    except (google.auth.exceptions.DefaultCredentialsError, ValueError) as e:
        return {"error": True, "detail": str(e)}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main():
    tool, count, seed = arguments(300)
    rng = random.Random(seed)
    present_server, present = serve(Metadata)
    absent_server, absent = serve(Absent)
    os.environ["GCE_METADATA_ROOT"] = present  # read once, at import
    global google, metadata
    try:
        import google.auth
        import google.auth.exceptions
        import google.auth.compute_engine._metadata as metadata
    except ImportError as e:
        sys.exit(f"FAIL: google-auth is not importable ({e}); install python3-google-auth (scripts/install-deps.sh)")
    with tempfile.TemporaryDirectory(prefix="tsum-gce-login-") as root:
        bindir = os.path.join(root, "bin")
        write(os.path.join(bindir, "gcloud"), GCLOUD)
        os.chmod(os.path.join(bindir, "gcloud"), 0o755)
        pem = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                             capture_output=True, text=True, check=True).stdout
        cases = [make_case(rng, root, pem, i, present, absent) for i in range(count)]
        expected = []
        for case in cases:
            want = google_resolve(case, bindir)
            if not want["error"] and not want["project"] and want["kind"] != "metadata":
                # tsum's own rule: gcloud's configured project where google-auth finds none
                want["project"] = gcloud_project(case, bindir)
            expected.append(want)
        compare(cases, expected, probe(tool, cases),
                lambda want, got: failed_alike(want, got, "gce: ", ["run '"]) if want["error"] or got["error"] else got == want,
                "google-auth")
    present_server.shutdown()
    absent_server.shutdown()


if __name__ == "__main__":
    main()
