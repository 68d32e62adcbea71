"""The independent Python oracle of `smla attend` (DESIGN sections 2 and 3, NumPy only).

  python3 tests/oracle/oracle.py selftest
  python3 tests/oracle/oracle.py generate --seed S --count N --dir DIR
      writes DIR/pNNN.safetensors random problems
  python3 tests/oracle/oracle.py check DIR
      compares every DIR/pNNN.out.safetensors (smla attend's result) with the oracle
  python3 tests/oracle/oracle.py compare PROBLEM RESULT
  python3 tests/oracle/oracle.py malformed --seed S --dir DIR
      writes malformed problem files and DIR/manifest.tsv (file, exit code, message part)
Exit status: 0 when everything checked is right, 1 otherwise.
"""
import argparse
import glob
import os
import sys

import numpy as np

import compare
import formats
import malformed
import problems
import safetensors_np


def cmd_selftest(_args):
    """Spot checks of the decoders against values stated by the formats' definitions."""
    checks = [
        (formats.e4m3_to_f64([0x38])[0], 1.0),          # 0.0111.000: 2^(7-7)
        (formats.e4m3_to_f64([0x7E])[0], 448.0),        # largest finite
        (formats.e4m3_to_f64([0xFE])[0], -448.0),
        (formats.e4m3_to_f64([0x01])[0], 2.0 ** -9),    # smallest subnormal
        (formats.e4m3_to_f64([0x08])[0], 2.0 ** -6),    # smallest normal
        (formats.e4m3_to_f64([0x80])[0], 0.0),
        (formats.bf16_to_f64([0x3F80])[0], 1.0),
        (formats.bf16_to_f64([0x4049])[0], 3.140625),   # 0x40490000 as float32
        (formats.ue8m0_to_f64([127])[0], 1.0),
        (formats.ue8m0_to_f64([120])[0], 2.0 ** -7),
        (formats.block_bytes("fp8_ds_mla", 64), 37440),  # 64*584 = 37376 -> 65*576
        (formats.block_bytes("fp8_ds_mla", 1), 1152),
    ]
    bad = [(got, want) for got, want in checks if got != want]
    bad += [("E4M3 NaN", c) for c in formats.E4M3_NAN_CODES if not np.isnan(formats.E4M3[c])]
    bad += [("E4M3 finite", c) for c in range(256)
            if c not in formats.E4M3_NAN_CODES and not np.isfinite(formats.E4M3[c])]
    codes = np.arange(256, dtype=np.uint8)
    finite = ~np.isin(codes, formats.E4M3_NAN_CODES)
    back = formats.f64_to_e4m3(formats.E4M3[codes[finite]])
    bad += [("E4M3 round trip", int(c)) for c, b in zip(codes[finite], back)
            if formats.E4M3[c] != formats.E4M3[b]]
    for item in bad:
        print("selftest: FAILED", item)
    print(f"selftest: {len(checks)} values, {'ok' if not bad else 'FAILED'}")
    return 1 if bad else 0


def cmd_generate(args):
    os.makedirs(args.dir, exist_ok=True)
    paths = problems.write_random_problems(args.dir, args.seed, args.count)
    print(f"generate: {len(paths)} problems in {args.dir} (seed {args.seed})")
    return 0


def report(problem_path, result_path):
    failures = compare.compare(problem_path, result_path)
    if failures:
        _, metadata = safetensors_np.read(problem_path)
        print(f"FAIL {os.path.basename(problem_path)}: {metadata.get('description', '')}")
        for f in failures:
            print("    " + f)
    return not failures


def cmd_check(args):
    paths = sorted(p for p in glob.glob(os.path.join(args.dir, "p*.safetensors"))
                   if not p.endswith(".out.safetensors"))
    passed = failed = 0
    for path in paths:
        result = path[:-len(".safetensors")] + ".out.safetensors"
        if not os.path.exists(result):
            print(f"FAIL {os.path.basename(path)}: no result file")
            failed += 1
        elif report(path, result):
            passed += 1
        else:
            failed += 1
    print(f"check: {passed} passed, {failed} failed")
    return 0 if passed and not failed else 1


def cmd_compare(args):
    ok = report(args.problem, args.result)
    print("compare: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def cmd_malformed(args):
    os.makedirs(args.dir, exist_ok=True)
    count = malformed.write_cases(args.dir, args.seed)
    print(f"malformed: {count} cases in {args.dir}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("selftest").set_defaults(run=cmd_selftest)
    g = sub.add_parser("generate")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--count", type=int, default=20)
    g.add_argument("--dir", required=True)
    g.set_defaults(run=cmd_generate)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.set_defaults(run=cmd_check)
    p = sub.add_parser("compare")
    p.add_argument("problem")
    p.add_argument("result")
    p.set_defaults(run=cmd_compare)
    m = sub.add_parser("malformed")
    m.add_argument("--seed", type=int, required=True)
    m.add_argument("--dir", required=True)
    m.set_defaults(run=cmd_malformed)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
