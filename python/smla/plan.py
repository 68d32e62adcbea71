"""smla.Plan: the batch planner (DESIGN section 4) over smla_plan."""
import ctypes

import numpy as np

from . import _abi
from ._arrays import Arg, int32_view, on_device, stream_handle, torch_module
from ._integers import int32
from ._library import Context, lib
from .errors import DeviceError, DtypeError, ShapeError, StrideError, ValueRangeError

_QUERY_DTYPES = {"bf16": _abi.DTYPE_BF16, "bfloat16": _abi.DTYPE_BF16,
                 "uint16": _abi.DTYPE_BF16, "fp8": _abi.DTYPE_FP8_E4M3,
                 "fp8_e4m3": _abi.DTYPE_FP8_E4M3, "float8_e4m3fn": _abi.DTYPE_FP8_E4M3,
                 "uint8": _abi.DTYPE_FP8_E4M3}


def query_dtype_code(value):
    """SMLA_DTYPE_BF16 or _FP8_E4M3 from a name ("bf16", "fp8"), a torch or NumPy dtype
    (uint16 / uint8 bits included) or an array whose dtype is one of those."""
    if isinstance(value, type) and issubclass(value, np.generic):
        value = np.dtype(value)
    value = getattr(value, "dtype", value)
    name = value.name if isinstance(value, np.dtype) else str(value).replace("torch.", "")
    if name not in _QUERY_DTYPES:
        raise DtypeError(f"query_dtype: {value!r}; expected bf16 or fp8 (a name, a torch "
                         "or NumPy dtype, or the query itself)")
    return _QUERY_DTYPES[name]


def device_index(device):
    """None for "cpu", else the CUDA device index of "cuda", "cuda:N", N or a
    torch.device."""
    text = str(device)
    if text == "cpu":
        return None
    if isinstance(device, int):
        return device
    if text == "cuda":
        return torch_module().cuda.current_device()
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise DeviceError(f"device: {device!r}; expected 'cpu', 'cuda', 'cuda:N' or an index")


class Plan:
    """The per-step attention metadata of a batch, in buffers allocated once.

    Plan(max_tokens, max_requests, device="cpu") makes a host plan (for the CPU
    reference, NumPy views); device="cuda[:N]" makes a device plan (needs PyTorch; its
    arrays are torch tensors over the plan's device memory). The arrays keep their
    addresses for the plan's lifetime, so CUDA graphs that read them (through
    sparse_mla(..., plan=plan)) see every later build. A replayed graph keeps the token
    and segment counts it was captured with, so rebuild it for batches of another shape.
    """

    handle = None

    def __init__(self, max_tokens, max_requests, device="cpu", *, max_segments=0):
        self.device = device_index(device)
        with on_device(self.device):
            self._ctx = Context()
            capacity = _abi.PlanCapacity(int32("max_tokens", max_tokens),
                                         int32("max_requests", max_requests),
                                         int32("max_segments", max_segments))
            memory = _abi.MEMORY_HOST if self.device is None else _abi.MEMORY_DEVICE
            handle = ctypes.c_void_p()
            self._ctx.check(lib.smla_plan_create(self._ctx.handle, ctypes.byref(capacity),
                                                 memory, ctypes.byref(handle)))
        self.handle = handle
        self._seq_lens = None

    @property
    def place(self):
        return "cpu" if self.device is None else f"cuda:{self.device}"

    def build(self, query_start_loc_cpu, seq_lens, decode_threshold, query_dtype, cap=None, *,
              num_requests=None, stream=None):
        """Plans one step's batch: requests in engine order, decodes first.

        query_start_loc_cpu  host int32 [>= R+1] query starts (only R+1 are read).
        seq_lens             int32 [>= R] KV lengths including the new tokens: on the
                             plan's device (a CUDA tensor for a device plan). A device
                             plan reads it on the GPU after build returns; keep its
                             contents until then (the plan keeps the tensor alive).
        decode_threshold     query length <= this is a decode (1 + speculative tokens).
        query_dtype          bf16 or fp8 (names, dtypes, or the query itself).
        cap                  segment cap: None = default (1024 for FP8, off for BF16),
                             0 = off, > 0.
        num_requests         R; len(seq_lens) when None.
        stream               CUDA stream of a device plan's work (PyTorch's current one
                             when None). No host synchronisation."""
        qsl = Arg("query_start_loc_cpu", query_start_loc_cpu)
        if qsl.device is not None:
            raise DeviceError("query_start_loc_cpu must be in host memory (it is read on "
                              f"the host); it is on {qsl.place}")
        lens = Arg("seq_lens", seq_lens)
        if lens.device != self.device:
            raise DeviceError(f"seq_lens is on {lens.place} but the plan is on {self.place}")
        for arg in (qsl, lens):
            arg.expect_dtype(_abi.DTYPE_I32)
            arg.expect_ndim(1)
            if arg.strides[0] != 1:
                raise StrideError(f"{arg.name}: must be contiguous")
        requests = lens.shape[0] if num_requests is None else int32("num_requests",
                                                                      num_requests)
        if requests > lens.shape[0]:
            raise ShapeError(f"seq_lens: {lens.shape[0]} entries but num_requests is "
                             f"{requests}")
        if qsl.shape[0] < requests + 1:
            raise ShapeError(f"query_start_loc_cpu: {qsl.shape[0]} entries; {requests} "
                             f"requests need {requests + 1}")
        if cap is not None and int32("cap", cap) < 0:
            raise ValueRangeError(f"cap: {cap}; expected None (default), 0 (off) or > 0")
        batch = _abi.Batch(requests, qsl.ptr, lens.ptr,
                           int32("decode_threshold", decode_threshold),
                           query_dtype_code(query_dtype),
                           _abi.SEGMENT_CAP_DEFAULT if cap is None else cap)
        with on_device(self.device):
            status = lib.smla_plan_build(self.live_handle(), ctypes.byref(batch),
                                         stream_handle(self.device, stream))
        self._ctx.check(status)
        self._seq_lens = seq_lens
        return self

    def live_handle(self):
        """The smla_plan handle; ValueRangeError once the plan is closed."""
        if not self.handle:
            raise ValueRangeError("plan: it has been closed (Plan.close); make a new one")
        return self.handle

    def _view(self):
        view = _abi.PlanView()
        self._ctx.check(lib.smla_plan_get_view(self.live_handle(), ctypes.byref(view)))
        return view

    def _array(self, field, count, host=False):
        return int32_view(getattr(self._view(), field), count,
                          None if host else self.device, self)

    def close(self):
        """Frees the plan's buffers now (views of them must no longer be used)."""
        if self.handle:
            lib.smla_plan_destroy(self.handle)
            self.handle = None

    def __del__(self):
        self.close()

    # Counts of the last build.
    num_requests = property(lambda self: self._view().num_requests)
    num_decodes = property(lambda self: self._view().num_decodes)
    num_decode_tokens = property(lambda self: self._view().num_decode_tokens)
    num_prefill_tokens = property(lambda self: self._view().num_prefill_tokens)
    num_segments = property(lambda self: self._view().num_segments)
    max_segment_len = property(lambda self: self._view().max_segment_len)
    segment_cap = property(lambda self: self._view().segment_cap, doc="the cap applied, 0 = none")

    # The plan's arrays (on its device), sized by the last build.
    decode_query_starts = property(
        lambda self: self._array("decode_query_starts", self.num_decodes + 1))
    decode_seq_lens = property(lambda self: self._array("decode_seq_lens", self.num_decodes))
    segment_query_starts = property(
        lambda self: self._array("segment_query_starts", self.num_segments + 1),
        doc="rebased to the first prefill token")
    segment_seq_lens = property(
        lambda self: self._array("segment_seq_lens", self.num_segments),
        doc="S - Q + segment end, so every token keeps its absolute position")
    segment_requests = property(
        lambda self: self._array("segment_requests", self.num_segments))
    decode_token_positions = property(
        lambda self: self._array("decode_token_positions", self._view().max_tokens)
        if self.device is not None else None,
        doc="device plans: per token up to the capacity, a decode token's position, else "
            "PLAN_NOT_DECODE; None for a host plan")
    # Host copies of the parts computed on the host.
    host_decode_query_starts = property(
        lambda self: self._array("host_decode_query_starts", self.num_decodes + 1, True))
    host_segment_query_starts = property(
        lambda self: self._array("host_segment_query_starts", self.num_segments + 1, True))
    host_segment_requests = property(
        lambda self: self._array("host_segment_requests", self.num_segments, True))
