#!/usr/bin/env python3
"""Where a kernel's warps stall, from the per-SASS-line CSV that `gpu-check.sh profile`
writes (sass_NAME.log: `ncu --page source --csv --print-source sass`).

  scripts/sass_stalls.py sass_bf16_h64.log [--top N] [--split LINE,LINE...]

Prints the stall reasons over the whole kernel, then per region (the SASS lines split at
the given line numbers, e.g. where the producer's code starts), then the N lines with the
most samples with their two main reasons, and the instructions executed per opcode in
each region (how many issue slots the address arithmetic takes)."""
import argparse
import collections
import csv
import sys


def load(path):
    rows = list(csv.reader(open(path, newline="")))
    header = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    return rows[header], [r for r in rows[header + 1:] if len(r) == len(rows[header])]


def number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--split", default="", help="line numbers where regions start")
    args = ap.parse_args(argv)
    hdr, data = load(args.csv)
    samples = hdr.index("Warp Stall Sampling (All Samples)")
    executed = hdr.index("Instructions Executed")
    reasons = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    cuts = [0] + sorted(int(x) for x in args.split.split(",") if x) + [len(data)]
    total = sum(number(r[samples]) for r in data) or 1.0

    def summary(rows):
        agg = collections.Counter()
        for r in rows:
            for i in reasons:
                agg[hdr[i][6:]] += number(r[i])
        n = sum(agg.values()) or 1.0
        return ", ".join(f"{k} {v / n * 100:.1f}%" for k, v in agg.most_common(8))

    print(f"all: {int(total)} samples; {summary(data)}")
    for a, b in zip(cuts, cuts[1:]):
        if len(cuts) > 2:
            part = data[a:b]
            share = sum(number(r[samples]) for r in part) / total * 100
            print(f"lines {a}-{b - 1}: {share:.1f}% of samples; {summary(part)}")
            ops = collections.Counter()
            for r in part:
                words = r[1].split()
                op = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words or ["?"])[0]
                ops[op.split(".")[0]] += number(r[executed])
            print("  executed: " + ", ".join(f"{k} {int(v)}" for k, v in ops.most_common(12)))
    print(f"top {args.top} lines (line, share of samples, instruction, main reasons):")
    order = sorted(range(len(data)), key=lambda j: -number(data[j][samples]))[: args.top]
    for j in sorted(order):
        r = data[j]
        main2 = sorted(((number(r[i]), hdr[i][6:]) for i in reasons), reverse=True)[:2]
        why = " ".join(f"{n}:{v / total * 100:.1f}" for v, n in main2 if v > 0)
        print(f"{j:6d} {number(r[samples]) / total * 100:5.1f}% {r[1].strip()[:60]:60s} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
