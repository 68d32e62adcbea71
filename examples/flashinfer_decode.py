"""DeepSeek-V4 sparse MLA decode through FlashInfer's entry point, on smla.

An engine written against flashinfer.mla.trtllm_batch_decode_sparse_mla_dsv4 (whose
TRTLLM-GEN kernels need SM100) switches to smla on Hopper by changing the import: the
arguments are FlashInfer's (docs/API.md, "FlashInfer's decode entry point"). Here NumPy
arrays run the CPU reference; CUDA torch tensors in the same layouts run the SM90 kernels.

    PYTHONPATH=python python3 examples/flashinfer_decode.py    # after scripts/test.sh
"""
import numpy as np

import smla
from smla import trtllm_batch_decode_sparse_mla_dsv4  # was: from flashinfer.mla import ...

BATCH, Q_LEN, HEADS, TOPK = 4, 2, 16, 64  # 2 query tokens a request: 1 + 1 speculative
WINDOW = 128                              # FlashInfer's fixed count of SWA index columns
PAGES, PAGE_SIZE = 8, 64
tokens, rows = BATCH * Q_LEN, PAGES * PAGE_SIZE

rng = np.random.default_rng(0)
# FP8 E4M3 query [batch, q_len, heads, 512] and fp8 caches in FlashInfer's HND layout
# [pages, 1 KV head, page_size, 512] (NumPy carries the E4M3 bits as uint8).
query = smla.quantize(rng.normal(size=(BATCH, Q_LEN, HEADS, 512)), "fp8_e4m3")
swa_kv_cache = smla.kv_pack(rng.normal(size=(rows, 512)), "fp8", PAGE_SIZE)[:, None]
compressed_kv_cache = smla.kv_pack(rng.normal(size=(rows, 512)), "fp8", PAGE_SIZE)[:, None]
# Per token: 128 window slots, then the indexer's top-k slots of the compressed cache.
sparse_indices = rng.integers(0, rows, size=(tokens, WINDOW + TOPK)).astype(np.int32)
sparse_indices[0, WINDOW + TOPK // 2:] = -1  # skipped entries
seq_lens = np.array([3000, 700, 41, 9000], np.int32)  # KV lengths, new tokens included
sparse_indices[4:6, 41:WINDOW] = -1  # request 2 has 41 rows: its window is not full
sparse_topk_lens = np.full(tokens, WINDOW + TOPK, np.int32)  # active columns, window's too
workspace_buffer = np.zeros(1 << 20, np.uint8)          # smla uses its last bytes only
sinks = rng.normal(size=HEADS).astype(np.float32)

# With real FP8 data bmm1_scale also carries the query's and the cache's per-tensor scales.
out = trtllm_batch_decode_sparse_mla_dsv4(
    query, swa_kv_cache, workspace_buffer, sparse_indices, compressed_kv_cache,
    sparse_topk_lens, seq_lens, bmm1_scale=512 ** -0.5, sinks=sinks, kv_layout="HND")
print(f"out {list(out.shape)} BF16; request 0, token 1, head 0, out[:4] =",
      smla.dequantize(out)[0, 1, 0, :4])
