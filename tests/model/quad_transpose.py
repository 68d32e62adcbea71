#!/usr/bin/env python3
"""Model check of heads_on_m.cuh's finish(): O's stores from the wgmma accumulators.
A consumer WG's thread (warp w, lane) holds accumulator i of rows r0 = 16w + lane / 4 and
r0 + 8 (i % 4 / 2), at column acc_col(i, lane) = 8 (i / 4) + 2 (lane % 4) + i % 2 of the
WG's 256. finish() packs them by pairs into BF16x2 words, groups blocks 4g .. 4g + 3,
transposes the words across each quad (quad_transpose: the exchanges with lanes ^ 2 and
^ 1 and their selects, as written there) and stores 16 bytes at column 32g + 8 (lane % 4).
This emulates that for every lane and checks that each of the 64 x 256 values lands at
its own row and column, once; then that a transpose with either exchange's selects
swapped is caught."""
import sys


def acc_col(i, lane):
    return (i // 4) * 8 + (lane % 4) * 2 + (i % 2)


def quad_transpose(words, swap_hi=False, swap_lo=False):
    """words[lane][b]: the four words of the 32 lanes; returns them after the exchanges,
    with the kernel's selects (swap_*: a deliberate break)."""
    def exchange(words, mask, bit, sent, keep):
        flag = [bool(lane & bit) ^ (swap_hi if bit == 2 else swap_lo) for lane in range(32)]
        s = [[w[i] for i in (sent[0] if flag[lane] else sent[1])] for lane, w in enumerate(words)]
        out = []
        for lane, w in enumerate(words):
            got = s[lane ^ mask]  # __shfl_xor_sync(.., mask): the partner's sent words
            w = list(w)
            dst = keep[0] if flag[lane] else keep[1]
            w[dst[0]], w[dst[1]] = got
            out.append(w)
        return out
    # lanes ^ 2: hi sends w[0], w[1] and takes the partner's into w[0], w[1]; else w[2], w[3]
    words = exchange(words, 2, 2, ((0, 1), (2, 3)), ((0, 1), (2, 3)))
    # lanes ^ 1: lo sends w[0], w[2] and takes into w[0], w[2]; else w[1], w[3]
    return exchange(words, 1, 1, ((0, 2), (1, 3)), ((0, 2), (1, 3)))


def stores(**brk):
    """(row, column) -> the value stored there, for one warp (rows 0..15) of a WG."""
    placed = {}
    for r in range(2):
        for g in range(8):
            words = []
            for lane in range(32):
                r0 = lane // 4
                w = []
                for b in range(4):
                    i = 16 * g + 4 * b + 2 * r
                    w.append(((r0 + 8 * r, acc_col(i, lane)), (r0 + 8 * r, acc_col(i + 1, lane))))
                words.append(w)
            words = quad_transpose(words, **brk)
            for lane in range(32):
                row, col = lane // 4 + 8 * r, 32 * g + 8 * (lane % 4)
                for k, word in enumerate(words[lane]):
                    for half, value in enumerate(word):
                        at = (row, col + 2 * k + half)
                        assert at not in placed, f"{at} stored twice"
                        placed[at] = value
    return placed


def main():
    placed = stores()
    assert len(placed) == 16 * 256 and all(at == v for at, v in placed.items()), "a value stored off its place"
    for brk in ({"swap_hi": True}, {"swap_lo": True}):
        try:
            p = stores(**brk)
            if len(p) == 16 * 256 and all(at == v for at, v in p.items()):
                print(f"FAIL: the model does not catch {brk}")
                return 1
        except AssertionError:
            pass
    print("quad transpose: every one of a warp's 16 x 256 values stored at its row and column, once; "
          "swapped selects caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
