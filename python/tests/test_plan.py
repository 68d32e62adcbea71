"""smla.Plan on the host: the seed's example, persistent views, attention through a plan
equal bit for bit to attention through cu_seqlens_q/seq_lens, and every build error."""
import numpy as np
import pytest

import cases
import smla

I32 = np.int32


def seed_example():
    """DESIGN's example: queries 1,1,2051,19,1024 over prefixes 5000,9000,3,0,99000."""
    q_lens = np.array([1, 1, 2051, 19, 1024])
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(I32)
    seq_lens = (np.array([5000, 9000, 3, 0, 99000]) + q_lens).astype(I32)
    return qsl, seq_lens


def test_seed_example():
    qsl, seq_lens = seed_example()
    plan = smla.Plan(4096, 8).build(qsl, seq_lens, 1, "fp8")
    assert (plan.num_requests, plan.num_decodes, plan.num_decode_tokens,
            plan.num_prefill_tokens, plan.num_segments, plan.max_segment_len,
            plan.segment_cap) == (5, 2, 2, 3094, 5, 1024, 1024)
    assert plan.decode_query_starts.tolist() == [0, 1, 2]
    assert plan.decode_seq_lens.tolist() == [5001, 9001]
    assert plan.decode_token_positions is None  # device plans only
    assert plan.segment_query_starts.tolist() == [0, 684, 1368, 2051, 2070, 3094]
    assert plan.segment_seq_lens.tolist() == [687, 1371, 2054, 19, 100024]
    assert plan.segment_requests.tolist() == [2, 2, 2, 3, 4]
    assert plan.host_segment_query_starts.tolist() == plan.segment_query_starts.tolist()
    assert plan.host_segment_requests.tolist() == [2, 2, 2, 3, 4]
    assert plan.host_decode_query_starts.tolist() == [0, 1, 2]
    bf16 = plan.build(qsl, seq_lens, 1, "bf16")  # BF16 prefill is not segmented
    assert bf16.segment_query_starts.tolist() == [0, 2051, 2070, 3094]
    assert plan.build(qsl, seq_lens, 1, "fp8", cap=0).num_segments == 3
    assert plan.build(qsl, seq_lens, 2, "bf16", cap=1000).segment_seq_lens.tolist() == \
        [687, 1371, 2054, 19, 99512, 100024]


@pytest.mark.parametrize("query_dtype", ["fp8", "fp8_e4m3", "float8_e4m3fn", np.uint8,
                                         np.dtype(np.uint8), np.zeros(1, np.uint8)])
def test_query_dtype_spellings(query_dtype):
    qsl, seq_lens = seed_example()
    assert smla.Plan(4096, 8).build(qsl, seq_lens, 1, query_dtype).segment_cap == 1024


def test_views_are_the_persistent_buffers():
    qsl, seq_lens = seed_example()
    plan = smla.Plan(4096, 8).build(qsl, seq_lens, 1, "fp8")
    view = plan.segment_seq_lens
    address = view.__array_interface__["data"][0]
    plan.build(qsl, seq_lens + 17, 1, "fp8")
    assert view.tolist() == [704, 1388, 2071, 36, 100041]  # the old view sees the rebuild
    assert plan.segment_seq_lens.__array_interface__["data"][0] == address
    del plan
    assert view.tolist() == [704, 1388, 2071, 36, 100041]  # the view keeps the plan alive


def random_batch(rng, max_requests=6):
    """Decodes first, then prefills: (query_start_loc, seq_lens)."""
    decodes = int(rng.integers(0, 4))
    prefills = int(rng.integers(0 if decodes else 1, max_requests - decodes + 1))
    q_lens = np.concatenate([rng.integers(0, 3, decodes), rng.integers(3, 40, prefills)])
    seq_lens = q_lens + rng.integers(0, 300, len(q_lens))
    return (np.concatenate([[0], np.cumsum(q_lens)]).astype(I32), seq_lens.astype(I32))


@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "fp8_ds_mla"])
@pytest.mark.parametrize("q_dtype,cap", [("fp8", 5), ("fp8", None), ("bf16", 7), ("bf16", 0)])
def test_plan_gives_the_bits_of_positions(rng, kv_format, q_dtype, cap):
    qsl, seq_lens = random_batch(rng)
    tokens = int(qsl[-1]) + int(rng.integers(0, 3))  # padding rows after the batch
    kwargs = cases.small_case(rng, kv_format, q_dtype, tokens=tokens, heads=16)
    kwargs.update(cu_seqlens_q=qsl, seq_lens=seq_lens, window=int(rng.choice([4, 128])))
    want_out, want_lse = smla.sparse_mla(**kwargs, return_lse=True)
    plan = smla.Plan(256, 8).build(qsl, seq_lens, 2, kwargs["q"], cap)
    kwargs.update(cu_seqlens_q=None, seq_lens=None, plan=plan)
    out, lse = smla.sparse_mla(**kwargs, return_lse=True)
    assert cases.same_bits(out, want_out) and cases.same_bits(lse, want_lse)


def test_attention_needs_the_planned_tokens(rng):
    qsl, seq_lens = np.array([0, 1, 9], I32), np.array([5, 20], I32)
    plan = smla.Plan(16, 4).build(qsl, seq_lens, 1, "bf16")
    kwargs = cases.small_case(rng, tokens=6)
    with pytest.raises(smla.ShapeError, match="plan: 1 decode \\+ 8 prefill tokens"):
        smla.sparse_mla(**dict(kwargs, cu_seqlens_q=None, seq_lens=None), plan=plan)
    with pytest.raises(smla.ValueRangeError, match="plan and cu_seqlens_q/seq_lens"):
        smla.sparse_mla(**kwargs, plan=plan)


BAD_BUILDS = [  # (changes to build's arguments, exception, message part)
    (dict(query_start_loc_cpu=[0, 1, 2]), smla.DtypeError, "query_start_loc_cpu: expected"),
    (dict(query_start_loc_cpu=np.array([0, 1, 2], np.int64)), smla.DtypeError,
     "query_start_loc_cpu: dtype int64"),
    (dict(seq_lens=np.array([3, 4], np.uint32)), smla.DtypeError, "seq_lens: dtype uint32"),
    (dict(query_start_loc_cpu=np.array([[0, 1, 2]], I32)), smla.ShapeError,
     "query_start_loc_cpu: 2 dimensions"),
    (dict(query_start_loc_cpu=np.array([0, 9, 1, 9, 2], I32)[::2]), smla.StrideError,
     "query_start_loc_cpu: must be contiguous"),
    (dict(query_start_loc_cpu=np.array([0, 1], I32)), smla.ShapeError,
     "query_start_loc_cpu: 2 entries; 2 requests need 3"),
    (dict(num_requests=3), smla.ShapeError, "seq_lens: 2 entries but num_requests is 3"),
    (dict(query_dtype="int8"), smla.DtypeError, "query_dtype"),
    (dict(cap=-2), smla.ValueRangeError, "cap: -2"),
    (dict(cap=2**32 + 1), smla.ValueRangeError, "cap: 4294967297 does not fit a 32-bit"),
    (dict(cap=2.5), smla.DtypeError, "cap: expected an integer, got float"),
    (dict(decode_threshold=2**31), smla.ValueRangeError,
     "decode_threshold: 2147483648 does not fit"),
    (dict(num_requests=1 - 2**32), smla.ValueRangeError, "num_requests: -4294967295"),
    (dict(decode_threshold=-1), smla.ValueRangeError, "decode_threshold must be >= 0"),
    (dict(query_start_loc_cpu=np.array([1, 2, 3], I32)), smla.ValueRangeError,
     "query_start_loc[0] must be 0"),
    (dict(query_start_loc_cpu=np.array([0, 3, 2], I32)), smla.ValueRangeError,
     "query_start_loc decreases at request 1"),
    (dict(query_start_loc_cpu=np.array([0, 3, 4], I32)), smla.BatchOrderError,
     "decodes must come first"),
    (dict(query_start_loc_cpu=np.array([0, 1, 40], I32), seq_lens=np.array([5, 50], I32)),
     smla.CapacityError, "max_tokens = 32"),
    (dict(query_start_loc_cpu=np.array([0, 1, 2, 3, 4, 5], I32),
          seq_lens=np.ones(5, I32)), smla.CapacityError, "max_requests = 4"),
    (dict(seq_lens=np.array([5, 1], I32)), smla.ValueRangeError,
     "seq_lens[1] = 1 is less than its query length 3"),
]


@pytest.mark.parametrize("changes,error,message", BAD_BUILDS,
                         ids=[m for _, _, m in BAD_BUILDS])
def test_bad_build(changes, error, message):
    plan = smla.Plan(32, 4)
    good = dict(query_start_loc_cpu=np.array([0, 1, 4], I32), seq_lens=np.array([5, 9], I32),
                decode_threshold=1, query_dtype="bf16")
    plan.build(**good)
    before = (plan.num_decodes, plan.segment_seq_lens.tolist())
    with pytest.raises(error, match=message.replace("[", "\\[").replace("+", "\\+")):
        plan.build(**dict(good, **changes))
    assert (plan.num_decodes, plan.segment_seq_lens.tolist()) == before  # unchanged


def test_bad_plans():
    with pytest.raises(smla.ValueRangeError, match="max_tokens must be >= 1"):
        smla.Plan(0, 4)
    with pytest.raises(smla.ValueRangeError, match="max_segments must be >= 0"):
        smla.Plan(4, 4, max_segments=-1)
    with pytest.raises(smla.DeviceError, match="device: 'tpu'"):
        smla.Plan(4, 4, device="tpu")
    with pytest.raises(smla.ValueRangeError, match="max_tokens: 4294967360 does not fit"):
        smla.Plan(max_tokens=2**32 + 64, max_requests=4)
    with pytest.raises(smla.ValueRangeError, match="max_requests: -4294967295"):
        smla.Plan(4, 1 - 2**32)
    with pytest.raises(smla.ValueRangeError, match="max_segments: 2147483648"):
        smla.Plan(4, 4, max_segments=2**31)
    plan = smla.Plan(4, 4)
    plan.close()
    with pytest.raises(smla.ValueRangeError, match="closed"):
        plan.build(np.array([0, 1], I32), np.array([3], I32), 1, "bf16")


def test_device_plan_without_torch_or_gpu():
    try:
        import torch
    except ImportError:
        with pytest.raises(ImportError, match="PyTorch"):
            smla.Plan(4, 4, device="cuda:0")
        return
    if not torch.cuda.is_available():
        with pytest.raises((smla.BackendError, RuntimeError)):
            smla.Plan(4, 4, device="cuda:0")
