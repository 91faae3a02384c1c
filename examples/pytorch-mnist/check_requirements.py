#!/usr/bin/python3
"""The folder job's setup (job.yaml): makes sure every module requirements.txt names imports on this machine.

What is missing is installed with pip into .deps/ in the folder (which tsum keeps, with the folder, for the next
run on the same machine); what the machine has already (Debian's python3-torch) is used as it is. It writes
.deps/ready, naming what it found, which train.py's run does not need but a user can read in the log.
"""
import importlib
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
deps = os.path.join(here, ".deps")
names = [l.split("#")[0].strip() for l in open(os.path.join(here, "requirements.txt"))]
names = [n for n in names if n]
missing = []
found = []
for n in names:
    try:
        m = importlib.import_module(n)
        found.append(f"{n} {getattr(m, '__version__', '?')} from {os.path.dirname(m.__file__)}")
    except ImportError:
        missing.append(n)
for f in found:
    print("have", f)
if missing:
    print("installing", " ".join(missing), "into .deps/")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--target", deps, *missing])
os.makedirs(deps, exist_ok=True)
with open(os.path.join(deps, "ready"), "w") as f:
    f.write("\n".join(found + [f"{n} (pip)" for n in missing]) + "\n")
print("setup done")
