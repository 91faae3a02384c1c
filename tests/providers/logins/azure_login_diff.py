#!/usr/bin/python3
"""Differential test: tsum's Azure login chain (providers/azure/azure_login.h) against azure-identity's
DefaultAzureCredential order and the az CLI's own code (Debian's python3-azure and azure-cli), in process.

Generates N seeded random logins: the environment's service principal (AZURE_CLIENT_SECRET, a PEM or PKCS#12
certificate), a user's password, workload identity (AZURE_FEDERATED_TOKEN_FILE, with AZURE_AUTHORITY_HOST and
AZURE_CLIENT_ID as AKS sets them), App Service's IDENTITY_ENDPOINT, a metadata service that has an identity
or not (AZURE_POD_IDENTITY_AUTHORITY_HOST names one of two local servers), and the Azure CLI's files under
~/.azure or AZURE_CONFIG_DIR: azureProfile.json (subscriptions, none or several default, users, service
principals, `az login --identity`), msal_token_cache.json (accounts, refresh tokens of the CLI's client and
of others, in the family or not) and service_principal_entries.json.

The reference: EnvironmentCredential picks the environment's credential; ManagedIdentityCredential (with
AZURE_CLIENT_ID, as DefaultAzureCredential makes it) picks workload identity or the metadata service, whose
token is asked for; then the CLI: its Profile's default subscription and account, its service principal
store's entry, and for a user, MSAL's cache lookup of the account and of its refresh token (the CLI's client,
else the family's). The subscription: AZURE_SUBSCRIPTION_ID, else the CLI's default, else the VM's.
tsum's own rules, where the SDK takes a login tsum refuses: a user's password and App Service's identity give
an error naming the fix. Everything else must be the same: error or not, the kind, tenant, client id, secret,
certificate, token file, identity, refresh token and user, and the subscription.
Usage: azure_login_diff.py <path to tsum-login-probe> [count] [seed]
"""
import http.server
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import threading
import urllib.parse

from login_testing import arguments, compare, failed_alike, probe

CLI_CLIENT = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"
SCOPE = "https://management.azure.com/.default"


class Imds(http.server.BaseHTTPRequestHandler):
    identity = True

    def do_GET(self):
        path = urllib.parse.urlparse(self.path).path
        if self.headers.get("Metadata") != "true":
            return self.answer(400, {"error": "invalid_request", "error_description": "Required metadata header not specified"})
        if path == "/metadata/instance/compute/subscriptionId":
            return self.answer(200, "vm-subscription")
        if not self.identity:
            return self.answer(400, {"error": "invalid_request", "error_description": "Identity not found"})
        self.answer(200, {"access_token": "mi-token", "expires_in": "3599", "expires_on": "4102444800",
                          "resource": "https://management.azure.com/", "token_type": "Bearer"})

    def answer(self, status, doc):
        body = (doc if isinstance(doc, str) else json.dumps(doc)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class NoIdentity(Imds):
    identity = False


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def write(path, text, bom=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8") as f:
        f.write(text)


def cli_files(rng, cli, i, certs):
    """The Azure CLI's files: its profile, MSAL's cache and the service principals' secrets."""
    users = [f"user{i}@example.com", f"other{i}@example.com"]
    sps = [f"sp-{i}-a", f"sp-{i}-b"]
    subs = []
    for k in range(rng.choice([0, 1, 1, 2, 2, 3])):
        r = rng.random()
        if r < 0.55:
            user = {"name": rng.choice(users), "type": "user"}
        elif r < 0.8:
            user = {"name": rng.choice(sps), "type": "servicePrincipal"}
        else:
            user = {"name": rng.choice(["systemAssignedIdentity", "userAssignedIdentity"]), "type": "servicePrincipal",
                    "assignedIdentityInfo": rng.choice(["MSI", f"MSIClient-mi-{i}", f"MSIObject-obj-{i}",
                                                        f"MSIResource-/subscriptions/s/rg/id{i}", "Other-x"])}
        subs.append({"id": f"sub-{i}-{k}", "name": f"Sub {k}", "state": "Enabled", "user": user,
                     "isDefault": rng.random() < 0.6, "tenantId": f"tenant-{i}-{k % 2}", "environmentName": "AzureCloud"})
    if subs and rng.random() < 0.75:  # as `az login` leaves it: one default
        for n, sub in enumerate(subs):
            sub["isDefault"] = n == 0
        rng.shuffle(subs)
    if rng.random() < 0.9:
        write(os.path.join(cli, "azureProfile.json"), json.dumps({"installationId": f"inst-{i}", "subscriptions": subs}),
              bom=True)
    if rng.random() < 0.8:
        accounts, tokens = {}, {}
        for n, user in enumerate(users):
            if rng.random() < 0.2:
                continue
            home = f"oid-{i}-{n}.home-tenant"
            name = user.upper() if rng.random() < 0.2 else user
            accounts[f"{home}-login.microsoftonline.com-tenant-{i}-0"] = {
                "home_account_id": home, "environment": "login.microsoftonline.com", "realm": f"tenant-{i}-0",
                "local_account_id": f"oid-{i}-{n}", "username": name, "authority_type": "MSSTS"}
            for client, family in [(CLI_CLIENT, "1"), (f"other-app-{n}", "1"), (f"lone-app-{n}", None)]:
                if rng.random() < 0.35:
                    continue
                entry = {"credential_type": "RefreshToken", "secret": f"rt-{i}-{n}-{client}", "home_account_id": home,
                         "environment": "login.microsoftonline.com", "client_id": client, "target": SCOPE}
                if family and rng.random() < 0.8:
                    entry["family_id"] = family
                tokens[f"{home}-login.microsoftonline.com-refreshtoken-{client}--{SCOPE}"] = entry
        write(os.path.join(cli, "msal_token_cache.json"), json.dumps({"Account": accounts, "RefreshToken": tokens,
                                                                      "AccessToken": {}, "IdToken": {}, "AppMetadata": {}}))
    if rng.random() < 0.7:
        entries = []
        for sp in sps:
            for tenant in (f"tenant-{i}-0", f"tenant-{i}-1"):
                if rng.random() < 0.4:
                    entry = {"client_id": sp, "tenant": tenant}
                    if rng.random() < 0.7:
                        entry["client_secret"] = f"sp-secret-{sp}-{tenant}"
                    else:
                        entry["certificate"] = certs["pem"]
                    entries.append(entry)
        rng.shuffle(entries)
        write(os.path.join(cli, "service_principal_entries.json"), json.dumps(entries))


def make_case(rng, root, i, certs, present, absent):
    home = os.path.join(root, f"h{i}")
    os.makedirs(home)
    env = {}
    cli = os.path.join(home, ".azure")
    if rng.random() < 0.2:
        cli = env["AZURE_CONFIG_DIR"] = os.path.join(home, "azcfg")
    cli_files(rng, cli, i, certs)
    r = rng.random()
    if r < 0.15:
        env.update(AZURE_TENANT_ID=f"env-tenant-{i}", AZURE_CLIENT_ID=f"env-client-{i}", AZURE_CLIENT_SECRET=f"env-secret-{i}")
    elif r < 0.25:
        kind = rng.choice(["pem", "p12", "missing"])
        env.update(AZURE_TENANT_ID=f"env-tenant-{i}", AZURE_CLIENT_ID=f"env-client-{i}",
                   AZURE_CLIENT_CERTIFICATE_PATH=certs[kind])
        if kind == "p12":
            env["AZURE_CLIENT_CERTIFICATE_PASSWORD"] = certs["password"]
    elif r < 0.3:
        env.update(AZURE_CLIENT_ID=f"env-client-{i}", AZURE_USERNAME="me@example.com", AZURE_PASSWORD="pw")
    elif r < 0.42:
        token = os.path.join(home, "var", "token")
        write(token, f"federated-{i}")
        env.update(AZURE_TENANT_ID=f"wi-tenant-{i}", AZURE_CLIENT_ID=f"wi-client-{i}", AZURE_FEDERATED_TOKEN_FILE=token,
                   AZURE_AUTHORITY_HOST="https://login.microsoftonline.com/")
    elif r < 0.45:
        env.update(IDENTITY_ENDPOINT="http://127.0.0.1:9/msi/token", IDENTITY_HEADER="h")
    else:
        # a part of a service principal only: the environment has no credential
        for name in rng.sample(["AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"], rng.randint(0, 2)):
            env[name] = f"{name.lower()}-{i}"
    if rng.random() < 0.3:
        env["AZURE_SUBSCRIPTION_ID"] = f"env-sub-{i}"
    env["AZURE_POD_IDENTITY_AUTHORITY_HOST"] = present if rng.random() < 0.3 else absent
    return {"cloud": "azure", "env": env, "home": home}


def cli_account(env, home):
    """The az CLI's default subscription (`az account show`), by its own Profile; raises CLIError."""
    from azure.cli.core._session import Session
    from azure.cli.core._profile import Profile
    session = Session(encoding="utf-8-sig")
    session.load(os.path.join(cli_dir(env, home), "azureProfile.json"))
    return Profile(cli_ctx=CLI, storage=session).get_subscription()


def cli_dir(env, home):
    return env.get("AZURE_CONFIG_DIR") or os.path.join(home, ".azure")


def cli_resolve(env, home):
    """The az CLI's default account and its credential, as its own code reads the files: a result or an error."""
    from azure.cli.core._profile import Profile
    from azure.cli.core.auth.identity import ServicePrincipalStore
    from azure.cli.core.auth.persistence import load_secret_store
    import msal
    cli = cli_dir(env, home)
    try:
        account = cli_account(env, home)
    except Exception as e:  # CLIError: not logged in, no default, several
        return {"error": True, "detail": str(e)}
    out = {"error": False, "subscription": account["id"], "tenant": account["tenantId"]}
    msi_type, msi_id = Profile._try_parse_msi_account_name(account)
    if msi_type:
        param = {"MSI": "", "MSIClient": "client_id", "MSIObject": "object_id", "MSIResource": "msi_res_id"}[msi_type]
        return {**out, "kind": "managed_identity", "identity": f"{param}={msi_id}" if param and msi_id else ""}
    user = account["user"]
    if user["type"] == "servicePrincipal":
        store = ServicePrincipalStore(load_secret_store(os.path.join(cli, "service_principal_entries"), False))
        try:
            entry = store.load_entry(user["name"], account["tenantId"])
        except Exception as e:
            return {"error": True, "detail": str(e)}
        if entry.get("client_secret"):
            return {**out, "kind": "secret", "client_id": user["name"], "secret": entry["client_secret"]}
        if entry.get("certificate"):
            return {**out, "kind": "certificate", "client_id": user["name"], "certificate": entry["certificate"]}
        return {"error": True, "detail": "no secret"}
    cache = msal.SerializableTokenCache()
    try:
        with open(os.path.join(cli, "msal_token_cache.json")) as f:
            cache.deserialize(f.read())
    except FileNotFoundError:
        return {"error": True, "detail": "no token cache"}
    accounts = [a for a in cache.find(msal.TokenCache.CredentialType.ACCOUNT)
                if a.get("username", "").lower() == user["name"].lower()]
    if not accounts:
        return {"error": True, "detail": "no account"}
    home_id = accounts[0]["home_account_id"]
    rts = cache.find(msal.TokenCache.CredentialType.REFRESH_TOKEN, query={"home_account_id": home_id, "client_id": CLI_CLIENT})
    rts = rts or cache.find(msal.TokenCache.CredentialType.REFRESH_TOKEN, query={"home_account_id": home_id, "family_id": "1"})
    if not rts:
        return {"error": True, "detail": "no refresh token"}
    return {**out, "kind": "cli_user", "username": user["name"], "refresh_token": rts[0]["secret"]}


def sdk_resolve(case):
    from azure.identity import CredentialUnavailableError, EnvironmentCredential, ManagedIdentityCredential
    env, home = case["env"], case["home"]
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        os.environ["HOME"] = home
        try:
            inner = EnvironmentCredential()._credential
        except (ValueError, OSError) as e:
            return {"error": True, "detail": str(e)}
        out = None
        if inner is not None:
            name = type(inner).__name__
            if name == "UsernamePasswordCredential":
                return {"error": True, "detail": "password", "own": "AZURE_USERNAME"}
            out = {"error": False, "kind": "secret" if name == "ClientSecretCredential" else "certificate",
                   "tenant": env["AZURE_TENANT_ID"], "client_id": env["AZURE_CLIENT_ID"]}
            if out["kind"] == "secret":
                out["secret"] = env["AZURE_CLIENT_SECRET"]
            else:
                out["certificate"] = env["AZURE_CLIENT_CERTIFICATE_PATH"]
        else:
            mi = ManagedIdentityCredential(client_id=env.get("AZURE_CLIENT_ID"))
            name = type(mi._credential).__name__
            if name == "TokenExchangeCredential":
                out = {"error": False, "kind": "workload_identity", "tenant": env["AZURE_TENANT_ID"],
                       "client_id": env["AZURE_CLIENT_ID"], "token_file": env["AZURE_FEDERATED_TOKEN_FILE"]}
            elif name != "ImdsCredential":
                return {"error": True, "detail": name, "own": "IDENTITY_ENDPOINT"}
            else:
                try:
                    mi.get_token(SCOPE)
                    client = env.get("AZURE_CLIENT_ID")
                    out = {"error": False, "kind": "managed_identity", "identity": f"client_id={client}" if client else ""}
                except CredentialUnavailableError:
                    cli = cli_resolve(env, home)
                    if cli["error"]:
                        return cli
                    out = cli
        if env.get("AZURE_SUBSCRIPTION_ID"):
            out["subscription"] = env["AZURE_SUBSCRIPTION_ID"]
        elif "subscription" not in out:
            try:
                out["subscription"] = cli_account(env, home)["id"]
            except Exception:
                out["subscription"] = "vm-subscription" if out["kind"] == "managed_identity" else ""
        return out
    finally:
        os.environ.clear()
        os.environ.update(saved)


KEYS = {"secret": ["tenant", "client_id", "secret"], "certificate": ["tenant", "client_id", "certificate"],
        "workload_identity": ["tenant", "client_id", "token_file"], "managed_identity": ["identity"],
        "cli_user": ["tenant", "username", "refresh_token"]}


def same(want, got):
    if want["error"] or got["error"]:
        fixes = [want["own"]] if "own" in want else ["run '", "set "]
        return failed_alike(want, got, "azure: ", fixes)
    return all(want.get(k) == got.get(k) for k in ["kind", "subscription"] + KEYS[want["kind"]])


def certificates(root):
    pem, key, p12 = (os.path.join(root, n) for n in ("cert.pem", "key.pem", "cert.p12"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", pem, "-days", "2",
                    "-subj", "/CN=tsum-test"], check=True, capture_output=True)
    subprocess.run(["openssl", "pkcs12", "-export", "-in", pem, "-inkey", key, "-out", p12, "-passout", "pass:p12pw"],
                   check=True, capture_output=True)
    with open(pem, "a") as f, open(key) as k:
        f.write(k.read())  # azure-identity's PEM: the certificate and its key in one file
    return {"pem": pem, "p12": p12, "password": "p12pw", "missing": os.path.join(root, "nothing.pem")}


def main():
    tool, count, seed = arguments(300)
    rng = random.Random(seed)
    global CLI
    try:
        import azure.identity  # noqa: F401
        import msal  # noqa: F401
        from azure.cli.core.mock import DummyCli
    except ImportError as e:
        sys.exit(f"FAIL: {e}; install python3-azure and azure-cli (scripts/install-deps.sh)")
    CLI = DummyCli()
    logging.getLogger("azure").setLevel(logging.CRITICAL)  # each credential's own log lines: not this test's output
    present_server, present = serve(Imds)
    absent_server, absent = serve(NoIdentity)
    with tempfile.TemporaryDirectory(prefix="tsum-azure-login-") as root:
        certs = certificates(root)
        cases = [make_case(rng, root, i, certs, present, absent) for i in range(count)]
        expected = [sdk_resolve(case) for case in cases]
        compare(cases, expected, probe(tool, cases), same, "azure-identity and the az CLI")
    present_server.shutdown()
    absent_server.shutdown()


if __name__ == "__main__":
    main()
