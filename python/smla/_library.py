"""Finding and loading libsmla, and the per-thread contexts calls record their errors on.

Where the library comes from, first match wins:
  1. the SMLA_LIBRARY environment variable (a path to libsmla.so);
  2. libsmla.so inside this package (what `pip install ./python` builds and bundles);
  3. build/libsmla.so of the repository this package sits in (a source checkout after
     scripts/test.sh);
  4. the system's library path (ctypes.util.find_library("smla")).
"""
import ctypes
import ctypes.util
import os
import threading
from pathlib import Path

from . import _abi
from .errors import SmlaError, check

_PACKAGE_DIR = Path(__file__).resolve().parent
_LIBRARY_NAME = "libsmla.so"


def _candidates():
    """(description, path or None) in search order."""
    env = os.environ.get("SMLA_LIBRARY")
    if env:
        return [("SMLA_LIBRARY", env)]
    return [("the package", _PACKAGE_DIR / _LIBRARY_NAME),
            ("the repository build", _PACKAGE_DIR.parent.parent / "build" / _LIBRARY_NAME),
            ("the system library path", ctypes.util.find_library("smla"))]


def _load():
    tried = []
    for where, path in _candidates():
        if path is None or not Path(path).is_file():
            tried.append(f"{where} ({path or 'not found'})")
            continue
        return _abi.declare(ctypes.CDLL(str(path))), str(path)
    raise ImportError("smla: cannot find libsmla.so; tried " + ", ".join(tried) +
                      ". Build it (scripts/test.sh or cmake), install the package with "
                      "`pip install ./python`, or set SMLA_LIBRARY=/path/to/libsmla.so")


lib, library_path = _load()


class Context:
    """An smla_context: the last error message of the calls made with it."""

    def __init__(self):
        handle = ctypes.c_void_p()
        status = lib.smla_context_create(ctypes.byref(handle))
        if status != _abi.OK:
            raise SmlaError.for_status(status, "smla_context_create failed")
        self.handle = handle

    def check(self, status):
        """Raises the exception of a failed status with this context's message."""
        if status != _abi.OK:
            check(status, lib.smla_context_last_error(self.handle).decode())

    def __del__(self):
        if getattr(self, "handle", None):
            lib.smla_context_destroy(self.handle)
            self.handle = None


_thread_contexts = threading.local()


def thread_context(device=None):
    """This thread's context for calls on `device` (None: host). smla contexts are used
    by one thread at a time, and a context keeps the CUDA backend's split-KV scratch on
    the device it was first used on, which a captured CUDA graph goes on using."""
    contexts = getattr(_thread_contexts, "by_device", None)
    if contexts is None:
        contexts = _thread_contexts.by_device = {}
    if device not in contexts:
        contexts[device] = Context()
    return contexts[device]


def has_cuda():
    """True when libsmla was built with CUDA and a usable GPU is present."""
    return bool(lib.smla_context_has_cuda(thread_context().handle))
