"""smla: sparse MLA attention for DeepSeek-V4-class models (ctypes binding of libsmla).

    smla.sparse_mla(q, swa_cache, swa_indices, ..., bmm1_scale=..., out=...)
    smla.trtllm_batch_decode_sparse_mla_dsv4(...)   # FlashInfer's signature
    smla.flash_mla.flash_mla_with_kvcache(...)      # FlashMLA's calls (smla/flash_mla.py)
    smla.Plan(max_tokens, max_requests, device="cuda").build(...)

NumPy arrays (host, CPU reference) and PyTorch tensors (CPU or CUDA) are accepted; NumPy
passes BF16 as uint16 bits and FP8 E4M3 as uint8 bits (smla.quantize / smla.dequantize
convert). Errors are smla.SmlaError subclasses naming the argument.
"""
from ._abi import DEFAULT_WINDOW, HEAD_DIM, PLAN_NOT_DECODE
from ._library import has_cuda, library_path
from ._library import lib as _lib
from .attention import sparse_mla
from .errors import (AlignmentError, BackendError, BatchOrderError, CapacityError, CudaError,
                     DeviceError, DtypeError, HeadsError, KvFormatError, NullPointerError,
                     OutOfMemoryError, ReadOnlyError, ShapeError, SmlaError, StrideError,
                     ValueRangeError)
from . import flash_mla
from .flashinfer import trtllm_batch_decode_sparse_mla_dsv4
from .formats import dequantize, kv_pack, kv_unpack, quantize
from .plan import Plan

__version__ = _lib.smla_version().decode()  # the library's (CMakeLists.txt's project version)

__all__ = [
    "DEFAULT_WINDOW", "HEAD_DIM", "PLAN_NOT_DECODE", "has_cuda", "library_path", "sparse_mla",
    "trtllm_batch_decode_sparse_mla_dsv4", "flash_mla", "Plan", "kv_pack", "kv_unpack",
    "quantize", "dequantize", "SmlaError", "AlignmentError", "BackendError", "BatchOrderError",
    "CapacityError", "CudaError", "DeviceError", "DtypeError", "HeadsError",
    "KvFormatError", "NullPointerError", "OutOfMemoryError", "ReadOnlyError", "ShapeError",
    "StrideError", "ValueRangeError",
]
