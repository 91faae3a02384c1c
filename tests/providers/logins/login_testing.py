"""What the login tests share: running tsum-login-probe over generated cases, and the checks of `tsumd check`
against a fake cloud (one line each, "ok" or "FAIL", and a non-zero exit when one failed)."""
import json
import os
import re
import subprocess
import sys


def arguments(default_count):
    """A differential test's arguments: <tsum-login-probe> [count] [seed]."""
    if len(sys.argv) < 2:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} <tsum-login-probe> [count] [seed]")
    count = int(sys.argv[2]) if len(sys.argv) > 2 else default_count
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20261202
    return sys.argv[1], count, seed


def failed_alike(want, got, prefix, fixes):
    """Both refused the login, and tsum's one line names the cloud and a fix (one of `fixes`)."""
    return want["error"] and got["error"] and got["detail"].startswith(prefix) and any(f in got["detail"] for f in fixes)


def compare(cases, expected, answers, same, reference):
    """Counts the cases where tsum's answer and the reference's differ (not same(want, got)), printing the first
    five, tallies the reference's answers by kind, and exits non-zero on any difference."""
    differences, kinds = 0, {}
    for case, want, got in zip(cases, expected, answers):
        kind = "error" if want["error"] else want.get("kind", "resolved")
        kinds[kind] = kinds.get(kind, 0) + 1
        if not same(want, got):
            differences += 1
            if differences <= 5:
                print(f"case: {json.dumps(case)}\n  {reference}: {json.dumps(want)}\n  tsum: {json.dumps(got)}")
    print(f"{len(cases)} cases, by {reference}'s answer: {json.dumps(kinds, sort_keys=True)}")
    verdict(differences, len(cases), reference)


def verdict(differences, count, reference):
    if differences:
        sys.exit(f"FAIL: {differences} of {count} differ from {reference}")
    print(f"OK: 0 differences from {reference}")


def probe(tool, cases, timeout=600):
    """tsum-login-probe's answer to each case (JSON lines in, JSON lines out)."""
    out = subprocess.run([tool], input="".join(json.dumps(c) + "\n" for c in cases), capture_output=True, text=True,
                         timeout=timeout)
    got = [json.loads(line) for line in out.stdout.splitlines()]
    if len(got) != len(cases):
        sys.exit(f"FAIL: {len(got)} answers for {len(cases)} cases\n{out.stderr}")
    return got


class Checks:
    def __init__(self, tsumd):
        self.tsumd = tsumd
        self.failures = []
        self.fakes = []

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            self.failures.append(what)

    def run(self, home, env, *args):
        """tsumd ARGS with HOME=home and only env (and PATH): the exit code and what it printed. No cloud's
        metadata server answers (AWS's is off; GCE's and Azure's are a closed port, refused at once) unless env says so."""
        e = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AWS_EC2_METADATA_DISABLED": "true",
             "GCE_METADATA_IP": "127.0.0.1:9", "GCE_METADATA_ROOT": "127.0.0.1:9",
             "AZURE_POD_IDENTITY_AUTHORITY_HOST": "http://127.0.0.1:9", **env}
        p = subprocess.run([self.tsumd, *args], env=e, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr

    def start_fake(self, *command):
        """Starts a fake cloud that prints "listening on URL" first; its URL."""
        fake = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.fakes.append(fake)
        line = fake.stdout.readline()
        m = re.search(r"listening on (\S+)", line)
        if not m:
            self.finish()
            sys.exit(f"FAIL: {command[0]} did not start: {line}")
        return m.group(1).rstrip("/")

    def finish(self):
        for fake in self.fakes:
            fake.terminate()
            fake.wait(timeout=10)
        if self.failures:
            sys.exit(f"FAIL: {len(self.failures)} checks")
        print("OK")


def write(path, text, mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


AZURE_CLI_CLIENT = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"


def azure_cli_login(home, subscription, tenant, user, refresh_token):
    """The files `az login` leaves for a user: azureProfile.json (the default subscription) and MSAL's token cache."""
    write(os.path.join(home, ".azure", "azureProfile.json"), json.dumps({"installationId": "i", "subscriptions": [
        {"id": subscription, "name": "Work", "state": "Enabled", "user": {"name": user, "type": "user"}, "isDefault": True,
         "tenantId": tenant, "environmentName": "AzureCloud"}]}))
    home_id = "oid-1." + tenant
    write(os.path.join(home, ".azure", "msal_token_cache.json"), json.dumps({
        "Account": {f"{home_id}-login.microsoftonline.com-{tenant}": {
            "home_account_id": home_id, "environment": "login.microsoftonline.com", "realm": tenant,
            "local_account_id": "oid-1", "username": user, "authority_type": "MSSTS"}},
        "RefreshToken": {f"{home_id}-login.microsoftonline.com-refreshtoken-{AZURE_CLI_CLIENT}--": {
            "credential_type": "RefreshToken", "secret": refresh_token, "home_account_id": home_id,
            "environment": "login.microsoftonline.com", "client_id": AZURE_CLI_CLIENT, "family_id": "1"}}}))
