"""Checks a result file of `smla attend` against the float64 oracle (attention.py).

Tolerances, for the CPU backend (double accumulation, one rounding at the end):
  out: the C result is x' = x + e with x our float64 value and |e| tiny (double
    rounding over <= 1152 terms: below 2^-40 of the largest |bmm2 * k| the token reads),
    then rounded once to BF16. BF16 keeps 8 significant bits, so for x' in
    [2^k, 2^(k+1)) round-to-nearest moves it by at most half a unit, 2^(k-8) <= 2^-8 |x'|.
    Hence |out - x| <= 2^-8 |x| + 2^-30 * max|bmm2 * k| (+ 2^-133 for BF16 subnormals).
  lse: stored as float32 (relative error 2^-24) of a double: |lse - x| <= 2^-20 max(1, |x|);
    -inf (no active entry) must be exactly -inf.
  Padding rows (tokens in no sequence): out stays 0 (all bits), lse stays NaN.
"""
import numpy as np

import formats
import safetensors_np
from attention import Problem, attend

OUT_REL = 2.0 ** -8
OUT_ABS = 2.0 ** -30
OUT_FLOOR = 2.0 ** -133
LSE_REL = 2.0 ** -20


def check_structure(result, T, H):
    problems = []
    expected = {"out": ("BF16", (T, H, formats.HEAD_DIM)), "lse": ("F32", (T, H))}
    for name, (dtype, shape) in expected.items():
        if name not in result:
            problems.append(f"result has no tensor '{name}'")
        elif result[name][0] != dtype or result[name][1].shape != shape:
            problems.append(f"result '{name}' is {result[name][0]} {result[name][1].shape}, "
                            f"expected {dtype} {shape}")
    extra = set(result) - set(expected)
    if extra:
        problems.append(f"result has unexpected tensors {sorted(extra)}")
    return problems


def row_scale(p, t):
    rows = p.token_rows(t)
    if rows is None or len(rows) == 0:
        return 0.0
    return abs(p.bmm2) * float(np.max(np.abs(rows)))


def compare(problem_path, result_path, max_reports=5):
    """Returns a list of failure messages (empty when the result is right)."""
    tensors, metadata = safetensors_np.read(problem_path)
    p = Problem(tensors, metadata)
    result, _ = safetensors_np.read(result_path)
    failures = check_structure(result, p.num_tokens, p.num_heads)
    if failures:
        return failures
    out = formats.bf16_to_f64(result["out"][1])
    out_bits = result["out"][1]
    lse = result["lse"][1].astype(np.float64)
    ref_out, ref_lse, computed = attend(p)

    def report(msg):
        if len(failures) < max_reports:
            failures.append(msg)
        elif len(failures) == max_reports:
            failures.append("... (more)")

    for t in range(p.num_tokens):
        if not computed[t]:
            if np.any(out_bits[t] != 0) or not np.all(np.isnan(lse[t])):
                report(f"token {t} is padding but was written (out nonzero or lse not NaN)")
            continue
        tol = OUT_REL * np.abs(ref_out[t]) + OUT_ABS * row_scale(p, t) + OUT_FLOOR
        err = np.abs(out[t] - ref_out[t])
        bad = ~(err <= tol)
        if bad.any():
            h, d = np.argwhere(bad)[0]
            report(f"token {t}: {int(bad.sum())} out values off, first [h={h}, d={d}]: "
                   f"{out[t, h, d]!r} vs oracle {ref_out[t, h, d]!r} (tol {tol[h, d]:.3g})")
        want_inf = np.isneginf(ref_lse[t])
        with np.errstate(invalid="ignore"):  # -inf - -inf where both are -inf
            lse_err = np.abs(lse[t] - ref_lse[t])
        lse_tol = LSE_REL * np.maximum(1, np.abs(ref_lse[t]))
        lse_bad = np.where(want_inf, ~np.isneginf(lse[t]), ~(lse_err <= lse_tol))
        if lse_bad.any():
            h = int(np.argmax(lse_bad))
            report(f"token {t}: {int(lse_bad.sum())} lse values off, first h={h}: "
                   f"{lse[t, h]!r} vs oracle {ref_lse[t, h]!r}")
    return failures
