"""KV-cache formats (DESIGN section 3) and the BF16 / FP8 bits NumPy users pass, through the
library's reference quantiser (smla_kv_pack / smla_kv_unpack). Host memory only."""
import ctypes

import numpy as np

from . import _abi
from ._arrays import Arg, kv_format_code, kv_pool
from ._integers import int32
from ._library import lib
from .errors import DeviceError, DtypeError, ShapeError, check

_BITS_FORMATS = {"bf16": "bf16", "fp8_e4m3": "fp8"}  # element dtype -> one-row KV format


def kv_pack(rows, kv_format, block_size):
    """A new NumPy cache holding float rows [N, 512] (N a multiple of block_size) in
    kv_format: bf16 -> uint16 [N/bs, bs, 512], fp8 -> uint8 [N/bs, bs, 512], fp8_ds_mla ->
    uint8 [N/bs, block_bytes] (E4M3 saturating round-to-nearest; UE8M0 tile scales)."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    block_size = int32("block_size", block_size)
    if rows.ndim != 2 or rows.shape[1] != _abi.HEAD_DIM:
        raise ShapeError(f"rows: shape {list(rows.shape)}; expected [N, {_abi.HEAD_DIM}]")
    if block_size < 1 or rows.shape[0] % block_size:
        raise ShapeError(f"rows: {rows.shape[0]} rows do not fill blocks of {block_size}")
    num_blocks = rows.shape[0] // block_size
    code = kv_format_code(kv_format)
    if code == _abi.KV_FP8_DS_MLA:
        cache = np.zeros((num_blocks, lib.smla_kv_block_bytes(code, block_size)), np.uint8)
    else:
        dtype = np.uint16 if code == _abi.KV_BF16 else np.uint8
        cache = np.zeros((num_blocks, block_size, _abi.HEAD_DIM), dtype)
    pool = kv_pool(Arg("cache", cache), kv_format, block_size)
    _check(lib.smla_kv_pack(ctypes.byref(pool), rows.ctypes.data), "smla_kv_pack")
    return cache


def kv_unpack(cache, kv_format=None, block_size=None):
    """The float32 rows [num_blocks * block_size, 512] of a host cache (NumPy array or CPU
    tensor, layouts as in sparse_mla)."""
    arg = Arg("cache", cache)
    if arg.device is not None:
        raise DeviceError(f"cache: on {arg.place}; kv_unpack reads host memory")
    pool = kv_pool(arg, kv_format, block_size)
    rows = np.empty((pool.num_blocks * pool.block_size, _abi.HEAD_DIM), np.float32)
    _check(lib.smla_kv_unpack(ctypes.byref(pool), rows.ctypes.data), "smla_kv_unpack")
    return rows


def quantize(values, dtype):
    """Float values [..., 512] as "bf16" (uint16) or "fp8_e4m3" (uint8) bits."""
    values = np.asarray(values, dtype=np.float32)
    if values.shape[-1:] != (_abi.HEAD_DIM,):
        raise ShapeError(f"values: shape {list(values.shape)}; the last dimension must be "
                         f"{_abi.HEAD_DIM}")
    rows = values.reshape(-1, _abi.HEAD_DIM)
    return kv_pack(rows, _bits_format(dtype), 1).reshape(values.shape)


def dequantize(bits):
    """float32 values of BF16 (uint16) or E4M3 (uint8) bits [..., 512]."""
    bits = np.ascontiguousarray(bits)
    if bits.shape[-1:] != (_abi.HEAD_DIM,):
        raise ShapeError(f"bits: shape {list(bits.shape)}; the last dimension must be "
                         f"{_abi.HEAD_DIM}")
    rows = kv_unpack(bits.reshape(-1, 1, _abi.HEAD_DIM))
    return rows.reshape(bits.shape)


def _bits_format(dtype):
    if dtype not in _BITS_FORMATS:
        raise DtypeError(f"dtype: '{dtype}'; expected 'bf16' or 'fp8_e4m3'")
    return _BITS_FORMATS[dtype]


def _check(status, what):
    check(status, f"{what}: {lib.smla_status_string(status).decode()}")
