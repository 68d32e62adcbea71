"""Python integers on their way into C: ctypes keeps only the low bits of an integer that
does not fit its field (2**32 + 64 as an int32 is 64), so every integer argument is
checked here first, with a message naming it."""
import operator

from .errors import DtypeError, ValueRangeError

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def _integer(name, value):
    try:
        return operator.index(value)
    except TypeError:
        raise DtypeError(f"{name}: expected an integer, got {type(value).__name__}") from None


def int32(name, value):
    """value as a Python int that fits a C int32_t, else ValueRangeError."""
    number = _integer(name, value)
    if not INT32_MIN <= number <= INT32_MAX:
        raise ValueRangeError(f"{name}: {number} does not fit a 32-bit integer "
                              f"[{INT32_MIN}, {INT32_MAX}]")
    return number


def address(name, value):
    """value as a Python int that fits a C pointer (a CUDA stream handle)."""
    number = _integer(name, value)
    if not 0 <= number < 2**64:
        raise ValueRangeError(f"{name}: {number} is not a 64-bit address [0, 2**64)")
    return number
