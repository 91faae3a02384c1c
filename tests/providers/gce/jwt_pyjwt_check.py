#!/usr/bin/python3
"""Cross-checks tsum's RS256 service-account JWTs with Debian's python3-jwt (PyJWT), both ways.

tsum signs -> PyJWT verifies the signature and the claims; a tampered header, payload or signature and a
different key must fail PyJWT's check. PyJWT signs -> tsum verifies; another key, HS256 and tampering must
fail tsum's check. Keys are made here with python3-cryptography. Exit 0 when every check held."""
import json
import os
import subprocess
import sys
import tempfile
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

TOOL = sys.argv[1]
AUD = "https://oauth2.googleapis.com/token"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def new_key():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def flip(token, part):
    parts = token.split(".")
    s = parts[part]
    parts[part] = s[:5] + ("A" if s[5] != "A" else "B") + s[6:]
    return ".".join(parts)


def tsum_verify(token, key_file):
    r = subprocess.run([TOOL, "verify", key_file], input=token, capture_output=True, text=True)
    return r.returncode == 0, r.stdout


with tempfile.TemporaryDirectory() as d:
    private, public = new_key()
    other_private, other_public = new_key()
    email = "runner@tsum-test.iam.gserviceaccount.com"
    sa_file = os.path.join(d, "sa.json")
    with open(sa_file, "w") as f:
        json.dump({"type": "service_account", "project_id": "tsum-test", "private_key_id": "k1",
                   "private_key": private, "client_email": email, "token_uri": AUD}, f)
    pub_file, other_pub_file = os.path.join(d, "pub.pem"), os.path.join(d, "other.pem")
    open(pub_file, "w").write(public)
    open(other_pub_file, "w").write(other_public)

    checked = 0
    for i in range(20):
        now = int(time.time()) - i * 60
        token = subprocess.run([TOOL, "sign", sa_file, AUD, SCOPE, str(now)], capture_output=True, text=True,
                               check=True).stdout.strip()
        claims = jwt.decode(token, public, algorithms=["RS256"], audience=AUD, leeway=1300)
        header = jwt.get_unverified_header(token)
        check(claims == {"iss": email, "scope": SCOPE, "aud": AUD, "iat": now, "exp": now + 3600},
              "tsum's claims as PyJWT reads them: %r" % claims)
        check(header == {"alg": "RS256", "typ": "JWT", "kid": "k1"}, "tsum's header: %r" % header)
        for part, name in ((0, "header"), (1, "payload"), (2, "signature")):
            try:
                jwt.decode(flip(token, part), public, algorithms=["RS256"], audience=AUD, leeway=1300)
                check(False, "PyJWT accepted tsum's JWT with a tampered %s" % name)
            except jwt.PyJWTError:
                pass
        try:
            jwt.decode(token, other_public, algorithms=["RS256"], audience=AUD, leeway=1300)
            check(False, "PyJWT accepted tsum's JWT under another key")
        except jwt.InvalidSignatureError:
            pass
        checked += 1

    for i in range(10):
        payload = {"iss": email, "aud": AUD, "scope": SCOPE, "iat": 1700000000 + i, "exp": 1700003600 + i, "n": "é%d" % i}
        token = jwt.encode(payload, private, algorithm="RS256", headers={"kid": "k1"})
        ok, out = tsum_verify(token, pub_file)
        check(ok and json.loads(out) == payload, "tsum verifies PyJWT's RS256 JWT: %s" % out)
        check(not tsum_verify(token, other_pub_file)[0], "tsum refuses PyJWT's JWT under another key")
        check(not tsum_verify(flip(token, 1), pub_file)[0], "tsum refuses a tampered payload")
        check(not tsum_verify(flip(token, 2), pub_file)[0], "tsum refuses a tampered signature")
        hs = jwt.encode(payload, "a shared secret", algorithm="HS256")
        check(not tsum_verify(hs, pub_file)[0], "tsum refuses HS256")
        checked += 1

print("jwt_pyjwt_check: %d rounds, %d failures" % (checked, len(failures)))
sys.exit(1 if failures else 0)
