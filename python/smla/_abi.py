"""The C ABI of include/smla.h as ctypes declarations: enums, structs, prototypes.

Kept in the order of the header so the two can be read side by side. Enums are C ints.
"""
import ctypes

HEAD_DIM = 512
DEFAULT_WINDOW = 128
MAX_DIMS = 4
SEGMENT_CAP_DEFAULT = -1
PLAN_NOT_DECODE = -2**31

# smla_status
OK = 0
(ERR_NULL_POINTER, ERR_DTYPE, ERR_SHAPE, ERR_STRIDE, ERR_ALIGNMENT, ERR_HEADS, ERR_KV_FORMAT,
 ERR_MEMORY_SPACE, ERR_VALUE, ERR_BACKEND, ERR_CAPACITY, ERR_BATCH_ORDER, ERR_OUT_OF_MEMORY,
 ERR_CUDA, ERR_IO, ERR_FILE_FORMAT) = range(1, 17)

# smla_dtype
DTYPE_INVALID, DTYPE_BF16, DTYPE_FP8_E4M3, DTYPE_F32, DTYPE_I32, DTYPE_U8 = range(6)

# smla_memory
MEMORY_HOST, MEMORY_DEVICE = 0, 1

# smla_kv_format
KV_INVALID, KV_BF16, KV_FP8, KV_FP8_DS_MLA = range(4)

# smla_backend
BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA = range(3)

# smla_split_mode
SPLIT_AUTO, SPLIT_FIXED, SPLIT_NONE = range(3)


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("stride", ctypes.c_int64 * MAX_DIMS),
                ("memory", ctypes.c_int)]


class KvPool(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("format", ctypes.c_int),
                ("num_blocks", ctypes.c_int64), ("block_size", ctypes.c_int32),
                ("block_stride", ctypes.c_int64), ("memory", ctypes.c_int)]


class PlanCapacity(ctypes.Structure):
    _fields_ = [("max_tokens", ctypes.c_int32), ("max_requests", ctypes.c_int32),
                ("max_segments", ctypes.c_int32)]


class Batch(ctypes.Structure):
    _fields_ = [("num_requests", ctypes.c_int32),
                ("query_start_loc", ctypes.c_void_p),
                ("seq_lens", ctypes.c_void_p), ("decode_threshold", ctypes.c_int32),
                ("query_dtype", ctypes.c_int), ("segment_cap", ctypes.c_int32)]


class PlanView(ctypes.Structure):
    _fields_ = [("num_requests", ctypes.c_int32), ("num_decodes", ctypes.c_int32),
                ("num_decode_tokens", ctypes.c_int32), ("num_prefill_tokens", ctypes.c_int32),
                ("num_segments", ctypes.c_int32), ("max_segment_len", ctypes.c_int32),
                ("segment_cap", ctypes.c_int32), ("memory", ctypes.c_int),
                ("decode_query_starts", ctypes.c_void_p), ("decode_seq_lens", ctypes.c_void_p),
                ("segment_query_starts", ctypes.c_void_p),
                ("segment_seq_lens", ctypes.c_void_p), ("segment_requests", ctypes.c_void_p),
                ("counts", ctypes.c_void_p),
                ("host_decode_query_starts", ctypes.c_void_p),
                ("host_segment_query_starts", ctypes.c_void_p),
                ("host_segment_requests", ctypes.c_void_p),
                ("decode_token_positions", ctypes.c_void_p), ("max_tokens", ctypes.c_int32)]


class AttentionArgs(ctypes.Structure):
    _fields_ = [("q", Tensor), ("swa", KvPool), ("extra", KvPool),
                ("swa_indices", Tensor), ("extra_indices", Tensor),
                ("swa_lens", Tensor), ("extra_lens", Tensor),
                ("cu_seqlens_q", Tensor), ("seq_lens", Tensor),
                ("plan", ctypes.c_void_p), ("sinks", Tensor),
                ("bmm1_scale", ctypes.c_float), ("bmm2_scale", ctypes.c_float),
                ("window", ctypes.c_int32), ("out", Tensor), ("lse", Tensor),
                ("backend", ctypes.c_int), ("stream", ctypes.c_void_p),
                ("split", ctypes.c_int)]


def declare(lib):
    """Sets argtypes/restype of every function the binding calls."""
    c_int, c_void_p, c_char_p = ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
    signatures = {
        "smla_version": (c_char_p, []),
        "smla_status_string": (c_char_p, [c_int]),
        "smla_context_create": (c_int, [ctypes.POINTER(c_void_p)]),
        "smla_context_destroy": (None, [c_void_p]),
        "smla_context_last_error": (c_char_p, [c_void_p]),
        "smla_context_has_cuda": (c_int, [c_void_p]),
        "smla_kv_format_name": (c_char_p, [c_int]),
        "smla_kv_block_bytes": (ctypes.c_int64, [c_int, ctypes.c_int32]),
        "smla_kv_pack": (c_int, [ctypes.POINTER(KvPool), c_void_p]),
        "smla_kv_unpack": (c_int, [ctypes.POINTER(KvPool), c_void_p]),
        "smla_plan_create": (c_int, [c_void_p, ctypes.POINTER(PlanCapacity), c_int,
                                     ctypes.POINTER(c_void_p)]),
        "smla_plan_destroy": (None, [c_void_p]),
        "smla_plan_build": (c_int, [c_void_p, ctypes.POINTER(Batch), c_void_p]),
        "smla_plan_get_view": (c_int, [c_void_p, ctypes.POINTER(PlanView)]),
        "smla_attention_args_default": (AttentionArgs, []),
        "smla_attention": (c_int, [c_void_p, ctypes.POINTER(AttentionArgs)]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
