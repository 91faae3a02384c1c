#!/usr/bin/python3
"""Cross-checks tsum's PS256 JWTs for Yandex IAM with Debian's python3-jwt (PyJWT, RSA-PSS through
python3-cryptography: MGF1-SHA256, salt length = digest length), both ways.

tsum signs -> PyJWT verifies signature and claims; a tampered header, payload or signature, another key, and
PyJWT's RS256 verifier must all refuse it. PyJWT signs PS256 -> tsum verifies; another key, RS256, HS256 and
tampering must fail tsum's check. Keys are made here with python3-cryptography. Exit 0 when every check held."""
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
AUD = "https://iam.api.cloud.yandex.net/iam/v1/tokens"
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


def refused_by_pyjwt(token, key, algorithms):
    try:
        jwt.decode(token, key, algorithms=algorithms, audience=AUD, leeway=1300)
        return False
    except jwt.PyJWTError:
        return True


def tsum_verify(token, key_file):
    r = subprocess.run([TOOL, "verify", key_file], input=token, capture_output=True, text=True)
    return r.returncode == 0, r.stdout


with tempfile.TemporaryDirectory() as d:
    private, public = new_key()
    other_private, other_public = new_key()
    key_file = os.path.join(d, "key.json")
    with open(key_file, "w") as f:
        json.dump({"id": "ajekey123", "service_account_id": "ajesa456", "created_at": "2024-01-01T00:00:00Z",
                   "key_algorithm": "RSA_2048", "public_key": public,
                   "private_key": "PLEASE DO NOT REMOVE THIS LINE! Yandex.Cloud SA Key ID <ajekey123>\n" + private}, f)
    pub_file, other_pub_file = os.path.join(d, "pub.pem"), os.path.join(d, "other.pem")
    open(pub_file, "w").write(public)
    open(other_pub_file, "w").write(other_public)

    checked = 0
    for i in range(20):
        now = int(time.time()) - i * 60
        token = subprocess.run([TOOL, "sign", key_file, AUD, str(now)], capture_output=True, text=True,
                               check=True).stdout.strip()
        claims = jwt.decode(token, public, algorithms=["PS256"], audience=AUD, leeway=1300)
        header = jwt.get_unverified_header(token)
        check(claims == {"iss": "ajesa456", "aud": AUD, "iat": now, "exp": now + 3600}, "claims as PyJWT reads them: %r" % claims)
        check(header == {"typ": "JWT", "alg": "PS256", "kid": "ajekey123"}, "header: %r" % header)
        for part, name in ((0, "header"), (1, "payload"), (2, "signature")):
            check(refused_by_pyjwt(flip(token, part), public, ["PS256"]), "PyJWT accepted a tampered %s" % name)
        check(refused_by_pyjwt(token, other_public, ["PS256"]), "PyJWT accepted tsum's JWT under another key")
        check(refused_by_pyjwt(token, public, ["RS256"]), "PyJWT's RS256 verifier accepted a PS256 JWT")
        checked += 1

    for i in range(10):
        payload = {"iss": "ajesa456", "aud": AUD, "iat": 1700000000 + i, "exp": 1700003600 + i, "n": "é%d" % i}
        token = jwt.encode(payload, private, algorithm="PS256", headers={"kid": "ajekey123"})
        ok, out = tsum_verify(token, pub_file)
        check(ok and json.loads(out)["claims"] == payload, "tsum verifies PyJWT's PS256 JWT: %s" % out)
        check(ok and json.loads(out)["header"]["kid"] == "ajekey123", "the kid survives: %s" % out)
        check(not tsum_verify(token, other_pub_file)[0], "tsum refuses PyJWT's JWT under another key")
        check(not tsum_verify(flip(token, 1), pub_file)[0], "tsum refuses a tampered payload")
        check(not tsum_verify(flip(token, 2), pub_file)[0], "tsum refuses a tampered signature")
        rs = jwt.encode(payload, private, algorithm="RS256")
        check(not tsum_verify(rs, pub_file)[0], "tsum refuses RS256 where PS256 is due")
        hs = jwt.encode(payload, "a shared secret", algorithm="HS256")
        check(not tsum_verify(hs, pub_file)[0], "tsum refuses HS256")
        checked += 1

print("ps256_pyjwt_check: %d rounds, %d failures" % (checked, len(failures)))
sys.exit(1 if failures else 0)
