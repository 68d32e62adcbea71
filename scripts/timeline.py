#!/usr/bin/env python3
"""Where a heads-on-M CTA's time goes: reads the marks of a SMLA_TIMELINE build
(src/cuda/common/timeline.cuh; files DIR/fp8m_*.bin and DIR/bf16m_*.bin written by
launch.cu) and prints, per file, the median of each phase over the CTAs (cycles of the SM
clock, and us at the clock measured by %globaltimer), the steady time per pair of tiles,
the fixed cost per CTA (its time minus its pairs at the steady rate), the gap between
consecutive CTAs on one SM, and where a pair's time goes (the kernel's sums of cycles,
labelled by SUMS).  usage: scripts/timeline.py DIR_OR_FILES..."""
import glob
import os
import statistics
import struct
import sys
from collections import defaultdict

MARKS = ["entry", "grid_waited", "item_found", "producer_slots", "producer_filled", "first_transposed",
         "q_landed", "first_scored", "first_pair_done", "last_pair_start", "loop_done", "finished", "pairs",
         "end_ns", "sm", "start_ns", "epilogue_sums", "epilogue_scales", "epilogue_stored"] + \
    ["sum%d" % i for i in range(16)]
M = {name: i for i, name in enumerate(MARKS)}
# Labels of the sixteen sums (marks 19-34), per kernel: the order of its enum Sum.
SUMS = {
    "bf16m": ["WG 0 waits for its halves", "WG 0 widens", "WG 0 waits for S", "producer waits for a free half",
              "producer on row addresses", "producer issues copies", "WG 1 waits for its halves", "WG 1 widens",
              "WG 0 softmax to own P.V issued", "WG 0 waits for WG 1's max", "WG 0 moves and stores P",
              "WG 0 waits for own P.V", "WG 0 waits for WG 1's P", "WG 0 other tile's P.V",
              "WG 1 waits for WG 0's max", "WG 1 waits for WG 0's P"],
    "fp8m": ["producer waits for K to land", "producer waits for a free V^T half", "producer transposes",
             "producer waits for a free K buffer", "producer refills K", "WG 0 waits for K in S",
             "WG 0 in S (waits included)", "WG 0 waits for V^T", "WG 0 from S to its P stored",
             "WG 0 from P stored to the pair's end"],
}
# (label, from mark, to mark): phases in the order a CTA meets them
PHASES = [("grid wait (PDL)", "entry", "grid_waited"),
          ("work item + barrier init", "grid_waited", "item_found"),
          ("producer: first slot ids", "item_found", "producer_slots"),
          ("producer: first pair's copies issued", "producer_slots", "producer_filled"),
          ("first V^T half done (bf16m: WG 0 widened a half)", "item_found", "first_transposed"),
          ("consumers: Q landed", "item_found", "q_landed"),
          ("consumers: first S done", "item_found", "first_scored"),
          ("consumers: rest of pair 0", "first_scored", "first_pair_done"),
          ("consumers: last pair", "last_pair_start", "loop_done"),
          ("consumers: epilogue", "loop_done", "finished"),
          ("  epilogue: row sums exchanged", "loop_done", "epilogue_sums"),
          ("  epilogue: output scales (finish_head)", "epilogue_sums", "epilogue_scales"),
          ("  epilogue: O converted and its stores issued", "epilogue_scales", "epilogue_stored"),
          ("  epilogue: after the stores", "epilogue_stored", "finished"),
          ("CTA total", "entry", "finished")]


def read(path):
    data = open(path, "rb").read()
    n = len(data) // (8 * len(MARKS))
    rows = [struct.unpack_from("<%dQ" % len(MARKS), data, i * 8 * len(MARKS)) for i in range(n)]
    return [r for r in rows if r[M["pairs"]] > 0 and r[M["finished"]] > r[M["entry"]]]


def report(path):
    rows = read(path)
    print("== %s: %d CTAs with work" % (os.path.basename(path), len(rows)))
    if not rows:
        return
    ghz = statistics.median((r[M["finished"]] - r[M["entry"]]) / max(1, r[M["end_ns"]] - r[M["start_ns"]])
                            for r in rows)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    print("  SM clock %.2f GHz; pairs per CTA (median) %d" % (ghz, med([r[M["pairs"]] for r in rows])))
    for label, a, b in PHASES:
        xs = [r[M[b]] - r[M[a]] for r in rows if r[M[b]] >= r[M[a]] > 0]
        c = med(xs)
        print("  %-40s %9.0f cycles %7.2f us" % (label, c, c / ghz / 1000))
    steady = [(r[M["last_pair_start"]] - r[M["first_pair_done"]]) / (r[M["pairs"]] - 2) for r in rows if r[M["pairs"]] > 2]
    if steady:
        s = med(steady)
        fixed = med([r[M["finished"]] - r[M["entry"]] - r[M["pairs"]] * s for r in rows])
        print("  %-40s %9.0f cycles %7.2f us" % ("steady pair (middle pairs)", s, s / ghz / 1000))
        print("  %-40s %9.0f cycles %7.2f us" % ("fixed per CTA (total - pairs x steady)", fixed, fixed / ghz / 1000))
    # The kernel's sums of cycles over a CTA's pairs (its enum Sum), per pair.
    for i, label in enumerate(SUMS.get(os.path.basename(path).split("_")[0], [])):
        xs = [r[M["sum%d" % i]] / r[M["pairs"]] for r in rows if r[M["sum%d" % i]] > 0]
        if xs:
            c = med(xs)
            print("  %-46s %9.0f cycles %7.2f us" % ("per pair: " + label, c, c / ghz / 1000))
    by_sm = defaultdict(list)
    for r in rows:
        by_sm[r[M["sm"]]].append((r[M["start_ns"]], r[M["end_ns"]]))
    gaps = []
    for spans in by_sm.values():
        spans.sort()
        gaps += [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    if gaps:
        print("  %-40s %9s        %7.2f us (median of %d; negative = overlap)" %
              ("gap between CTAs on one SM", "", med(gaps) / 1000, len(gaps)))
    combine = path + ".combine"
    if os.path.exists(combine):
        report_combine(combine, min(r[M["start_ns"]] for r in rows), max(r[M["end_ns"]] for r in rows), med)


def report_combine(path, first_start, last_end, med):
    """The split-KV combine against the attention kernel, in %globaltimer time from the
    attention kernel's first CTA start: when its CTAs start, when their grid wait ends
    (the attention kernel done), when the token is looked up, and when the last ends."""
    data = open(path, "rb").read()
    rows = [struct.unpack_from("<4Q", data, i * 32) for i in range(len(data) // 32)]
    rows = [r for r in rows if r[0] > 0]
    done = [r for r in rows if r[3] > 0]
    if not done:
        return
    us = lambda ns: (ns - first_start) / 1000
    print("  from the attention kernel's first CTA start (us): its last CTA ends %.2f;" % us(last_end))
    print("    combine: first CTA starts %.2f, grid wait ends %.2f (median), token looked up %.2f (median),"
          " last CTA ends %.2f" % (us(min(r[0] for r in rows)), us(med([r[1] for r in rows])),
                                   us(med([r[2] for r in done])), us(max(r[3] for r in done))))


def main():
    paths = []
    for arg in sys.argv[1:] or ["."]:
        paths += sorted(glob.glob(os.path.join(arg, "*.bin"))) if os.path.isdir(arg) else [arg]
    for path in paths:
        report(path)


if __name__ == "__main__":
    main()
