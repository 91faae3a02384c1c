#!/usr/bin/python3
"""The daemon's real requests and responses against its description (api/openapi.json).

The integration suite records every call it makes to a real tsumd (tests/integration/daemon_process.h, with
TSUM_API_EXCHANGES=FILE) as JSON lines. This checks each one as a validating proxy would:
  - the path and method are a documented operation, and the answer's status is one it documents;
  - a JSON answer matches that status's schema;
  - a request the daemon accepted (2xx) matches the operation: its JSON body the requestBody schema, its query
    parameters documented, the required ones present, each value of its schema's type and range.
Schemas are read as JSON Schema draft 4 (OpenAPI 3.0's base): `nullable` becomes a null type, and nothing is
loosened, so an `allOf` of an object with additionalProperties false fails as strict validators fail it.

  /usr/bin/python3 check_exchanges.py api/openapi.json MIN_OPERATIONS EXCHANGES.jsonl...
Exit 1 on any violation, or when fewer than MIN_OPERATIONS operations were exercised.
"""
import copy
import json
import re
import sys
from collections import Counter, defaultdict

import jsonschema

METHODS = ("get", "put", "post", "delete", "patch")


def openapi30_to_draft4(node):
    """OpenAPI 3.0 schema keywords as draft 4 reads them: nullable -> a null type."""
    if isinstance(node, list):
        return [openapi30_to_draft4(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: openapi30_to_draft4(v) for k, v in node.items()}
    if out.pop("nullable", False):
        if "$ref" in out or "allOf" in out or "type" not in out:
            rest = {k: v for k, v in out.items() if k not in ("description", "example", "default")}
            out = {"anyOf": [rest, {"type": "null"}]}
        else:
            t = out["type"]
            out["type"] = (t if isinstance(t, list) else [t]) + ["null"]
            if "enum" in out:
                out["enum"] = out["enum"] + [None]
    return out


def template_regex(path):
    parts = re.split(r"(\{[^}]+\})", path)
    rx = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile("^" + rx + "$")


def main():
    doc_path, floor, logs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    doc = json.load(open(doc_path))
    root = openapi30_to_draft4(copy.deepcopy(doc))
    resolver = jsonschema.RefResolver.from_schema(root)

    ops = []  # (literal segments first, so /v1/runs/{id}/samples.csv wins over a {param} match)
    for path, item in root["paths"].items():
        for method in METHODS:
            if method in item:
                ops.append((path.count("{"), path, method.upper(), template_regex(path), item[method], item))
    ops.sort(key=lambda o: (o[0], -len(o[1])))

    def errors_of(schema, value):
        v = jsonschema.Draft4Validator(schema, resolver=resolver)
        return sorted(v.iter_errors(value), key=lambda e: list(e.absolute_path))

    violations = defaultdict(Counter)
    seen_ops = set()
    exchanges = 0
    lines = []
    for log_path in logs:
        try:
            lines.extend(open(log_path, encoding="utf-8", errors="replace"))
        except OSError as e:
            print(f"{log_path}: {e}: run the suites that record it (TSUM_API_EXCHANGES) first")
            return 1
    for raw in lines:
        if not raw.strip():
            continue
        ex = json.loads(raw)
        exchanges += 1
        target = ex["target"]
        path, _, query = target.partition("?")
        status = ex["status"]
        match = next((o for o in ops if o[2] == ex["method"] and o[3].match(path)), None)
        if match is None:
            if status not in (404, 405):  # the router's answers to what is not there
                violations[f"{ex['method']} {path}"][f"undocumented operation answered {status}"] += 1
            continue
        _, tpl, method, _, op, item = match
        name = f"{method} {tpl}"
        seen_ops.add(name)
        responses = op.get("responses", {})
        spec = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")
        if spec is None:
            if status not in (413, 431, 503):  # the server's own, before any route runs (docs/api.md)
                violations[name][f"status {status} is not documented"] += 1
            continue
        body = ex.get("response")
        schema = spec.get("content", {}).get("application/json", {}).get("schema")
        if schema is not None and body is not None and ex.get("content_type", "").startswith("application/json"):
            try:
                value = json.loads(body)
            except ValueError:
                violations[name][f"{status}: the body is not JSON"] += 1
                value = None
            if value is not None:
                for e in errors_of(schema, value)[:3]:
                    where = "/".join(str(p) for p in e.absolute_path)
                    violations[name][f"response {status} at /{where}: {e.message[:200]}"] += 1
        if not 200 <= status < 300:
            continue
        # What the daemon accepted, the description must accept too.
        req_body = op.get("requestBody")
        sent = ex.get("request")
        req_schema = (req_body or {}).get("content", {}).get("application/json", {}).get("schema")
        if req_schema is not None and sent:
            try:
                value = json.loads(sent)
            except ValueError:
                value = None
            if value is not None:
                for e in errors_of(req_schema, value)[:3]:
                    where = "/".join(str(p) for p in e.absolute_path)
                    violations[name][f"request at /{where}: {e.message[:200]}"] += 1
        elif req_body and req_body.get("required") and not sent:
            violations[name]["accepted without the required body"] += 1
        params = {p["name"]: p for p in item.get("parameters", []) + op.get("parameters", []) if p["in"] == "query"}
        given = {}
        for pair in filter(None, query.split("&")):
            k, _, v = pair.partition("=")
            given[k] = v
        for k, v in given.items():
            p = params.get(k)
            if p is None:
                violations[name][f"query parameter '{k}' is not documented"] += 1
                continue
            s = p.get("schema", {})
            value = v
            if s.get("type") in ("integer", "number"):
                try:
                    value = int(v) if s["type"] == "integer" else float(v)
                except ValueError:
                    violations[name][f"query '{k}={v}' is not of type {s['type']}"] += 1
                    continue
            for e in errors_of(s, value)[:1]:
                violations[name][f"query '{k}={v}': {e.message[:200]}"] += 1
        for k, p in params.items():
            if p.get("required") and k not in given:
                violations[name][f"accepted without the required query parameter '{k}'"] += 1

    total = len({(o[2], o[1]) for o in ops})
    print(f"{exchanges} exchanges, {len(seen_ops)} of {total} operations exercised")
    missed = sorted({f"{o[2]} {o[1]}" for o in ops} - seen_ops)
    if missed:
        print("not exercised: " + ", ".join(missed))
    n = sum(sum(c.values()) for c in violations.values())
    for op_name in sorted(violations):
        for msg, count in violations[op_name].most_common():
            print(f"VIOLATION {op_name}: {msg} ({count}x)")
    print(f"{n} violations")
    if exchanges == 0:
        print("no exchange was recorded: run the suites with TSUM_API_EXCHANGES set")
        return 1
    if len(seen_ops) < floor:
        print(f"only {len(seen_ops)} operations exercised, fewer than {floor}")
        return 1
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
