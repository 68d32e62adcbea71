"""smla.sparse_mla: the attention operation of DESIGN section 2 over NumPy arrays or PyTorch
tensors, one call of smla_attention."""
import ctypes

import numpy as np

from . import _abi
from ._arrays import (Arg, is_torch, kv_pool, new_array, on_device, optional_arg,
                      required_arg, stream_handle, tensor_of, torch_module)
from ._integers import int32
from ._library import lib, thread_context
from .errors import DeviceError, DtypeError, NullPointerError, ShapeError, ValueRangeError
from .plan import Plan

BF16, FP8, F32, I32 = _abi.DTYPE_BF16, _abi.DTYPE_FP8_E4M3, _abi.DTYPE_F32, _abi.DTYPE_I32
_SPLIT_MODES = {"auto": _abi.SPLIT_AUTO, "fixed": _abi.SPLIT_FIXED, "none": _abi.SPLIT_NONE}


def host_float(value, name):
    """A scale as a Python float. A CUDA tensor is read with a device-to-host copy, which
    cannot happen during CUDA graph capture: pass floats to calls that are captured."""
    if is_torch(value):
        if value.numel() != 1:
            raise ShapeError(f"{name}: a tensor of {value.numel()} elements; expected one")
        if value.is_cuda and torch_module().cuda.is_current_stream_capturing():
            raise DeviceError(f"{name}: a CUDA tensor cannot be read while a CUDA graph is "
                              "being captured; pass a Python float")
        return float(value.item())
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ShapeError(f"{name}: an array of {value.size} elements; expected one")
        value = value.reshape(-1)[0]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise DtypeError(f"{name}: expected a float, got {type(value).__name__}") from None


def sparse_mla(q, swa_cache, swa_indices, *, extra_cache=None, extra_indices=None,
               swa_lens=None, extra_lens=None, cu_seqlens_q=None, seq_lens=None, plan=None,
               sinks=None, bmm1_scale, bmm2_scale=1.0, kv_format=None, block_size=None,
               extra_block_size=None, window=_abi.DEFAULT_WINDOW, out=None, lse=None,
               return_lse=False, split="auto", stream=None):
    """Sparse MLA attention (DESIGN section 2); returns out, or (out, lse) with return_lse.

    Every array is a NumPy array (host) or a PyTorch tensor (CPU or CUDA), all in one place;
    CUDA tensors run the SM90 kernels, host arrays the CPU reference.

    q            [T, H, 512] BF16 or FP8 E4M3 (NumPy: uint16 / uint8 bits), H in 8..128.
    swa_cache    the SWA pool: [num_blocks, block_size, 512] BF16 ("bf16") or FP8 E4M3
                 ("fp8"), or [num_blocks, block_bytes] uint8 ("fp8_ds_mla", give
                 block_size). extra_cache: the compressed pool, same rules.
    block_size   tokens per block of swa_cache (needed for fp8_ds_mla; checked against the
                 shape otherwise); extra_block_size: of extra_cache, block_size when None.
    swa_indices  [T, Wswa] int32 slot ids (slot s: row s % block_size of block
                 s // block_size); ids < 0 or past the pool are skipped. Row stride free,
                 so the engine layout [window | extra] is one buffer sliced twice.
    extra_indices [T, Wext] int32, with extra_cache.
    swa_lens, extra_lens  optional [T] int32: only the first n columns of a row count.
    cu_seqlens_q, seq_lens  optional [B+1], [B] int32 positions: token t of sequence b
                 sits at seq_lens[b] - q_len(b) + (t - cu[b]) and sees only its first
                 min(pos + 1, window) SWA columns; rows past cu[B] are not computed.
    plan         an smla.Plan (instead of cu_seqlens_q/seq_lens): decode tokens first,
                 then the prefill segments, positioned by the plan's persistent buffers.
                 It must be built (a plan never built, or closed, is refused).
    sinks        optional [H] float32 logits joining the softmax denominator.
    bmm1_scale   logit = bmm1_scale * q.k;  bmm2_scale: out = bmm2_scale * sum p v.
    kv_format    "bf16", "fp8" or "fp8_ds_mla"; inferred from the caches when None.
    out          [T, H, 512] BF16 (NumPy: uint16); allocated (zeros) when None. Rows that
                 are not computed are left as they are.
    lse          optional [T, H] float32 (natural log, sink excluded); allocated (NaN) when
                 None and return_lse.
    split        CUDA only: "auto" splits the KV entries of launches too small to fill the
                 GPU (the last bits of a split token depend on the batch size), "fixed"
                 splits every token at 512-entry boundaries, "none" never splits (both
                 bit-identical whatever the batch).
    stream       CUDA stream (int handle or torch.cuda.Stream); PyTorch's current stream
                 when None.

    With out (and lse when wanted) given, the call allocates nothing and never waits on the
    GPU, so it can be captured in a torch.cuda.CUDAGraph: run it once before capturing,
    as usual, so that libsmla's split-KV scratch (kept per thread and device) has grown to
    the size the captured launch needs. Errors raise smla.SmlaError subclasses naming the
    argument."""
    qa = Arg("q", q)
    q_dtype = qa.expect_dtype(BF16, FP8)
    qa.expect_ndim(3)
    args = lib.smla_attention_args_default()
    args.q = qa.tensor(q_dtype)

    args.swa = kv_pool(required_arg("swa_cache", swa_cache, qa), kv_format, block_size)
    args.swa_indices = tensor_of(required_arg("swa_indices", swa_indices, qa), I32)
    if extra_cache is None and extra_indices is not None:
        raise NullPointerError("extra_indices given without extra_cache")
    if extra_cache is not None:
        if extra_indices is None:
            raise NullPointerError("extra_cache given without extra_indices")
        extra = required_arg("extra_cache", extra_cache, qa)
        if extra_block_size is None:
            args.extra = kv_pool(extra, kv_format, block_size)
        else:
            args.extra = kv_pool(extra, kv_format, extra_block_size, "extra_block_size")
        args.extra_indices = tensor_of(required_arg("extra_indices", extra_indices, qa), I32)
    args.swa_lens = tensor_of(optional_arg("swa_lens", swa_lens, qa), I32)
    args.extra_lens = tensor_of(optional_arg("extra_lens", extra_lens, qa), I32)
    args.cu_seqlens_q = tensor_of(optional_arg("cu_seqlens_q", cu_seqlens_q, qa), I32)
    args.seq_lens = tensor_of(optional_arg("seq_lens", seq_lens, qa), I32)
    if plan is not None:
        if not isinstance(plan, Plan):
            raise DtypeError(f"plan: expected an smla.Plan, got {type(plan).__name__}")
        if plan.device != qa.device:
            raise DeviceError(f"plan is on {plan.place} but q is on {qa.place}")
        args.plan = plan.live_handle()
    args.sinks = tensor_of(optional_arg("sinks", sinks, qa), F32)
    args.bmm1_scale = host_float(bmm1_scale, "bmm1_scale")
    args.bmm2_scale = host_float(bmm2_scale, "bmm2_scale")
    args.window = int32("window", window)

    num_tokens, num_heads = qa.shape[0], qa.shape[1]
    if out is None:
        out = new_array(qa, (num_tokens, num_heads, _abi.HEAD_DIM), BF16, 0)
    out_arg = required_arg("out", out, qa)
    out_arg.expect_writable()
    args.out = tensor_of(out_arg, BF16)
    if lse is None and return_lse:
        lse = new_array(qa, (num_tokens, num_heads), F32, float("nan"))
    lse_arg = optional_arg("lse", lse, qa)
    if lse_arg is not None:
        lse_arg.expect_writable()
    args.lse = tensor_of(lse_arg, F32)
    if split not in _SPLIT_MODES:
        raise ValueRangeError(f"split: '{split}'; expected 'auto', 'fixed' or 'none'")
    args.split = _SPLIT_MODES[split]
    args.stream = stream_handle(qa.device, stream)

    with on_device(qa.device):  # a context made here records this device's properties
        ctx = thread_context(qa.device)
        status = lib.smla_attention(ctx.handle, ctypes.byref(args))
    ctx.check(status)
    return (out, lse) if return_lse else out
