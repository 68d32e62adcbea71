#!/usr/bin/env python3
"""Model check of bf16m's store_p (src/cuda/prefill/bf16_heads_on_m.cuh): its four
stmatrix .x4 a thread put every P value where the 16 32-bit stores they replaced put it
(the same shared-memory bytes, so the other WG's P . V reads the same operand). It
emulates both over the 128 threads of a WG: the m64n64 accumulator layout (acc_col), the
128-byte swizzle (tile_offset) and stmatrix's rule (lane l gives row l % 8 of matrix
l / 8; register j of lane l holds row l / 4, columns 2 (l % 4) and + 1 of matrix j). A
wrong address formula is caught, so that the check itself can fail.

Keep it in step with the kernel: stmatrix_address is store_p's address, matrix_register
its packing of s."""
import sys


def tile_offset(rows, row, byte):  # sm90.cuh
    b = byte & 127
    return (byte >> 7) * rows * 128 + row * 128 + (((b >> 4) ^ (row & 7)) << 4) + (b & 15)


def acc_col(i, lane):  # softmax.cuh
    return (i // 4) * 8 + (lane % 4) * 2 + (i % 2)


def stmatrix_address(r0, lane, q, swap=False):
    j = lane // 8
    half, block = (j // 2, j % 2) if swap else (j % 2, j // 2)
    head = r0 - lane // 4 + 8 * half + lane % 8
    return tile_offset(64, head, 16 * (2 * q + block))


def matrix_register(q, j):  # index into s of the pair in register j: word j of pf[q] (p_fragments)
    return 8 * q + 2 * j


def stores_32bit():
    where = {}
    for t in range(128):
        lane, r0 = t % 32, (t // 32) * 16 + (t % 32) // 4
        for i in range(0, 32, 2):
            a = tile_offset(64, r0 + 8 * ((i % 4) // 2), acc_col(i, lane) * 2)
            where[a], where[a + 2] = (t, i), (t, i + 1)
    return where


def stores_stmatrix(swap=False):
    where = {}
    for warp in range(4):
        for q in range(4):
            rows = [stmatrix_address(warp * 16 + lane // 4, lane, q, swap) for lane in range(32)]
            for j in range(4):
                for rr in range(8):
                    for c in range(8):
                        t = warp * 32 + rr * 4 + c // 2
                        where[rows[8 * j + rr] + 2 * c] = (t, matrix_register(q, j) + c % 2)
    return where


def main():
    expected = stores_32bit()
    if len(expected) != 64 * 64 or stores_stmatrix() != expected:
        print("FAIL: store_p's stmatrix stores do not put P where the 32-bit stores did")
        return 1
    if stores_stmatrix(swap=True) == expected:
        print("FAIL: the model does not catch a swapped row half and block")
        return 1
    print("bf16m store_p: stmatrix puts all 4096 P values where the 32-bit stores did; a wrong address is caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
