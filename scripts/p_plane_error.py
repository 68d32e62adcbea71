#!/usr/bin/env python3
"""The error of fp8m's and fp8wg's P . V with P as one E4M3 plane (what they multiply
since session 32), against P as hi + lo planes (before): a numpy model of the
kernels' arithmetic on one 64-head item (640 entries, 512 dims, V in E4M3, scores
N(0, sigma) in log2 units, P = exp2(s - max) * 256 as kPScale, round to nearest even),
relative Frobenius error of `out` against exact arithmetic on the same inputs.
Usage: scripts/p_plane_error.py [--draws N]   (numpy only; default 20 draws a row)"""
import argparse

import numpy as np


def e4m3(x):
    """x rounded to the nearest E4M3 value (ties to even; subnormals below 2^-6; at most 448)."""
    a = np.abs(x)
    exp = np.maximum(np.floor(np.log2(np.maximum(a, 1e-30))), -6)
    step = 2.0 ** (exp - 3)
    return np.sign(x) * np.minimum(np.round(a / step) * step, 448.0)


def errors(rng, sigma, heads=64, entries=640, dims=512, p_scale=256.0):
    s = rng.normal(0.0, sigma, (heads, entries))
    v = e4m3(rng.normal(0.0, 1.0, (entries, dims)))
    p = np.exp2(s - s.max(axis=1, keepdims=True))
    l = p.sum(axis=1, keepdims=True)
    exact = p @ v / l
    hi = e4m3(p * p_scale)
    lo = e4m3(p * p_scale - hi)
    one = hi @ v / p_scale / l
    two = (hi + lo) @ v / p_scale / l
    rel = lambda o: np.linalg.norm(o - exact) / np.linalg.norm(exact)
    return rel(one), rel(two)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20)
    draws = ap.parse_args().draws
    rng = np.random.default_rng(1)
    print("sigma  one plane  hi + lo   (relative Frobenius error of out; the FP8 limit is 3e-2)")
    for sigma in (0.5, 1.0, 2.0, 4.0):
        e = np.mean([errors(rng, sigma) for _ in range(draws)], axis=0)
        print(f"{sigma:5}  {e[0]:9.1e}  {e[1]:8.1e}")


if __name__ == "__main__":
    main()
