#!/usr/bin/env bash
# Registers, spill bytes and ptxas's warnings (C7512: wgmmas serialised) of every kernel of
# a source tree, without a GPU: what to read before spending device time on a change.
#   scripts/kernel_regs.sh [TREE]   (default: this checkout)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tree=$(cd "${1:-$root}" && pwd)
obj=$(mktemp --suffix=.o)
trap 'rm -f "$obj"' EXIT
SASS_BUILD_FLAGS="-Xptxas -v" "$root/scripts/sass_build.sh" "$tree" "$obj" 2>&1 | python3 -c '
import re, subprocess, sys
rows, kernel, spills = [], None, ""
for line in sys.stdin:
    m = re.search(r"Compiling entry function .(\S+). for", line)
    if m:
        kernel = m.group(1)
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and kernel:
        spills = m.group(1) + " / " + m.group(2)
    m = re.search(r"Used (\d+) registers", line)
    if m and kernel:
        rows.append((kernel, m.group(1), spills))
        kernel = None
    if "warning" in line or "error" in line:
        print(line.rstrip())
names = subprocess.run(["c++filt"], input="\n".join(r[0] for r in rows), capture_output=True, text=True).stdout.split("\n")
print("%-60s %4s  spill stores / loads (bytes)" % ("kernel", "regs"))
for (mangled, regs, sp), name in zip(rows, names):
    name = re.sub(r"\(smla::AttentionParams\)$", "", name or mangled)
    print("%-60s %4s  %s" % (name[:60], regs, sp))
'
