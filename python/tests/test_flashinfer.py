"""trtllm_batch_decode_sparse_mla_dsv4 (FlashInfer's signature) against sparse_mla on the
same data: varlen and dense queries, HND / NHD / 3-D caches, sparse_topk_lens counting the
128 window columns, the workspace scratch, and its argument checks."""
import runpy

import numpy as np
import pytest

import cases
import smla
from conftest import REPO
from smla.flashinfer import SWA_COLUMNS

I32 = np.int32
HEADS = 16


def engine_batch(rng, kv_format="fp8", q_dtype="fp8", q_len=None, topk=48, page_size=32):
    """A decode batch in FlashInfer's arguments (NumPy); q_len fixed gives the dense form."""
    batch = int(rng.integers(1, 5))
    q_lens = np.full(batch, q_len) if q_len else rng.integers(1, 4, batch)
    cu = np.concatenate([[0], np.cumsum(q_lens)]).astype(I32)
    tokens = int(cu[-1])
    pages = 6
    rows = pages * page_size
    indices = rng.integers(-1, rows, size=(tokens, SWA_COLUMNS + topk)).astype(I32)
    lens = rng.integers(SWA_COLUMNS, SWA_COLUMNS + topk + 1, tokens)
    lens[rng.random(tokens) < 0.2] = rng.integers(0, SWA_COLUMNS)  # fewer than the window
    return dict(
        query=smla.quantize(rng.normal(size=(tokens, HEADS, smla.HEAD_DIM)),
                            "bf16" if q_dtype == "bf16" else "fp8_e4m3"),
        swa_kv_cache=smla.kv_pack(rng.normal(size=(rows, 512)), kv_format, page_size),
        workspace_buffer=np.zeros(1 << 16, np.uint8),
        sparse_indices=indices,
        compressed_kv_cache=smla.kv_pack(rng.normal(size=(rows, 512)), kv_format, page_size),
        sparse_topk_lens=lens.astype(I32),
        seq_lens=(q_lens + rng.integers(0, 300, batch)).astype(I32),
        bmm1_scale=0.05, bmm2_scale=1.5,
        sinks=rng.normal(size=HEADS).astype(np.float32),
        cum_seq_lens_q=cu, max_q_len=int(q_lens.max()))


def expected(b):
    """sparse_mla with the C API's engine layout, lens split as DESIGN section 2 says."""
    lens = b["sparse_topk_lens"]
    return smla.sparse_mla(
        b["query"], b["swa_kv_cache"], b["sparse_indices"][:, :SWA_COLUMNS],
        extra_cache=b["compressed_kv_cache"],
        extra_indices=b["sparse_indices"][:, SWA_COLUMNS:],
        swa_lens=np.minimum(lens, SWA_COLUMNS).astype(I32),
        extra_lens=np.maximum(lens - SWA_COLUMNS, 0).astype(I32),
        cu_seqlens_q=b["cum_seq_lens_q"], seq_lens=b["seq_lens"], sinks=b["sinks"],
        bmm1_scale=b["bmm1_scale"], bmm2_scale=b["bmm2_scale"], window=SWA_COLUMNS)


def test_the_example():
    """examples/flashinfer_decode.py runs and computes what sparse_mla computes."""
    example = runpy.run_path(str(REPO / "examples" / "flashinfer_decode.py"))
    b = {name: example[name] for name in ("sparse_indices", "sparse_topk_lens", "seq_lens",
                                          "sinks")}
    batch, q_len = example["query"].shape[:2]
    b.update(query=example["query"].reshape(batch * q_len, HEADS, smla.HEAD_DIM),
             swa_kv_cache=example["swa_kv_cache"][:, 0],
             compressed_kv_cache=example["compressed_kv_cache"][:, 0],
             cum_seq_lens_q=np.arange(0, (batch + 1) * q_len, q_len, dtype=I32),
             bmm1_scale=512 ** -0.5, bmm2_scale=1.0)
    assert cases.same_bits(example["out"].reshape(b["query"].shape), expected(b))


@pytest.mark.parametrize("kv_format,q_dtype", [("fp8", "fp8"), ("bf16", "bf16"),
                                               ("bf16", "fp8")])
def test_varlen_matches_sparse_mla(rng, kv_format, q_dtype):
    b = engine_batch(rng, kv_format, q_dtype)
    out = smla.trtllm_batch_decode_sparse_mla_dsv4(**b)
    assert cases.same_bits(out, expected(b))
    workspace = b["workspace_buffer"]
    assert not workspace[:1024].any()  # FlashInfer's counters at the start stay zero
    tokens = len(b["sparse_topk_lens"])
    tail = workspace[-((4 * tokens + 15) // 16 * 16):].view(I32)[:tokens]
    assert tail.tolist() == (b["sparse_topk_lens"] - SWA_COLUMNS).tolist()


def test_given_out_is_filled_and_returned(rng):
    b = engine_batch(rng)
    out = np.zeros(b["query"].shape, np.uint16)
    assert smla.trtllm_batch_decode_sparse_mla_dsv4(**b, out=out) is out
    assert cases.same_bits(out, expected(b))


def test_lens_count_the_window(rng):
    """n = 128 is the window alone; n = 128 + k adds the first k compressed columns."""
    b = engine_batch(rng)
    b["sparse_topk_lens"][:] = SWA_COLUMNS
    swa_only = smla.sparse_mla(b["query"], b["swa_kv_cache"],
                               b["sparse_indices"][:, :SWA_COLUMNS],
                               cu_seqlens_q=b["cum_seq_lens_q"], seq_lens=b["seq_lens"],
                               sinks=b["sinks"], bmm1_scale=0.05, bmm2_scale=1.5)
    assert cases.same_bits(smla.trtllm_batch_decode_sparse_mla_dsv4(**b), swa_only)
    k = 5
    b["sparse_topk_lens"][:] = SWA_COLUMNS + k
    first_k = smla.sparse_mla(b["query"], b["swa_kv_cache"],
                              b["sparse_indices"][:, :SWA_COLUMNS],
                              extra_cache=b["compressed_kv_cache"],
                              extra_indices=b["sparse_indices"][:, SWA_COLUMNS:SWA_COLUMNS + k],
                              cu_seqlens_q=b["cum_seq_lens_q"], seq_lens=b["seq_lens"],
                              sinks=b["sinks"], bmm1_scale=0.05, bmm2_scale=1.5)
    assert cases.same_bits(smla.trtllm_batch_decode_sparse_mla_dsv4(**b), first_k)


def test_dense_query_matches_varlen(rng):
    b = engine_batch(rng, q_len=2)
    varlen = smla.trtllm_batch_decode_sparse_mla_dsv4(**b)
    batch = len(b["seq_lens"])
    dense = dict(b, query=b["query"].reshape(batch, 2, HEADS, smla.HEAD_DIM),
                 cum_seq_lens_q=None, max_q_len=None)
    out = smla.trtllm_batch_decode_sparse_mla_dsv4(**dense)
    assert out.shape == (batch, 2, HEADS, smla.HEAD_DIM)
    assert cases.same_bits(out.reshape(varlen.shape), varlen)


def test_cache_layouts(rng):
    b = engine_batch(rng)
    want = smla.trtllm_batch_decode_sparse_mla_dsv4(**b)
    hnd = {k: b[k][:, None] for k in ("swa_kv_cache", "compressed_kv_cache")}
    nhd = {k: b[k][:, :, None] for k in ("swa_kv_cache", "compressed_kv_cache")}
    assert cases.same_bits(smla.trtllm_batch_decode_sparse_mla_dsv4(**dict(b, **hnd)), want)
    got = smla.trtllm_batch_decode_sparse_mla_dsv4(**dict(b, **nhd), kv_layout="NHD")
    assert cases.same_bits(got, want)


def test_swa_only_indices(rng):
    b = engine_batch(rng)
    b["sparse_indices"] = np.ascontiguousarray(b["sparse_indices"][:, :SWA_COLUMNS])
    out = smla.trtllm_batch_decode_sparse_mla_dsv4(**b)
    want = smla.sparse_mla(b["query"], b["swa_kv_cache"], b["sparse_indices"],
                           swa_lens=b["sparse_topk_lens"], cu_seqlens_q=b["cum_seq_lens_q"],
                           seq_lens=b["seq_lens"], sinks=b["sinks"], bmm1_scale=0.05,
                           bmm2_scale=1.5)
    assert cases.same_bits(out, want)


BAD = [  # (changes, exception, message part)
    (lambda b: dict(query=b["query"][None]), smla.ShapeError, "query: 4 dimensions"),
    (lambda b: dict(cum_seq_lens_q=None), smla.ShapeError, "query: 3 dimensions"),
    (lambda b: dict(max_q_len=0), smla.ValueRangeError, "max_q_len: 0"),
    (lambda b: dict(sparse_indices=b["sparse_indices"][:, :100]), smla.ShapeError,
     "sparse_indices: shape"),
    (lambda b: dict(sparse_indices=b["sparse_indices"][0]), smla.ShapeError,
     "sparse_indices: 1 dimensions"),
    (lambda b: dict(sparse_topk_lens=b["sparse_topk_lens"][1:]), smla.ShapeError,
     "sparse_topk_lens: shape"),
    (lambda b: dict(sparse_topk_lens=b["sparse_topk_lens"].astype(np.int64)),
     smla.DtypeError, "sparse_topk_lens: dtype int64"),
    (lambda b: dict(workspace_buffer=np.zeros(2, np.uint8)), smla.ShapeError,
     "workspace_buffer: 2 bytes"),
    (lambda b: dict(workspace_buffer=np.zeros(1 << 16, np.uint8)[::2]), smla.StrideError,
     "workspace_buffer: must be contiguous"),
    (lambda b: dict(workspace_buffer=None), smla.NullPointerError,
     "workspace_buffer is required"),
    (lambda b: dict(compressed_kv_cache=None), smla.NullPointerError,
     "compressed_kv_cache is required"),
    (lambda b: dict(kv_layout="HDN"), smla.KvFormatError, "kv_layout: 'HDN'"),
    (lambda b: dict(kv_layout="NHD"), smla.ShapeError, "swa_kv_cache: 3 dimensions"),
    (lambda b: dict(swa_kv_cache=np.zeros((2, 2, 32, 512), np.uint8)), smla.ShapeError,
     "swa_kv_cache: shape [2, 2, 32, 512]; HND needs one KV head"),
    (lambda b: dict(out=np.zeros((len(b["query"]) + 1, 16, 512), np.uint16)), smla.ShapeError,
     "out: shape"),
    (lambda b: dict(seq_lens=b["seq_lens"][:0]), smla.ShapeError, "seq_lens: shape [0]"),
    (lambda b: dict(sinks=b["sinks"][:3]), smla.ShapeError, "sinks: shape [3]"),
]


@pytest.mark.parametrize("change,error,message", BAD, ids=[m for _, _, m in BAD])
def test_bad_argument(rng, change, error, message):
    b = engine_batch(rng)
    with pytest.raises(error, match=message.replace("[", "\\[").replace("]", "\\]")):
        smla.trtllm_batch_decode_sparse_mla_dsv4(**dict(b, **change(b)))


def test_dense_max_q_len_must_match(rng):
    b = engine_batch(rng, q_len=2)
    dense = dict(b, query=b["query"].reshape(-1, 2, HEADS, smla.HEAD_DIM), cum_seq_lens_q=None,
                 max_q_len=3)
    with pytest.raises(smla.ValueRangeError, match="max_q_len: 3"):
        smla.trtllm_batch_decode_sparse_mla_dsv4(**dense)


def test_signature_is_flashinfers():
    import inspect
    names = list(inspect.signature(smla.trtllm_batch_decode_sparse_mla_dsv4).parameters)
    assert names == ["query", "swa_kv_cache", "workspace_buffer", "sparse_indices",
                     "compressed_kv_cache", "sparse_topk_lens", "seq_lens", "out",
                     "bmm1_scale", "bmm2_scale", "sinks", "kv_layout", "cum_seq_lens_q",
                     "max_q_len", "enable_pdl"]
