"""Exceptions: one class per smla status, each also a subclass of the built-in exception a
Python caller would expect (TypeError for a dtype, ValueError for a shape, ...). The
message names the argument at fault, whether the binding or the C library found it."""
from . import _abi


class SmlaError(Exception):
    """Base class. `status` is the smla_status code (an int), `message` the explanation."""

    status = None

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    @staticmethod
    def for_status(status, message):
        return _BY_STATUS.get(status, SmlaError)(message)


class NullPointerError(SmlaError, ValueError):
    """A required argument is missing."""
    status = _abi.ERR_NULL_POINTER


class DtypeError(SmlaError, TypeError):
    status = _abi.ERR_DTYPE


class ShapeError(SmlaError, ValueError):
    status = _abi.ERR_SHAPE


class StrideError(SmlaError, ValueError):
    """A layout the operation cannot use: not contiguous where it must be, overlapping."""
    status = _abi.ERR_STRIDE


class AlignmentError(SmlaError, ValueError):
    status = _abi.ERR_ALIGNMENT


class ReadOnlyError(SmlaError, ValueError):
    """An output array that cannot be written."""


class HeadsError(ShapeError):
    status = _abi.ERR_HEADS


class KvFormatError(SmlaError, ValueError):
    status = _abi.ERR_KV_FORMAT


class DeviceError(SmlaError, ValueError):
    """Arguments on different devices, or on a device the call cannot use."""
    status = _abi.ERR_MEMORY_SPACE


class ValueRangeError(SmlaError, ValueError):
    status = _abi.ERR_VALUE


class BackendError(SmlaError, RuntimeError):
    status = _abi.ERR_BACKEND


class CapacityError(SmlaError, ValueError):
    status = _abi.ERR_CAPACITY


class BatchOrderError(SmlaError, ValueError):
    status = _abi.ERR_BATCH_ORDER


class OutOfMemoryError(SmlaError, MemoryError):
    status = _abi.ERR_OUT_OF_MEMORY


class CudaError(SmlaError, RuntimeError):
    status = _abi.ERR_CUDA


_BY_STATUS = {cls.status: cls for cls in (
    NullPointerError, DtypeError, ShapeError, StrideError, AlignmentError, HeadsError,
    KvFormatError, DeviceError, ValueRangeError, BackendError, CapacityError,
    BatchOrderError, OutOfMemoryError, CudaError)}


def check(status, message):
    """Raises the exception for a failed smla status."""
    if status != _abi.OK:
        raise SmlaError.for_status(status, message)
