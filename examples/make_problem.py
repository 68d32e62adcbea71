"""Writes examples/problem.safetensors, the example input of `smla attend`, reproducibly
(fixed seed; NumPy and the repository's safetensors writer and quantisers in tests/oracle).

    python3 examples/make_problem.py [PATH]    # default: examples/problem.safetensors
    build/smla attend --in examples/problem.safetensors --out result.safetensors

The problem is a DeepSeek-V4-shaped step in miniature: a decode request (one token at
position 9) then a two-token prefill (positions 38 and 39), 8 query heads, FP8 E4M3
queries, and two `fp8` KV pools of 2 blocks x 16 rows: the sliding window's and the
compressed cache's. Each token gathers 4 window rows and 3 compressed rows; -1 is a
skipped entry. Every tensor and metadata key is described by `smla attend --help`.
"""
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "oracle"))
import formats  # noqa: E402
import safetensors_np  # noqa: E402

HEADS, HEAD_DIM, BLOCKS, BLOCK_SIZE = 8, 512, 2, 16


def problem():
    """(tensors in file order, metadata) of the example."""
    rng = np.random.default_rng(20260)
    q = formats.f64_to_e4m3(rng.normal(size=(3, HEADS, HEAD_DIM)))
    swa_cache = formats.f64_to_e4m3(rng.normal(size=(BLOCKS, BLOCK_SIZE, HEAD_DIM)))
    extra_cache = formats.f64_to_e4m3(rng.normal(size=(BLOCKS, BLOCK_SIZE, HEAD_DIM)))
    i32 = np.int32
    tensors = [
        ("q", "F8_E4M3", q),
        ("swa_cache", "F8_E4M3", swa_cache),
        ("extra_cache", "F8_E4M3", extra_cache),
        # window rows of positions 6..9, 35..38 and 36..39 (made-up slots: position % 32)
        ("swa_indices", "I32", np.array([[6, 7, 8, 9], [3, 4, 5, 6], [4, 5, 6, 7]], i32)),
        ("extra_indices", "I32", np.array([[0, 2, -1], [16, 20, 24], [16, 21, 25]], i32)),
        ("cu_seqlens_q", "I32", np.array([0, 1, 3], i32)),  # request 0: token 0; 1: 1-2
        ("seq_lens", "I32", np.array([10, 40], i32)),  # KV lengths, the new tokens included
    ]
    # 512^-0.5: DeepSeek-V4's softmax scale, head_dim^-0.5 over its 512-wide q and k rows.
    metadata = {"kv_format": "fp8", "bmm1_scale": repr(float(np.float32(512 ** -0.5))),
                "bmm2_scale": "1.0"}
    return tensors, metadata


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else str(REPO / "examples" / "problem.safetensors")
    safetensors_np.write(path, *problem())
    print(f"wrote {path}")
