"""FlashMLA's sparse attention calls, on smla.

flash_mla_sparse_fwd, get_mla_metadata and flash_mla_with_kvcache take the arguments of
deepseek-ai/FlashMLA's flash_mla/flash_mla_interface.py (names, shapes, strides, return
values and their conventions) and run smla.sparse_mla, so an engine written for FlashMLA
switches by changing its import:

    from smla.flash_mla import flash_mla_sparse_fwd, flash_mla_with_kvcache, get_mla_metadata

What maps to what, and what is refused, is docs/API.md's section "smla.flash_mla". In
short: FlashMLA's sparse MODEL1 mode only (head dim 512, fp8_ds_mla caches); each index
set without positions (every column up to its length counts, no window); smla's lse of a
token with no valid entry (-inf) is FlashMLA's +inf. Inputs whose layout smla cannot read
in place (q's heads or an index row strided) are copied; caches never are.
"""
import math

import numpy as np

from . import _abi
from ._arrays import Arg, is_contiguous, is_torch, new_array, required_arg, torch_module
from ._library import lib
from ._max_logits import fill_max_logits
from .attention import host_float, sparse_mla
from .errors import (DtypeError, KvFormatError, NullPointerError, ShapeError, StrideError,
                     ValueRangeError)

BF16, F32, I32 = _abi.DTYPE_BF16, _abi.DTYPE_F32, _abi.DTYPE_I32
HEAD_DIM = _abi.HEAD_DIM
MODEL1_TOKEN_BYTES = 584  # fp8_ds_mla: 448 E4M3 + 64 BF16 values, 8 scale bytes
V32_HEAD_DIM = 576        # DeepSeek V3.2's layout (656-byte cache tokens): not smla's


class FlashMLASchedMeta:
    """What get_mla_metadata returns and flash_mla_with_kvcache takes. FlashMLA keeps its
    tile schedule here; smla schedules inside each call, so this holds nothing and one
    instance serves any call, whatever its shapes and lengths."""


def get_mla_metadata(*args, **kwargs):
    """(FlashMLASchedMeta(), None), as FlashMLA returns; its arguments are accepted (old
    callers pass some) and unused."""
    return FlashMLASchedMeta(), None


def _query(q, ndim):
    """q's Arg: BF16, ndim dimensions, head dim 512."""
    qa = Arg("q", q)
    qa.expect_dtype(BF16)
    qa.expect_ndim(ndim)
    if qa.shape[-1] == V32_HEAD_DIM:
        raise ShapeError(f"q: head dim {V32_HEAD_DIM} is DeepSeek V3.2's layout (656-byte "
                         f"cache tokens), which smla does not implement; it takes {HEAD_DIM}")
    if qa.shape[-1] != HEAD_DIM:
        raise ShapeError(f"q: shape {list(qa.shape)}; the head dim must be {HEAD_DIM}")
    return qa


def _checked(name, obj, reference, dtype, shape, dims):
    """obj's Arg, of dtype and shape (None: any size); dims names the dimensions."""
    arg = required_arg(name, obj, reference)
    arg.expect_dtype(dtype)
    if len(arg.shape) != len(shape) or any(
            want is not None and want != size for size, want in zip(arg.shape, shape)):
        wanted = ", ".join("*" if want is None else str(want) for want in shape)
        raise ShapeError(f"{name}: shape {list(arg.shape)}, expected {dims} = [{wanted}]")
    return arg


def _readable(obj, shape, inner):
    """obj reshaped to shape: a view where its strides allow one whose last `inner`
    dimensions are contiguous (as smla reads q and index rows), else a contiguous copy."""
    view = obj.reshape(shape)
    if is_contiguous(Arg("", view), inner):
        return view
    return view.contiguous() if is_torch(view) else np.ascontiguousarray(view)


def _model1_cache(name, obj, reference):
    """(cache, block_size): FlashMLA's MODEL1 cache [num_blocks, page_block_size, 1, 584]
    (float8_e4m3fn, int8 or uint8; a block is page_block_size rows of 576 bytes, then their
    8-byte scale rows, padded to a multiple of 576, blocks stride(0) bytes apart) as the
    [num_blocks, block_bytes] uint8 view sparse_mla reads as fp8_ds_mla."""
    arg = required_arg(name, obj, reference)
    arg.expect_ndim(4)
    num_blocks, block_size, heads, token_bytes = arg.shape
    if heads != 1:
        raise ShapeError(f"{name}: shape {list(arg.shape)}; FlashMLA's sparse attention has "
                         "one KV head (dimension 2 of size 1)")
    if token_bytes != MODEL1_TOKEN_BYTES:
        raise KvFormatError(f"{name}: {token_bytes} bytes per token; smla reads MODEL1's "
                            f"fp8_ds_mla tokens of {MODEL1_TOKEN_BYTES} bytes (DeepSeek "
                            "V3.2's 656-byte layout is not supported)")
    if arg.itemsize != 1:
        raise DtypeError(f"{name}: dtype {arg.dtype_text}, expected float8_e4m3fn, int8 or "
                         "uint8 (the cache's bytes)")
    if arg.strides[1] != MODEL1_TOKEN_BYTES or arg.strides[3] != 1:
        raise StrideError(f"{name}: strides {list(arg.strides)}; the bytes of a block must "
                          f"be contiguous (strides [*, {MODEL1_TOKEN_BYTES}, *, 1])")
    block_bytes = lib.smla_kv_block_bytes(_abi.KV_FP8_DS_MLA, block_size)
    stride = arg.strides[0] if num_blocks > 1 else block_bytes
    if stride < block_bytes:
        raise KvFormatError(f"{name}: blocks {stride} bytes apart; {block_size} tokens of "
                            f"fp8_ds_mla take {block_bytes} (padded to a multiple of 576, "
                            "as FlashMLA pads MODEL1 blocks)")
    shape = (num_blocks, block_bytes)
    if arg.torch:
        try:
            return obj.view(torch_module().uint8).as_strided(shape, (stride, 1)), block_size
        except RuntimeError:
            raise ShapeError(f"{name}: its storage ends inside the padding of its last "
                             f"block ({block_bytes} bytes a block)") from None
    view = np.lib.stride_tricks.as_strided(obj.view(np.uint8), shape, (stride, 1),
                                           writeable=False)
    return view, block_size


def _scale(value, name):
    """A finite scale as a Python float."""
    scale = host_float(value, name)
    if not math.isfinite(scale):
        raise ValueRangeError(f"{name}: {scale}; expected a finite scale")
    return scale


def _per_token(lens, s_q):
    """FlashMLA's decode lengths [b], one per request, as smla's per token [b * s_q]."""
    if lens is None or s_q == 1:
        return lens
    return lens.repeat_interleave(s_q) if is_torch(lens) else np.repeat(lens, s_q)


def _flash_mla_lse(lse):
    """smla's lse of a token without valid entries is -inf; FlashMLA's is +inf."""
    if is_torch(lse):
        lse.masked_fill_(lse == float("-inf"), float("inf"))
    else:
        lse[np.isneginf(lse)] = np.inf


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None,
                         *, return_max_logits=True):
    """FlashMLA's sparse prefill: returns (out, max_logits, lse).

    q            [s_q, h_q, 512] bfloat16 (NumPy: uint16 bits); h_q as sparse_mla takes.
    kv           [s_kv, 1, 512] bfloat16, one row per index, token stride free.
    indices      [s_q, 1, topk] int32 rows of kv; < 0 or >= s_kv: skipped.
    sm_scale     logit = sm_scale * q.k (rounded to float32).
    d_v          512 (the only value FlashMLA takes).
    attn_sink    optional [h_q] float32: joins each softmax denominator, not lse.
    topk_length  optional [s_q] int32: token i reads indices[i, 0, :topk_length[i]].
    return_max_logits  smla's: False skips max_logits (None in its place), a pass of its
                 own over the gathered rows that smla's kernels do not make.

    out [s_q, h_q, 512] bfloat16; max_logits [s_q, h_q] float32, sm_scale * max q.k over
    the valid entries (-inf: none); lse [s_q, h_q] float32, natural log of sum e^logit
    over them (+inf: none)."""
    if d_v != HEAD_DIM:
        raise ValueRangeError(f"d_v: {d_v}; expected {HEAD_DIM}")
    qa = _query(q, 3)
    s_q, h_q = qa.shape[0], qa.shape[1]
    kva = required_arg("kv", kv, qa)
    kva.expect_dtype(BF16)
    if kva.ndim != 3 or kva.shape[1:] != (1, HEAD_DIM):
        raise ShapeError(f"kv: shape {list(kva.shape)}, expected [s_kv, h_kv, d_qk] = "
                         f"[*, 1, {HEAD_DIM}] (one KV head)")
    if kva.strides[2] != 1:
        raise StrideError(f"kv: strides {list(kva.strides)}; the values of a row must be "
                          "contiguous")
    topk = _checked("indices", indices, qa, I32, (s_q, 1, None), "[s_q, h_kv, topk]").shape[2]
    if topk_length is not None:
        _checked("topk_length", topk_length, qa, I32, (s_q,), "[s_q]")
    if attn_sink is not None:
        _checked("attn_sink", attn_sink, qa, F32, (h_q,), "[h_q]")
    scale = _scale(sm_scale, "sm_scale")
    rows = _readable(indices, (s_q, topk), 1)

    out = new_array(qa, (s_q, h_q, HEAD_DIM), BF16, 0)
    lse = new_array(qa, (s_q, h_q), F32, float("nan"))
    sparse_mla(_readable(q, (s_q, h_q, HEAD_DIM), 2), kv, rows, swa_lens=topk_length,
               sinks=attn_sink, bmm1_scale=scale, kv_format="bf16", out=out, lse=lse)
    _flash_mla_lse(lse)
    max_logits = None
    if return_max_logits:
        max_logits = new_array(qa, (s_q, h_q), F32, float("-inf"))
        fill_max_logits(max_logits, q, kv[:, 0], rows, topk_length,
                        float(np.float32(scale)))
    return out, max_logits, lse


def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v,
                           tile_scheduler_metadata, num_splits=None, softmax_scale=None,
                           causal=False, is_fp8_kvcache=False, indices=None, attn_sink=None,
                           extra_k_cache=None, extra_indices_in_kvcache=None,
                           topk_length=None, extra_topk_length=None):
    """FlashMLA's decode, its sparse FP8 MODEL1 mode: returns (out, lse).

    q            [b, s_q, h_q, 512] bfloat16 (NumPy: uint16 bits); h_q as sparse_mla takes.
    k_cache      the SWA cache, [num_blocks, page_block_size, 1, 584] float8_e4m3fn, int8
                 or uint8: MODEL1's fp8_ds_mla blocks (blocks padded to a multiple of 576
                 bytes, stride(0) apart).
    block_table, cache_seqlens  unused in sparse mode (FlashMLA ignores them too).
    head_dim_v   512.
    tile_scheduler_metadata  get_mla_metadata()[0]; num_splits: None.
    softmax_scale  logit = softmax_scale * q.k; 512 ** -0.5 when None.
    causal       False; is_fp8_kvcache: True (sparse mode requires both).
    indices      [b, s_q, topk] int32 slots of k_cache (block * page_block_size + row);
                 -1 (or any slot outside the cache) is skipped.
    attn_sink    optional [h_q] float32: joins each softmax denominator, not lse.
    extra_k_cache, extra_indices_in_kvcache  the compressed cache, same layout with its
                 own page_block_size, and [b, s_q, extra_topk] slots of it.
    topk_length, extra_topk_length  optional [b] int32: every query token of request i
                 reads only the first topk_length[i] columns of its indices (the extra
                 ones: extra_topk_length[i]).

    out [b, s_q, h_q, 512] bfloat16; lse [b, h_q, s_q] float32 (a transposed view of
    [b, s_q, h_q]), natural log of sum e^logit over both caches' valid entries (+inf:
    none)."""
    if not isinstance(tile_scheduler_metadata, FlashMLASchedMeta):
        raise DtypeError(f"tile_scheduler_metadata: a {type(tile_scheduler_metadata).__name__}"
                         "; expected what smla.flash_mla.get_mla_metadata() returns")
    if num_splits is not None:
        raise ValueRangeError("num_splits: must be None (FlashMLA keeps it for the old "
                              "interface)")
    if indices is None:
        raise NullPointerError("indices is required: smla runs FlashMLA's sparse attention, "
                               "not its dense mode (block_table and cache_seqlens)")
    if causal:
        raise ValueRangeError("causal: True; sparse attention has no causal mask")
    if not is_fp8_kvcache:
        raise ValueRangeError("is_fp8_kvcache: False; FlashMLA's sparse attention reads "
                              "fp8 caches (MODEL1's fp8_ds_mla) only")
    if head_dim_v != HEAD_DIM:
        raise ValueRangeError(f"head_dim_v: {head_dim_v}; expected {HEAD_DIM}")
    qa = _query(q, 4)
    b, s_q, h_q = qa.shape[:3]
    tokens = b * s_q
    swa_cache, block_size = _model1_cache("k_cache", k_cache, qa)
    topk = _checked("indices", indices, qa, I32, (b, s_q, None), "[b, s_q, topk]").shape[2]
    for name, lens in (("topk_length", topk_length), ("extra_topk_length", extra_topk_length)):
        if lens is not None:
            _checked(name, lens, qa, I32, (b,), "[b]")
    if attn_sink is not None:
        _checked("attn_sink", attn_sink, qa, F32, (h_q,), "[h_q]")
    extra = {}
    if extra_k_cache is None:
        for name, given in (("extra_indices_in_kvcache", extra_indices_in_kvcache),
                            ("extra_topk_length", extra_topk_length)):
            if given is not None:
                raise NullPointerError(f"{name} given without extra_k_cache")
    else:
        if extra_indices_in_kvcache is None:
            raise NullPointerError("extra_k_cache given without extra_indices_in_kvcache")
        extra_cache, extra_block_size = _model1_cache("extra_k_cache", extra_k_cache, qa)
        extra_topk = _checked("extra_indices_in_kvcache", extra_indices_in_kvcache, qa, I32,
                              (b, s_q, None), "[b, s_q, extra_topk]").shape[2]
        extra_rows = _readable(extra_indices_in_kvcache, (tokens, extra_topk), 1)
        extra = dict(extra_cache=extra_cache, extra_block_size=extra_block_size,
                     extra_indices=extra_rows, extra_lens=_per_token(extra_topk_length, s_q))
    scale = HEAD_DIM ** -0.5 if softmax_scale is None else _scale(softmax_scale,
                                                                  "softmax_scale")

    out = new_array(qa, (b, s_q, h_q, HEAD_DIM), BF16, 0)
    lse = new_array(qa, (b, s_q, h_q), F32, float("nan"))
    sparse_mla(_readable(q, (tokens, h_q, HEAD_DIM), 2), swa_cache,
               _readable(indices, (tokens, topk), 1), swa_lens=_per_token(topk_length, s_q),
               sinks=attn_sink, bmm1_scale=scale, kv_format="fp8_ds_mla",
               block_size=block_size, out=out.reshape(tokens, h_q, HEAD_DIM),
               lse=lse.reshape(tokens, h_q), **extra)
    _flash_mla_lse(lse)
    return out, lse.swapaxes(1, 2)
