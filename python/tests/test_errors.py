"""Every argument check of sparse_mla: one broken argument of a valid call gives its own
exception class (also the built-in one a caller expects) and a message naming it, and
leaves the outputs untouched."""
import numpy as np
import pytest

import cases
import smla

I32 = np.int32


def with_stride_two(array):
    """array's values as a view whose last dimension is strided."""
    big = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
    big[..., ::2] = array
    return big[..., ::2]


def misaligned(array):
    """A copy of array whose data pointer is one byte off its natural alignment."""
    raw = np.zeros(array.nbytes + 1, np.uint8)
    view = np.ndarray(array.shape, array.dtype, buffer=raw.data, offset=1)
    view[...] = array
    return view


def read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


def ds_mla_case(rng):
    return cases.small_case(rng, "fp8_ds_mla")


def plan_instead_of_positions(k, close=False, build=True):
    """Changes that position k's tokens by a host plan (closed, or never built)."""
    plan = smla.Plan(len(k["q"]), len(k["seq_lens"]))
    if build:
        plan.build(k["cu_seqlens_q"], k["seq_lens"], 1, "bf16")
    if close:
        plan.close()
    return dict(cu_seqlens_q=None, seq_lens=None, plan=plan)


BAD_ARGUMENTS = [  # (argument changes from a valid bf16 call, exception, message part)
    (lambda k: dict(q=k["q"].tolist()), smla.DtypeError, "q: expected a torch.Tensor"),
    (lambda k: dict(q=k["q"].astype(np.float32)), smla.DtypeError, "q: dtype float32"),
    (lambda k: dict(q=k["q"].astype(">u2")), smla.DtypeError, "q: dtype >u2"),
    (lambda k: dict(q=k["q"].view(np.int16)), smla.DtypeError, "q: dtype int16"),
    (lambda k: dict(q=k["q"][0]), smla.ShapeError, "q: 2 dimensions"),
    (lambda k: dict(q=k["q"][:, :, :256]), smla.ShapeError, "q: shape [6, 8, 256]"),
    (lambda k: dict(q=np.zeros((6, 12, 512), np.uint16)), smla.HeadsError, "q: 12 heads"),
    (lambda k: dict(q=with_stride_two(k["q"])), smla.StrideError, "q: stride 2 of dimension 2"),
    (lambda k: dict(q=misaligned(k["q"])), smla.AlignmentError, "q: data pointer"),
    (lambda k: dict(swa_cache=None), smla.NullPointerError, "swa_cache is required"),
    (lambda k: dict(swa_cache=k["swa_cache"].astype(np.float32)), smla.DtypeError,
     "swa_cache: dtype float32"),
    (lambda k: dict(swa_cache=k["swa_cache"][:, :, :256]), smla.ShapeError,
     "swa_cache: shape [4, 16, 256]"),
    (lambda k: dict(swa_cache=k["swa_cache"][None]), smla.ShapeError,
     "swa_cache: 4 dimensions"),
    (lambda k: dict(swa_cache=k["swa_cache"][:, ::2]), smla.StrideError,
     "swa_cache: strides [8192, 1024, 1]"),
    (lambda k: dict(block_size=8), smla.ShapeError, "swa_cache: block_size 8 given"),
    (lambda k: dict(extra_block_size=8), smla.ShapeError,
     "extra_cache: extra_block_size 8 given but the cache has 16 tokens per block"),
    (lambda k: dict(kv_format="fp8"), smla.KvFormatError,
     "swa_cache: kv_format 'fp8' given but the cache is uint16"),
    (lambda k: dict(kv_format="int4"), smla.KvFormatError, "kv_format: 'int4'"),
    (lambda k: dict(extra_cache=smla.kv_pack(np.zeros((64, 512)), "fp8", 16)),
     smla.KvFormatError, "extra_cache: kv_format 'bf16' given but the cache is uint8 "
     "[4, 16, 512], a fp8 cache"),
    (lambda k: dict(swa_indices=None), smla.NullPointerError, "swa_indices is required"),
    (lambda k: dict(swa_indices=k["swa_indices"].astype(np.int64)), smla.DtypeError,
     "swa_indices: dtype int64, expected int32"),
    (lambda k: dict(swa_indices=k["swa_indices"][:5]), smla.ShapeError,
     "swa_indices: shape [5, 6], but the token count of q is 6"),
    (lambda k: dict(swa_indices=k["swa_indices"][:, 0]), smla.ShapeError,
     "swa_indices: expected 2 dimensions"),
    (lambda k: dict(swa_indices=with_stride_two(k["swa_indices"])), smla.StrideError,
     "swa_indices: stride 2 of dimension 1"),
    (lambda k: dict(extra_indices=misaligned(k["extra_indices"])), smla.AlignmentError,
     "extra_indices: data pointer"),
    (lambda k: dict(extra_cache=None), smla.NullPointerError,
     "extra_indices given without extra_cache"),
    (lambda k: dict(extra_indices=None), smla.NullPointerError,
     "extra_cache given without extra_indices"),
    (lambda k: dict(extra_cache=None, extra_indices=None), smla.NullPointerError,
     "extra_lens given but extra.data is NULL"),
    (lambda k: dict(swa_lens=k["swa_lens"][:4]), smla.ShapeError, "swa_lens: shape [4]"),
    (lambda k: dict(extra_lens=k["extra_lens"].astype(np.float32)), smla.DtypeError,
     "extra_lens: dtype float32"),
    (lambda k: dict(seq_lens=None), smla.NullPointerError,
     "seq_lens is required with cu_seqlens_q"),
    (lambda k: dict(cu_seqlens_q=np.array([0, 3, 2, 5], I32)), smla.ValueRangeError,
     "cu_seqlens_q decreases"),
    (lambda k: dict(cu_seqlens_q=np.array([0, 1, 2, 7], I32)), smla.ValueRangeError,
     "cu_seqlens_q[3] = 7 is past the 6 tokens"),
    (lambda k: dict(seq_lens=k["seq_lens"][:2]), smla.ShapeError, "seq_lens: shape [2]"),
    (lambda k: dict(cu_seqlens_q=k["cu_seqlens_q"].astype(np.uint32)), smla.DtypeError,
     "cu_seqlens_q: dtype uint32"),
    (lambda k: dict(sinks=k["sinks"][:4]), smla.ShapeError,
     "sinks: shape [4], but the head count of q is 8"),
    (lambda k: dict(sinks=k["sinks"].astype(np.float64)), smla.DtypeError,
     "sinks: dtype float64"),
    (lambda k: dict(bmm1_scale=float("nan")), smla.ValueRangeError, "bmm1_scale is nan"),
    (lambda k: dict(bmm1_scale="big"), smla.DtypeError, "bmm1_scale: expected a float"),
    (lambda k: dict(bmm1_scale=np.ones(2)), smla.ShapeError, "bmm1_scale: an array of 2"),
    (lambda k: dict(bmm2_scale=float("inf")), smla.ValueRangeError, "bmm2_scale is inf"),
    (lambda k: dict(window=-1), smla.ValueRangeError, "window is -1"),
    (lambda k: dict(window=2**32 + 128), smla.ValueRangeError,
     "window: 4294967424 does not fit a 32-bit integer"),
    (lambda k: dict(window=128.0), smla.DtypeError, "window: expected an integer, got float"),
    (lambda k: dict(cu_seqlens_q=None, seq_lens=None, plan="plan"), smla.DtypeError,
     "plan: expected an smla.Plan, got str"),
    (lambda k: plan_instead_of_positions(k, close=True), smla.ValueRangeError,
     "plan: it has been closed"),
    (lambda k: plan_instead_of_positions(k, build=False), smla.ValueRangeError,
     "plan: it has never been built"),
    (lambda k: dict(split="half"), smla.ValueRangeError, "split: 'half'"),
    (lambda k: dict(out=np.zeros((6, 8, 512), np.float32)), smla.DtypeError,
     "out: dtype float32"),
    (lambda k: dict(out=np.zeros((6, 8, 511), np.uint16)), smla.ShapeError, "out: shape"),
    (lambda k: dict(out=np.zeros((5, 8, 512), np.uint16)), smla.ShapeError,
     "out: shape [5, 8, 512], but the token count of q is 6"),
    (lambda k: dict(out=read_only(np.zeros((6, 8, 512), np.uint16))), smla.ReadOnlyError,
     "out: the array is read-only"),
    (lambda k: dict(out=misaligned(np.zeros((6, 8, 512), np.uint16))),
     smla.AlignmentError, "out: data pointer"),
    (lambda k: dict(lse=np.zeros((6, 4), np.float32)), smla.ShapeError,
     "lse: shape [6, 4], but the head count of q is 8"),
    (lambda k: dict(lse=np.zeros((6, 8), np.float64)), smla.DtypeError, "lse: dtype float64"),
    (lambda k: dict(lse=read_only(np.zeros((6, 8), np.float32))), smla.ReadOnlyError,
     "lse: the array is read-only"),
]

DS_MLA_ARGUMENTS = [  # (changes from a valid fp8_ds_mla call, exception, message part)
    (lambda k: dict(block_size=2**32 + 16), smla.ValueRangeError,
     "block_size: 4294967312 does not fit a 32-bit integer"),
    (lambda k: dict(block_size=None), smla.ShapeError, "swa_cache: a [num_blocks, block_bytes] "
     "fp8_ds_mla cache needs block_size"),
    (lambda k: dict(swa_cache=k["swa_cache"][:, :9000]), smla.ShapeError,
     "swa_cache: 9000 bytes per block; block_size 16 in fp8_ds_mla needs 9792"),
    (lambda k: dict(extra_block_size=32), smla.ShapeError,
     "extra_cache: 9792 bytes per block; extra_block_size 32 in fp8_ds_mla needs 19008"),
    (lambda k: dict(swa_cache=with_stride_two(k["swa_cache"])), smla.StrideError,
     "swa_cache: the bytes of a block must be contiguous"),
    (lambda k: dict(swa_cache=k["swa_cache"].view(np.int8)), smla.DtypeError,
     "swa_cache: dtype int8, expected uint8"),
    (lambda k: dict(kv_format="bf16"), smla.KvFormatError,
     "swa_cache: kv_format 'bf16' given but the cache is uint8 [4, 9792], a fp8_ds_mla"),
]


def escaped(text):
    return "".join("\\" + c if c in "[]().+*?" else c for c in text)


def check_refused(base, changes, error, message):
    out = np.full(base["q"].shape[:2] + (smla.HEAD_DIM,), 0x1234, np.uint16)
    lse = np.full(base["q"].shape[:2], 5.0, np.float32)
    kwargs = dict(base, out=out, lse=lse)
    kwargs.update(changes)
    with pytest.raises(error, match=escaped(message)) as caught:
        smla.sparse_mla(**kwargs)
    assert isinstance(caught.value, smla.SmlaError)
    assert np.all(out == 0x1234) and np.all(lse == 5.0)  # nothing written


@pytest.mark.parametrize("change,error,message", BAD_ARGUMENTS,
                         ids=[m for _, _, m in BAD_ARGUMENTS])
def test_bad_argument(rng, change, error, message):
    base = cases.small_case(rng)
    smla.sparse_mla(**base)  # the base call is valid
    check_refused(base, change(base), error, message)


@pytest.mark.parametrize("change,error,message", DS_MLA_ARGUMENTS,
                         ids=[m for _, _, m in DS_MLA_ARGUMENTS])
def test_bad_ds_mla_argument(rng, change, error, message):
    base = cases.small_case(rng, "fp8_ds_mla")
    smla.sparse_mla(**base)
    check_refused(base, change(base), error, message)


def test_exceptions_are_builtin_kinds():
    assert issubclass(smla.DtypeError, TypeError)
    for cls in (smla.ShapeError, smla.StrideError, smla.AlignmentError, smla.HeadsError,
                smla.DeviceError, smla.ValueRangeError, smla.NullPointerError):
        assert issubclass(cls, ValueError)
    assert issubclass(smla.CudaError, RuntimeError)
    assert issubclass(smla.OutOfMemoryError, MemoryError)
    assert smla.HeadsError.status != smla.ShapeError.status
