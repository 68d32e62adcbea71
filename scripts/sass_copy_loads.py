#!/usr/bin/env python3
"""Counts, per kernel, the cp.async copies (LDGSTS) whose source address or predicate comes
from a shared-memory load (LDS) issued since the previous copy. Each such copy waits for
a shared-memory round trip, and the copies' asm (a "memory" clobber) keeps the compiler
from hoisting those loads: a gather that loads each row's address right before the row's
copies pays one round trip per row, in series (docs/perf/LOG.md session 12: v37, v38). A low count
(one per batch of rows) is what the gathers should show.
  scripts/sass_copy_loads.py [OBJ]   (default: this tree's kernels, scripts/sass_build.sh)
Needs nvcc and cuobjdump on PATH (see scripts/sass_compare.sh)."""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WINDOW = 25  # instructions looked back from a copy


def kernels(obj):
    """{kernel: [instruction text]} from cuobjdump's SASS."""
    sass = subprocess.run(["cuobjdump", "-sass", obj], capture_output=True, text=True, check=True).stdout
    out, name = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = re.match(r"\s+/\*[0-9a-f]+\*/\s+(.*?);", line)
        if m and name:
            out[name].append(re.sub(r"^@!?U?P\w+\s+", "", m.group(1).strip()))
    return out


def registers(text):
    return set(re.findall(r"\bR(\d+)\b", text))


def fed_by_load(code, i):
    """Whether copy i's operands depend, through ALU steps, on an LDS since the previous copy."""
    operands = code[i].split(None, 1)[1]
    wanted = registers(operands.split(",", 1)[1])  # all but the destination address
    for j in range(i - 1, max(-1, i - WINDOW), -1):
        if "LDGSTS" in code[j]:
            return False
        parts = code[j].split(None, 1)
        if len(parts) < 2:
            continue
        op, args = parts
        fields = args.split(",")
        if registers(fields[0]) & wanted:
            if op.startswith("LDS"):
                return True
            wanted |= registers(",".join(fields[1:]))
    return False


def main():
    obj = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        if obj is None:
            obj = os.path.join(tmp, "launch.o")
            subprocess.run([os.path.join(ROOT, "scripts", "sass_build.sh"), ROOT, obj], check=True)
        for name, code in kernels(obj).items():
            copies = [i for i, ins in enumerate(code) if ins.startswith("LDGSTS")]
            fed = sum(fed_by_load(code, i) for i in copies)
            print("%4d of %4d copies wait for a shared-memory load  %s" % (fed, len(copies), name))


if __name__ == "__main__":
    main()
