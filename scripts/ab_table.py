#!/usr/bin/env python3
"""The tables of an A/B run (`gpu-check.sh ab`), as docs/perf/LOG.md writes them: for each bench
argument list n, every case with tree A's value and each other tree's, the best of the
rounds (bench{n}_{tree}{round}.log under the run's $OUT), and the change against A.

  scripts/ab_table.py OUT_DIR [--column NAME]

The column is TFLOP/s where the bench prints it, else `speedup` (the --staging table);
--column picks another (columns ending in _us count lower as better)."""
import argparse
import collections
import glob
import os
import re
import sys


QUERY_TYPES = ("fp8", "bf16")


def parse(path):
    """{case: {column: text}} of one `smla bench` log. Case names hold spaces, and so may
    the last column (the --staging table's check: "agrees rel 2.5e-03"): where the first
    column is the query type, the name ends before it and the last column takes every
    field left over; otherwise a row has as many more fields than the header as its name
    has extra words."""
    rows, listed, header = collections.OrderedDict(), [], None
    for line in open(path):
        fields = line.split()
        if not fields or line.startswith("smla bench"):
            continue
        if fields[0] == "case":
            header = fields[1:]
            continue
        if header is None or len(fields) <= len(header):
            continue
        words = len(fields) - len(header)
        if header[0] == "q":
            words = next((i for i, f in enumerate(fields) if i > 0 and f in QUERY_TYPES), words)
        values = fields[words:]
        if len(values) > len(header):
            values = values[: len(header) - 1] + [" ".join(values[len(header) - 1 :])]
        listed.append((" ".join(fields[:words]), dict(zip(header, values))))
    # One list may run a case name with several query and cache types (flashmla-shapes
    # runs fp8 and bf16): those names carry their types, so no row hides another.
    names = collections.Counter(name for name, _ in listed)
    for name, row in listed:
        if names[name] > 1 and "q" in row and "kv" in row:
            name = f"{name} {row['q']}/{row['kv']}"
        rows[name] = row
    return rows, header or []


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--column")
    args = ap.parse_args(argv)
    logs = collections.defaultdict(lambda: collections.defaultdict(list))  # n -> tree -> paths
    for path in glob.glob(os.path.join(args.out_dir, "bench*_*.log")):
        m = re.fullmatch(r"bench(\d+)_([a-z])(\d+)\.log", os.path.basename(path))
        if m:
            logs[int(m.group(1))][m.group(2)].append(path)
    if not logs:
        print(f"no bench logs of an A/B run under {args.out_dir}", file=sys.stderr)
        return 1
    for n in sorted(logs):
        trees = sorted(logs[n])
        values = collections.OrderedDict()  # case -> tree -> [values]
        column = args.column
        for tree in trees:
            for path in sorted(logs[n][tree]):
                rows, header = parse(path)
                if column is None:
                    column = "TFLOP/s" if "TFLOP/s" in header else "speedup"
                for case, row in rows.items():
                    v = number(row.get(column))
                    if v is not None:
                        values.setdefault(case, {}).setdefault(tree, []).append(v)
        lower = column.endswith("_us")
        best = min if lower else max
        print(f"bench list {n} ({column}, best of {max(len(p) for p in logs[n].values())})\n")
        if not values:
            print(f"(no case has a {column} column)\n")
            continue
        print("| case | " + " | ".join(trees) + " |")
        print("|---" * (len(trees) + 1) + "|")
        for case, per_tree in values.items():
            cells = []
            base = best(per_tree["a"]) if "a" in per_tree else None
            for tree in trees:
                if tree not in per_tree:
                    cells.append("-")
                    continue
                v = best(per_tree[tree])
                cell = f"{v:g}"
                if tree != "a" and base:
                    cell += f" ({100 * (v - base) / base:+.1f}%)"
                cells.append(cell)
            print(f"| {case} | " + " | ".join(cells) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
