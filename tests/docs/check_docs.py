#!/usr/bin/env python3
"""The house rules a newcomer relies on (issue 40), checked on the source tree:

- README.md is a front door: at most 250 lines;
- every relative link in README.md and docs/*.md names a file that exists, and every #anchor a heading there;
- every path docs/architecture.md names in backticks exists;
- each library folder includes only the folders below it (the layer table of docs/architecture.md);
- no folder of the product holds more than 22 entries side by side (docs/architecture.md's rooms);
- no function of the product is over 100 lines (LONG would list an exception with its most lines; none today).

usage: check_docs.py SOURCE_DIR. Prints every problem; exit status 1 if there is one.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
problems = []

# --- the README and the links -------------------------------------------------------------------------------

readme = os.path.join(ROOT, "README.md")
lines = open(readme, encoding="utf-8").read().count("\n")
if lines > 250:
    problems.append(f"README.md has {lines} lines (at most 250)")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", lambda m: "" if "_" not in m.group(0) else m.group(0),
                  heading.strip())
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, fenced = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        m = re.match(r"^(#{1,6}) (.*)", line)
        if m and not fenced:
            found.add(slug(m.group(2)))
    return found


docs = [readme] + sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                         if f.endswith(".md"))
for doc in docs:
    text = open(doc, encoding="utf-8").read()
    text = re.sub(r"^    .*$", "", text, flags=re.M)  # code blocks
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        where = os.path.relpath(doc, ROOT)
        if not os.path.exists(full):
            problems.append(f"{where}: the link {target} names no file")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            problems.append(f"{where}: the link {target} names no heading of {os.path.relpath(full, ROOT)}")

# --- the architecture's paths -------------------------------------------------------------------------------

arch = os.path.join(ROOT, "docs", "architecture.md")
for token in re.findall(r"`([^`\s]+)`", open(arch, encoding="utf-8").read()):
    if re.match(r"^[a-z_]+/[\w./-]*$", token) and not token.startswith("/"):
        if not os.path.exists(os.path.join(ROOT, token)):
            problems.append(f"docs/architecture.md names {token}, which does not exist")

# --- the layers -----------------------------------------------------------------------------------------------

LAYERS = {
    "common": set(),
    "billing": {"common"},
    "sql": {"common"},
    "workload": {"common"},
    "providers": {"common", "billing"},
    "daemon": {"common", "billing", "sql", "providers"},
    "api": {"common", "billing", "sql", "providers", "daemon", "workload"},
}
for folder, allowed in LAYERS.items():
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
        for f in files:
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(dirpath, f)
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                if m and m.group(1) != folder and m.group(1) in LAYERS and m.group(1) not in allowed:
                    problems.append(f"{os.path.relpath(path, ROOT)}:{n}: {folder}/ includes {m.group(1)}/, a layer "
                                    f"above or beside it")

# --- the rooms ------------------------------------------------------------------------------------------------

MAX_ENTRIES = 22
for top in ("common", "billing", "sql", "workload", "providers", "daemon", "api", "web"):
    for dirpath, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [d for d in dirs if d not in ("node_modules", "dist")]
        entries = len(dirs) + len(files)
        if entries > MAX_ENTRIES:
            problems.append(f"{os.path.relpath(dirpath, ROOT)}/ holds {entries} entries side by side (at most "
                            f"{MAX_ENTRIES}): give the files that change together a room of their own")

# --- function length ----------------------------------------------------------------------------------------

LONG = {}  # functions allowed past MAX_LINES, each with its most lines: none
MAX_LINES = 100


def strip_code(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c + "\n" * text.count("\n", i, j))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of every function body at namespace or class level."""
    text = strip_code(open(path, encoding="utf-8", errors="replace").read())
    stack, found = [], []
    line, last = 1, 0  # last: where the text before the next brace begins
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[last:i]
            outer = all(kind in ("namespace", "class") for kind, _, _ in stack)
            if re.search(r"\bnamespace\b[^;()]*$", head) or re.search(r'\bextern\s+""\s*$', head):
                kind = "namespace"
            elif re.search(r"\b(class|struct|union|enum)\b[^;()]*$", head) and ")" not in head.split("\n")[-1]:
                kind = "class"
            elif outer and ")" in head:
                kind = "function"
            else:
                kind = "block"
            name = ""
            if kind == "function":
                m = re.findall(r"([~\w]+)\s*\(", head)
                name = m[0] if m else "?"
                if name in ("if", "for", "while", "switch", "catch"):
                    kind = "block"
            stack.append((kind, line, name))
            last = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    found.append((name, start, line - start + 1))
            last = i + 1
        elif c == ";":
            last = i + 1
    return found


for folder in ("common", "billing", "sql", "providers", "daemon", "api", "workload"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
        for f in files:
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, ROOT)
            for name, start, count in functions(path):
                key = f"{rel}:{name}"
                limit = LONG.get(key, MAX_LINES)
                if count > limit:
                    problems.append(f"{rel}:{start}: {name} is {count} lines (at most {limit})")

for p in problems:
    print(p)
print(f"check_docs: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
