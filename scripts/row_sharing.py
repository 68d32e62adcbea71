#!/usr/bin/env python3
"""How many KV rows the tokens of a CTA could share on the engine presets (issue 42's
"gather a row once for the tokens of a CTA that share it"), counted without a GPU.

The index sets are built as tools/workload.c's fill_request builds them: token at position
pos reads its window (the min(pos + 1, 128) positions up to pos) and k = min(topk,
(pos + 1) / 4) distinct compressed entries drawn at random, in a random order, from the
(pos + 1) / 4 available.

  scripts/row_sharing.py [--groups 2,4,8,16] [--seed N]

Prints per preset and group size G (G consecutive tokens of a request in one CTA):
  union      unique rows of the group / rows its tokens read (any sharing, any order)
  aligned    rows gathered a token when only the window is shared, in 64-row tiles aligned
             to absolute positions (the form DESIGN section 2's rule allows: a token's
             tiles then depend on its own position only), against rows it reads
  compute    rows a token computes in that form (partial window tiles are computed whole),
             against rows it reads
"""
import argparse
import random

WINDOW, RATIO, TILE = 128, 4, 64
PRESETS = (("v41-flash-tp4", 512), ("v4-pro-tp8", 1024))
SHAPES = ((0, 8192), (65536, 4096))  # (prefix, query tokens)


def token_rows(pos, topk, rng):
    n = min(pos + 1, WINDOW)
    window = [("w", pos - n + 1 + j) for j in range(n)]
    available = (pos + 1) // RATIO
    k = min(available, topk)
    compressed = [("c", e) for e in rng.sample(range(available), k)] if k else []
    return window, compressed


def aligned_tiles(pos):
    """The absolute 64-row blocks a token's window touches."""
    n = min(pos + 1, WINDOW)
    first = pos - n + 1
    return set(range(first // TILE, pos // TILE + 1))


def count(prefix, tokens, topk, group, seed):
    rng = random.Random(seed)
    rows = [token_rows(prefix + i, topk, rng) for i in range(tokens)]
    read = union = gathered = computed = 0
    for g in range(0, tokens, group):
        members = range(g, min(g + group, tokens))
        read += sum(len(w) + len(c) for w, c in (rows[i] for i in members))
        union += len(set().union(*(set(w) | set(c) for w, c in (rows[i] for i in members))))
        blocks = set().union(*(aligned_tiles(prefix + i) for i in members))
        gathered += TILE * len(blocks) + sum(len(rows[i][1]) for i in members)
        computed += sum(TILE * len(aligned_tiles(prefix + i)) + len(rows[i][1]) for i in members)
    return union / read, gathered / read, computed / read


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", default="2,4,8,16")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    groups = [int(g) for g in args.groups.split(",")]
    print("| preset | shape | G | union | aligned | compute |")
    print("|---|---|---|---|---|---|")
    for name, topk in PRESETS:
        for prefix, tokens in SHAPES:
            for g in groups:
                u, a, c = count(prefix, tokens, topk, g, args.seed)
                print(f"| {name} | q{tokens}+p{prefix} | {g} | {u:.3f} | {a:.3f} | {c:.3f} |")


if __name__ == "__main__":
    main()
