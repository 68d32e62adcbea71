"""NumPy arrays and PyTorch tensors as smla tensors and KV pools.

PyTorch is never imported here unless the caller already did (a torch.Tensor cannot reach
us otherwise) or asks for something only PyTorch has (device plans, device views).

NumPy has no BF16 or FP8 dtypes, so raw bits stand in for them: uint16 arrays hold BF16
bit patterns and uint8 arrays E4M3 bit patterns wherever smla expects BF16 or FP8 data
(ml_dtypes' bfloat16 and float8_e4m3fn arrays work too). PyTorch tensors use their own
dtypes (torch.uint8 / torch.uint16 bits are accepted the same way).
"""
import contextlib
import ctypes
import sys

import numpy as np

from . import _abi
from ._library import lib
from ._integers import address, int32
from .errors import (DeviceError, DtypeError, KvFormatError, NullPointerError, ReadOnlyError,
                     ShapeError, StrideError)

_NUMPY_DTYPES = {"uint16": _abi.DTYPE_BF16, "bfloat16": _abi.DTYPE_BF16,
                 "uint8": _abi.DTYPE_U8, "float8_e4m3fn": _abi.DTYPE_FP8_E4M3,
                 "float32": _abi.DTYPE_F32, "int32": _abi.DTYPE_I32}
_TORCH_DTYPES = {"bfloat16": _abi.DTYPE_BF16, "uint16": _abi.DTYPE_BF16,
                 "uint8": _abi.DTYPE_U8, "float8_e4m3fn": _abi.DTYPE_FP8_E4M3,
                 "float32": _abi.DTYPE_F32, "int32": _abi.DTYPE_I32}
# What each smla dtype is called in messages.
DTYPE_NAMES = {_abi.DTYPE_BF16: "bfloat16 (NumPy: uint16 bits)",
               _abi.DTYPE_FP8_E4M3: "float8_e4m3fn (NumPy: uint8 bits)",
               _abi.DTYPE_F32: "float32", _abi.DTYPE_I32: "int32", _abi.DTYPE_U8: "uint8"}
KV_FORMATS = {"bf16": _abi.KV_BF16, "fp8": _abi.KV_FP8, "fp8_ds_mla": _abi.KV_FP8_DS_MLA}
_NO_ELEMENTS = (ctypes.c_uint8 * 32)()  # never read: empty tensors point here, 16-aligned
_NO_ELEMENTS_ADDRESS = (ctypes.addressof(_NO_ELEMENTS) + 15) & ~15


def torch_module():
    """PyTorch, imported on first need; a clear error when it is not installed."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError as e:
            raise ImportError("smla: this needs PyTorch, which is not installed") from e
    return torch


def is_torch(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


class Arg:
    """One array argument: its name, the object, and its layout in elements.

    device is None for host memory, else the CUDA device index."""

    def __init__(self, name, obj):
        self.name = name
        self.obj = obj
        self.torch = is_torch(obj)
        if self.torch:
            self._from_torch(obj)
        elif isinstance(obj, np.ndarray):
            self._from_numpy(obj)
        else:
            raise DtypeError(f"{name}: expected a torch.Tensor or numpy.ndarray, got "
                             f"{type(obj).__name__}")

    def _from_torch(self, t):
        self.dtype_text = str(t.dtype).replace("torch.", "")
        self.dtype = _TORCH_DTYPES.get(self.dtype_text, _abi.DTYPE_INVALID)
        self.shape = tuple(t.shape)
        self.strides = tuple(t.stride())
        self.ptr = t.data_ptr()
        self.itemsize = t.element_size()
        self._settle_strides()
        if t.device.type == "cuda":
            self.device = t.device.index if t.device.index is not None else 0
        elif t.device.type == "cpu":
            self.device = None
        else:
            raise DeviceError(f"{self.name}: on device {t.device}; smla takes CPU and CUDA "
                              "tensors")

    def _from_numpy(self, a):
        native = a.dtype.isnative or a.dtype.itemsize == 1
        self.dtype_text = a.dtype.name if native else a.dtype.str  # ">u2": byte-swapped
        self.dtype = _NUMPY_DTYPES.get(a.dtype.name, _abi.DTYPE_INVALID) if native \
            else _abi.DTYPE_INVALID
        self.shape = a.shape
        self.itemsize = a.dtype.itemsize
        if any(s % self.itemsize for s in a.strides):
            raise StrideError(f"{self.name}: strides {a.strides} bytes are not whole "
                              f"{self.itemsize}-byte elements")
        self.strides = tuple(s // self.itemsize for s in a.strides)
        self._settle_strides()
        self.ptr = a.__array_interface__["data"][0]
        self.device = None

    def _settle_strides(self):
        """Strides of dimensions never stepped over (size <= 1, or any size 0) become the
        contiguous ones: frameworks leave arbitrary values there."""
        empty = 0 in self.shape
        strides, step = list(self.strides), 1
        for i in reversed(range(len(self.shape))):
            if empty or self.shape[i] <= 1:
                strides[i] = step
            step *= max(self.shape[i], 1)
        self.strides = tuple(strides)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def place(self):
        return "cpu" if self.device is None else f"cuda:{self.device}"

    def expect_dtype(self, *allowed):
        """The smla dtype, with U8 read as FP8 bits where FP8 is allowed."""
        dtype = self.dtype
        if dtype == _abi.DTYPE_U8 and _abi.DTYPE_FP8_E4M3 in allowed:
            dtype = _abi.DTYPE_FP8_E4M3
        if dtype not in allowed:
            names = " or ".join(DTYPE_NAMES[d] for d in allowed)
            raise DtypeError(f"{self.name}: dtype {self.dtype_text}, expected {names}")
        return dtype

    def expect_ndim(self, *ndims):
        if self.ndim not in ndims:
            wanted = " or ".join(str(n) for n in ndims)
            raise ShapeError(f"{self.name}: {self.ndim} dimensions {list(self.shape)}, "
                             f"expected {wanted}")

    def expect_writable(self):
        if not self.torch and not self.obj.flags.writeable:
            raise ReadOnlyError(f"{self.name}: the array is read-only")

    def expect_place(self, reference):
        """Same memory space and device as reference (an Arg)."""
        if self.device != reference.device:
            raise DeviceError(f"{self.name} is on {self.place} but {reference.name} is on "
                              f"{reference.place}")

    def tensor(self, dtype):
        """An smla_tensor over this argument, read as dtype. An empty tensor may have no
        storage; it gets a stand-in address, as data NULL would mean 'not given'."""
        t = _abi.Tensor()
        t.data = self.ptr or _NO_ELEMENTS_ADDRESS
        t.dtype = dtype
        t.ndim = self.ndim
        for i in range(self.ndim):
            t.shape[i] = self.shape[i]
            t.stride[i] = self.strides[i]
        t.memory = _abi.MEMORY_HOST if self.device is None else _abi.MEMORY_DEVICE
        return t


def optional_arg(name, obj, reference):
    """An Arg on reference's device, or None when obj is None."""
    return None if obj is None else required_arg(name, obj, reference)


def required_arg(name, obj, reference):
    """An Arg on reference's device."""
    if obj is None:
        raise NullPointerError(f"{name} is required")
    arg = Arg(name, obj)
    arg.expect_place(reference)
    return arg


def tensor_of(arg, *dtypes):
    """The smla_tensor of an optional Arg (absent: data NULL)."""
    return _abi.Tensor() if arg is None else arg.tensor(arg.expect_dtype(*dtypes))


def kv_format_code(name):
    if name not in KV_FORMATS:
        raise KvFormatError(f"kv_format: '{name}' is not one of {', '.join(KV_FORMATS)}")
    return KV_FORMATS[name]


def kv_pool(arg, kv_format=None, block_size=None, size_name="block_size"):
    """The smla_kv_pool over a cache Arg.

    bf16 and fp8 caches are [num_blocks, block_size, 512] (BF16; FP8 or uint8 E4M3 bits)
    with contiguous token rows; fp8_ds_mla caches are [num_blocks, block_bytes] uint8 and
    need block_size. kv_format, when given ("bf16", "fp8", "fp8_ds_mla"), must agree.
    size_name is what messages call block_size."""
    if block_size is not None:
        block_size = int32(size_name, block_size)
    if arg.ndim == 3:
        dtype = arg.expect_dtype(_abi.DTYPE_BF16, _abi.DTYPE_FP8_E4M3)
        inferred = "bf16" if dtype == _abi.DTYPE_BF16 else "fp8"
        if arg.shape[2] != _abi.HEAD_DIM:
            raise ShapeError(f"{arg.name}: shape {list(arg.shape)}; the last dimension must "
                             f"be {_abi.HEAD_DIM}")
        if block_size is not None and block_size != arg.shape[1]:
            raise ShapeError(f"{arg.name}: {size_name} {block_size} given but the cache has "
                             f"{arg.shape[1]} tokens per block")
        num_blocks, size = arg.shape[0], arg.shape[1]
        if arg.strides[1] != _abi.HEAD_DIM or arg.strides[2] != 1:
            raise StrideError(f"{arg.name}: strides {list(arg.strides)}; the token rows of a "
                              f"block must be contiguous (strides [*, {_abi.HEAD_DIM}, 1])")
        stride_bytes = arg.strides[0] * arg.itemsize
    elif arg.ndim == 2:
        arg.expect_dtype(_abi.DTYPE_U8)
        inferred = "fp8_ds_mla"
        if block_size is None:
            raise ShapeError(f"{arg.name}: a [num_blocks, block_bytes] fp8_ds_mla cache "
                             f"needs {size_name}")
        num_blocks, size = arg.shape[0], block_size
        if arg.strides[1] != 1:
            raise StrideError(f"{arg.name}: the bytes of a block must be contiguous")
        needed = lib.smla_kv_block_bytes(_abi.KV_FP8_DS_MLA, size)
        if needed > 0 and arg.shape[1] < needed:
            raise ShapeError(f"{arg.name}: {arg.shape[1]} bytes per block; {size_name} {size} "
                             f"in fp8_ds_mla needs {needed}")
        stride_bytes = arg.strides[0]
    else:
        raise ShapeError(f"{arg.name}: {arg.ndim} dimensions; expected [num_blocks, "
                         "block_size, 512] (bf16, fp8) or [num_blocks, block_bytes] "
                         "(fp8_ds_mla)")
    if kv_format is not None and kv_format != inferred:
        kv_format_code(kv_format)
        raise KvFormatError(f"{arg.name}: kv_format '{kv_format}' given but the cache is "
                            f"{arg.dtype_text} {list(arg.shape)}, a {inferred} cache")
    pool = _abi.KvPool()
    pool.data = arg.ptr or None
    pool.format = KV_FORMATS[inferred]
    pool.num_blocks = num_blocks
    pool.block_size = size
    pool.block_stride = stride_bytes
    pool.memory = _abi.MEMORY_HOST if arg.device is None else _abi.MEMORY_DEVICE
    return pool


def new_array(reference, shape, dtype, fill):
    """A new array like reference's kind and device: BF16 (uint16 in NumPy) or float32."""
    if reference.torch:
        torch = torch_module()
        tdtype = torch.bfloat16 if dtype == _abi.DTYPE_BF16 else torch.float32
        device = "cpu" if reference.device is None else f"cuda:{reference.device}"
        return torch.full(shape, fill, dtype=tdtype, device=device)
    return np.full(shape, fill, dtype=np.uint16 if dtype == _abi.DTYPE_BF16 else np.float32)


def stream_handle(device, stream):
    """The cudaStream_t (an int) for a call on device: stream as given (an int or a
    torch.cuda.Stream), or PyTorch's current stream there. None for host calls."""
    if device is None:
        return None
    if stream is None:
        return torch_module().cuda.current_stream(device).cuda_stream
    return address("stream", getattr(stream, "cuda_stream", stream))


def on_device(device):
    """A context that makes CUDA device `device` current (nothing for host calls)."""
    if device is None:
        return contextlib.nullcontext()
    return torch_module().cuda.device(device)


def tail_int32(arg, count):
    """An int32 [count] view of the last bytes of arg (a contiguous workspace), starting
    16-byte aligned. The tail, because FlashInfer kernels that may share the workspace keep
    their zero-initialised counters at its start."""
    arg.expect_writable()
    total = _nbytes(arg)
    end = arg.ptr + total
    start = (end - 4 * count) & ~15
    if start < arg.ptr:
        raise ShapeError(f"{arg.name}: {total} bytes; smla needs the last {end - start} "
                         "bytes of it as scratch")
    offset = start - arg.ptr
    if arg.torch:
        torch = torch_module()
        flat = arg.obj.reshape(-1).view(torch.uint8)
        return flat[offset:offset + 4 * count].view(torch.int32)
    flat = arg.obj.reshape(-1).view(np.uint8)
    return flat[offset:offset + 4 * count].view(np.int32)


def _nbytes(arg):
    if not is_contiguous(arg):
        raise StrideError(f"{arg.name}: must be contiguous")
    n = arg.itemsize
    for s in arg.shape:
        n *= s
    return n


def is_contiguous(arg, dims=None):
    """Whether arg's last `dims` dimensions (all when None) are contiguous, in elements."""
    shape, strides = arg.shape, arg.strides
    if dims is not None:
        shape, strides = shape[len(shape) - dims:], strides[len(strides) - dims:]
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if stride != expected:
            return False
        expected *= size
    return True


class _Int32Memory:
    """count int32 at ptr, for NumPy (__array_interface__, host memory) or PyTorch
    (__cuda_array_interface__, device memory) to view without copying; it keeps `owner`
    alive as long as a view exists."""

    def __init__(self, ptr, count, owner):
        self.interface = {"shape": (count,), "typestr": "<i4", "data": (ptr or 0, False),
                          "strides": None, "version": 2}
        self.owner = owner


class _HostInt32(_Int32Memory):
    __array_interface__ = property(lambda self: self.interface)


class _DeviceInt32(_Int32Memory):
    __cuda_array_interface__ = property(lambda self: self.interface)


def int32_view(ptr, count, device, owner):
    """A view of count int32 at ptr: NumPy for host memory, a torch CUDA tensor for device
    memory (device is its index). The view keeps owner alive."""
    if device is None:
        return np.asarray(_HostInt32(ptr, count, owner))
    return torch_module().as_tensor(_DeviceInt32(ptr, count, owner), device=f"cuda:{device}")
