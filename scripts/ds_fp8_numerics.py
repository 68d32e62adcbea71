#!/usr/bin/env python3
"""How accurate would fp8_ds_mla attention be on FP8 wgmma, without widening the rows?
A NumPy model of the arithmetic sketched in docs/perf/LOG.md ("Next (after session 10)",
item 3), against float64 attention on the same decoded values, for one token of 64 heads
over 640 entries (FP8 queries):

  Q.K  exact products of E4M3 values, FP32 sums, the UE8M0 block scales applied per
       64-dim block (powers of two: exact);
  P.V  per output block b, P times the rows' block scales s[n, b] as two E4M3 planes
       (hi, lo = the rest), divided by a reference scale first, which is either
         column: max_n s[n, b] per tile, or
         head:   max_n P[h, n] s[n, b] per tile and head (the sketch's choice);
       the BF16 RoPE dims as today (P in BF16).

Scales: "engine" draws row magnitudes as an engine's latents (log-normal around 1, the
scales 2^ceil(log2(amax / 448)) spread over a few powers of two); "wide" draws each
block's scale from 2^-27 .. 2^2 as `smla bench` does; "skewed" gives every other row a
block scale 2^20 times smaller and, through its RoPE part, most of the attention (the
case a per-column reference cannot hold: those rows fall below E4M3's range). Prints the
relative Frobenius error of out per case (the prefill issue's limit for FP8 queries:
1e-2).

Two more rows per case model fp8wg's 16-bit P . V: "bf16" as main (session 27's v118: V
widened times its scale in BF16, exact; P one BF16 plane) and "fp16-run" as the prepared
v120 (a block's values in FP16 times 2^(c - k), k the block's largest code so far over
the tiles, O rescaled exactly when k rises; P one FP16 plane), as "fp16-run" with P as it
is and "fp16-run-p1024" with P times 2^10 (P16). RoPE as today in all.
Usage: scripts/ds_fp8_numerics.py [--trials N]"""
import argparse

import numpy as np

HEADS, ENTRIES, TILE, NOPE, BLOCK = 64, 640, 64, 448, 64


def e4m3(x):
    """Round to E4M3 (nearest even; 3 mantissa bits, normals from 2^-6, subnormals in
    steps of 2^-9, saturating at 448)."""
    x = np.asarray(x, np.float64)
    a = np.minimum(np.abs(x), 448.0)
    exp = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = 2.0 ** (np.maximum(exp, -6) - 3)
    return np.sign(x) * np.round(a / step) * step


def bf16(x):
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def ds_rows(rng, kind):
    """Decoded fp8_ds_mla rows: (E4M3 NoPE values, their block scales, BF16 RoPE)."""
    if kind == "skewed":
        scales = np.where(np.arange(ENTRIES)[:, None] % 2, 2.0 ** -20, 1.0) * np.ones((1, NOPE // BLOCK))
        data = e4m3(rng.uniform(-448, 448, (ENTRIES, NOPE)))
        rope = np.zeros((ENTRIES, 64))
        rope[:, 0] = np.where(np.arange(ENTRIES) % 2, 1.0, -1.0) * 2.0 ** -20  # the small rows win
        return data, scales, rope
    if kind == "wide":
        scales = 2.0 ** rng.integers(-27, 3, (ENTRIES, NOPE // BLOCK)).astype(np.float64)
        data = e4m3(rng.uniform(-448, 448, (ENTRIES, NOPE)))
    else:
        rows = rng.standard_normal((ENTRIES, NOPE)) * np.exp(rng.normal(0, 1, (ENTRIES, 1)))
        amax = np.abs(rows.reshape(ENTRIES, -1, BLOCK)).max(axis=2)
        scales = 2.0 ** np.ceil(np.log2(amax / 448))
        data = e4m3(rows / np.repeat(scales, BLOCK, axis=1))
    rope = bf16(rng.standard_normal((ENTRIES, 64)))
    return data, scales, rope


def attention(q, k, scale):
    s = (q @ k.T) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p @ k) / p.sum(axis=1, keepdims=True)


def modelled(q, data, scales, rope, scale, reference):
    k_nope = data * np.repeat(scales, BLOCK, axis=1)
    s = (q[:, :NOPE] @ k_nope.T + q[:, NOPE:] @ rope.T) * scale  # exact products, FP32-like
    s = s.astype(np.float32).astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    out = np.zeros((HEADS, NOPE + 64))
    for t0 in range(0, ENTRIES, TILE):
        rows = slice(t0, t0 + TILE)
        pt = p[:, rows]
        for b in range(NOPE // BLOCK):
            ps = pt * scales[rows, b][None, :]
            if reference == "column":
                r = np.full((HEADS, 1), scales[rows, b].max())
            else:
                r = np.maximum(ps.max(axis=1, keepdims=True), np.finfo(float).tiny)
            x = ps / r * 256.0  # P'' <= 1, planes scaled into E4M3's range
            hi = e4m3(x)
            lo = e4m3(x - hi)
            cols = slice(b * BLOCK, (b + 1) * BLOCK)
            out[:, cols] += r * ((hi + lo) / 256.0) @ data[rows, cols]
        out[:, NOPE:] += bf16(pt) @ rope[rows]
    return out / p.sum(axis=1, keepdims=True)


# P's factor in the FP16 plane: 2^10 keeps p >= 2^-24 out of FP16's subnormals (without
# it, the skewed case's large rows, at p ~ e^-16, keep one or two bits).
P16 = {"fp16-run": 1.0, "fp16-run-p1024": 1024.0}


def fp16(x):
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def modelled_16bit(q, data, scales, rope, scale, form):
    """fp8wg's P . V with 16-bit operands (form "bf16" or "fp16-run", see above); the
    scores as in modelled."""
    k_nope = data * np.repeat(scales, BLOCK, axis=1)
    s = (q[:, :NOPE] @ k_nope.T + q[:, NOPE:] @ rope.T) * scale
    s = s.astype(np.float32).astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    out = np.zeros((HEADS, NOPE + 64))
    codes = np.log2(scales)
    k_run = np.full(NOPE // BLOCK, -np.inf)
    for t0 in range(0, ENTRIES, TILE):
        rows = slice(t0, t0 + TILE)
        pt = p[:, rows]
        for b in range(NOPE // BLOCK):
            cols = slice(b * BLOCK, (b + 1) * BLOCK)
            if form == "bf16":
                out[:, cols] += bf16(pt) @ bf16(data[rows, cols] * scales[rows, b][:, None])
                continue
            k = max(k_run[b], codes[rows, b].max())
            if np.isfinite(k_run[b]):
                out[:, cols] *= 2.0 ** (k_run[b] - k)
            v = fp16(data[rows, cols] * 2.0 ** (codes[rows, b] - k)[:, None])
            out[:, cols] += fp16(pt * P16[form]) / P16[form] @ v
            k_run[b] = k
        out[:, NOPE:] += bf16(pt) @ rope[rows]
    if form != "bf16":
        out[:, :NOPE] *= np.repeat(2.0 ** k_run, BLOCK)[None, :]
    return out / p.sum(axis=1, keepdims=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(f"{'scales':8} {'reference':14} {'max rel Frobenius error over trials':>36}")
    for kind in ("engine", "wide", "skewed"):
        errors = {"column": [], "head": [], "bf16": [], "fp16-run": [], "fp16-run-p1024": []}
        for _ in range(args.trials):
            data, scales, rope = ds_rows(rng, kind)
            k = np.concatenate([data * np.repeat(scales, BLOCK, axis=1), rope], axis=1)
            q = e4m3(rng.standard_normal((HEADS, 512)) * 4) / 4
            scale = 1 / np.sqrt(512) / np.abs(k).max() * 8  # scores spread over ~e^8
            if kind == "skewed":  # scores from RoPE dim 0 alone: the small rows e^16 ahead
                q[:, :NOPE] = 0.0
                q[:, NOPE] = 448.0
                scale = 16 / (2 * 448.0 * 2.0 ** -20)
            want = attention(q, k, scale)
            for reference in errors:
                if reference in ("bf16",) + tuple(P16):
                    got = modelled_16bit(q, data, scales, rope, scale, reference)
                else:
                    got = modelled(q, data, scales, rope, scale, reference)
                errors[reference].append(np.linalg.norm(got - want) / np.linalg.norm(want))
        for reference, e in errors.items():
            print(f"{kind:8} {reference:14} {max(e):36.2e}")


if __name__ == "__main__":
    main()
