"""FlashInfer's DeepSeek-V4 sparse MLA decode entry point, on smla.

The signature, argument names and meanings follow
flashinfer.mla.trtllm_batch_decode_sparse_mla_dsv4 (flashinfer/mla.py, the TRTLLM-GEN
SM100 path, as documented at docs.flashinfer.ai), so an engine switches by changing the
import. Arguments smla does not need are accepted and ignored (enable_pdl) or used as
FlashInfer documents them (workspace_buffer: scratch).
"""
import numpy as np

from . import _abi
from ._arrays import Arg, new_array, required_arg, tail_int32, torch_module
from .attention import sparse_mla
from .errors import KvFormatError, ShapeError, StrideError, ValueRangeError

SWA_COLUMNS = 128  # FlashInfer fixes the SWA side to 128 index columns


def _merge_tokens(arg):
    """[B, L, ...] as a [B * L, ...] view (never a copy)."""
    shape = (arg.shape[0] * arg.shape[1],) + tuple(arg.shape[2:])
    try:
        if arg.torch:
            return arg.obj.view(shape)
        merged = arg.obj.view()
        merged.shape = shape
        return merged
    except (RuntimeError, AttributeError):
        raise StrideError(f"{arg.name}: its first two dimensions cannot be merged without a "
                          "copy; pass a tensor whose tokens are evenly strided") from None


def _hnd_cache(obj, kv_layout, name, reference):
    """A [num_pages, page_size, 512] view of a cache in FlashInfer's layouts: HND
    [num_pages, 1, page_size, 512] (or its 3-D shorthand) or NHD [num_pages, page_size, 1,
    512]."""
    arg = required_arg(name, obj, reference)
    if kv_layout not in ("HND", "NHD"):
        raise KvFormatError(f"kv_layout: '{kv_layout}'; expected 'HND' or 'NHD'")
    if arg.ndim == 3 and kv_layout == "HND":
        return obj
    if arg.ndim != 4:
        raise ShapeError(f"{name}: {arg.ndim} dimensions {list(arg.shape)}; expected 4 (or "
                         "3 with kv_layout='HND')")
    head_dim = 1 if kv_layout == "HND" else 2
    if arg.shape[head_dim] != 1:
        raise ShapeError(f"{name}: shape {list(arg.shape)}; {kv_layout} needs one KV head "
                         f"(dimension {head_dim} of size 1)")
    return obj[:, 0] if kv_layout == "HND" else obj[:, :, 0]


def trtllm_batch_decode_sparse_mla_dsv4(query, swa_kv_cache, workspace_buffer, sparse_indices,
                                        compressed_kv_cache, sparse_topk_lens, seq_lens,
                                        out=None, bmm1_scale=1.0, bmm2_scale=1.0, sinks=None,
                                        kv_layout="HND", cum_seq_lens_q=None, max_q_len=None,
                                        enable_pdl=None):
    """DeepSeek-V4 sparse MLA decode with FlashInfer's arguments; returns out.

    query               [batch_size, q_len_per_request, H, 512], or [sum_q, H, 512] with
                        cum_seq_lens_q; BF16 or FP8 E4M3.
    swa_kv_cache        SWA pool: HND [num_pages, 1, page_size, 512] (or [num_pages,
                        page_size, 512]) or NHD [num_pages, page_size, 1, 512]; BF16 or
                        FP8 E4M3 (smla also takes a BF16 cache with an FP8 query and the
                        reverse).
    workspace_buffer    contiguous scratch on the query's device; smla writes the last
                        4 * sum_q bytes (dense queries: 4 * (sum_q + batch_size + 1)),
                        16-byte aligned, and leaves the start, where FlashInfer keeps its
                        zero-initialised counters, alone.
    sparse_indices      [sum_q, 128 + topk] int32: columns 0..127 index swa_kv_cache,
                        the rest compressed_kv_cache; -1 (or any id outside the pool) is
                        skipped.
    compressed_kv_cache the compressed pool, same layouts.
    sparse_topk_lens    [sum_q] int32 active columns of each row, counting the 128 SWA
                        columns: the SWA side uses min(n, 128) columns, the compressed
                        side n - 128 (DESIGN section 2).
    seq_lens            [batch_size] int32 KV lengths: token i of request b is at position
                        seq_lens[b] - q_len(b) + i and sees min(position + 1, 128) SWA
                        columns.
    out                 BF16, the query's shape; allocated when None.
    bmm1_scale, bmm2_scale  floats (a CUDA tensor costs a device-to-host copy).
    sinks               optional [H] float32.
    kv_layout           "HND" or "NHD", of both caches.
    cum_seq_lens_q      [batch_size + 1] int32 query starts of the varlen form.
    max_q_len           accepted for compatibility (smla does not need it); > 0 if given.
    enable_pdl          ignored.

    With out given it allocates nothing and never waits on the GPU (CUDA-graph safe)."""
    qa = Arg("query", query)
    if cum_seq_lens_q is None:
        qa.expect_ndim(4)
        batch_size, q_len = qa.shape[0], qa.shape[1]
        if max_q_len is not None and max_q_len != q_len:
            raise ValueRangeError(f"max_q_len: {max_q_len}, but the dense query has "
                                  f"q_len_per_request {q_len}")
        query_tokens = _merge_tokens(qa)
        num_tokens = batch_size * q_len
    else:
        qa.expect_ndim(3)
        cu = required_arg("cum_seq_lens_q", cum_seq_lens_q, qa)
        cu.expect_ndim(1)
        batch_size = cu.shape[0] - 1
        if max_q_len is not None and max_q_len <= 0:
            raise ValueRangeError(f"max_q_len: {max_q_len}; expected > 0")
        query_tokens = query
        num_tokens = qa.shape[0]

    indices = required_arg("sparse_indices", sparse_indices, qa)
    indices.expect_ndim(2)
    if indices.shape[1] < SWA_COLUMNS:
        raise ShapeError(f"sparse_indices: shape {list(indices.shape)}; it must hold the "
                         f"{SWA_COLUMNS} SWA columns first")
    lens = required_arg("sparse_topk_lens", sparse_topk_lens, qa)
    lens.expect_dtype(_abi.DTYPE_I32)
    lens.expect_ndim(1)
    if lens.shape[0] != num_tokens:
        raise ShapeError(f"sparse_topk_lens: shape {list(lens.shape)}, but the query has "
                         f"{num_tokens} tokens")

    has_extra = indices.shape[1] > SWA_COLUMNS
    dense = cum_seq_lens_q is None
    workspace = required_arg("workspace_buffer", workspace_buffer, qa)
    scratch = tail_int32(workspace, num_tokens + (batch_size + 1 if dense else 0))
    extra_lens = scratch[:num_tokens]
    if workspace.torch:
        torch = torch_module()
        torch.sub(torch.as_tensor(sparse_topk_lens), SWA_COLUMNS, out=extra_lens)
        if dense:
            torch.arange(0, (batch_size + 1) * q_len, q_len, dtype=torch.int32,
                         out=scratch[num_tokens:])
    else:
        np.subtract(np.asarray(sparse_topk_lens), np.int32(SWA_COLUMNS), out=extra_lens)
        if dense:
            scratch[num_tokens:] = np.arange(batch_size + 1, dtype=np.int32) * q_len
    cu_seqlens = scratch[num_tokens:] if dense else cum_seq_lens_q

    if out is None:
        out = new_array(qa, tuple(qa.shape[:-1]) + (_abi.HEAD_DIM,), _abi.DTYPE_BF16, 0)
    out_arg = required_arg("out", out, qa)
    if out_arg.shape[:-1] != qa.shape[:-1]:
        raise ShapeError(f"out: shape {list(out_arg.shape)}; the query is "
                         f"{list(qa.shape)}, so out must be {list(qa.shape[:-1]) + [512]}")
    swa_cache = _hnd_cache(swa_kv_cache, kv_layout, "swa_kv_cache", qa)
    compressed = _hnd_cache(compressed_kv_cache, kv_layout, "compressed_kv_cache", qa)
    sparse_mla(query_tokens, swa_cache, sparse_indices[:, :SWA_COLUMNS],
               extra_cache=compressed if has_extra else None,
               extra_indices=sparse_indices[:, SWA_COLUMNS:] if has_extra else None,
               swa_lens=sparse_topk_lens, extra_lens=extra_lens if has_extra else None,
               cu_seqlens_q=cu_seqlens, seq_lens=seq_lens, sinks=sinks,
               bmm1_scale=bmm1_scale, bmm2_scale=bmm2_scale, window=SWA_COLUMNS,
               out=_merge_tokens(out_arg) if dense else out)
    return out
