"""smla.flash_mla (FlashMLA's calls) on NumPy: each call against the float64 oracle of
tests/oracle and bit for bit against sparse_mla on the same data, with FlashMLA's layouts
(strided q, kv and index rows, padded MODEL1 blocks, pools of their own page sizes), its
conventions (lse +inf and max_logits -inf without valid entries, decode lse [b, h_q, s_q],
lengths per request in decode) and its argument checks."""
import inspect

import numpy as np
import pytest

import attention as oracle
import cases
import smla
from smla.flash_mla import (FlashMLASchedMeta, flash_mla_sparse_fwd, flash_mla_with_kvcache,
                            get_mla_metadata)

I32 = np.int32
HEADS = 16
TOKEN_BYTES = 584
INVALID_IDS = [-2**31, -123456, -1, 2**31 - 1, 114514]  # FlashMLA's test candidates, in part


def strided(array, fill):
    """array as a view with every dimension strided (each one longer by 1, the last by 128),
    as FlashMLA's tests make their inputs."""
    shape = tuple(n + 1 for n in array.shape[:-1]) + (array.shape[-1] + 128,)
    big = np.full(shape, fill, array.dtype)
    view = big[tuple(slice(0, n) for n in array.shape)]
    view[...] = array
    return view


def random_indices(rng, shape, rows):
    """Slot ids in [0, rows), about a tenth of them invalid (FlashMLA's kinds of invalid)."""
    ids = rng.integers(0, max(rows, 1), size=shape)
    invalid = rng.random(shape) < 0.1
    ids[invalid] = rng.choice(INVALID_IDS + [rows], size=int(invalid.sum()))
    return ids.astype(I32)


def random_sinks(rng, heads):
    sinks = rng.normal(2.0, 1.0, heads).astype(np.float32)
    sinks[0], sinks[1] = -np.inf, np.inf
    return sinks


def smla_lse(flash_lse):
    """FlashMLA's lse (+inf: no valid entry) in smla's convention (-inf); checks it has no
    -inf of its own."""
    assert not np.any(np.isneginf(flash_lse))
    return np.where(np.isposinf(flash_lse), -np.inf, flash_lse).astype(np.float32)


def oracle_max_logits(tensors, metadata):
    """scale * max q.k over each token's active entries (-inf: none), from the oracle."""
    p = oracle.Problem({name: (dtype, array) for name, dtype, array in tensors}, metadata)
    result = np.full((p.num_tokens, p.num_heads), -np.inf)
    for t in range(p.num_tokens):
        rows = p.token_rows(t)
        if len(rows):
            result[t] = (p.bmm1 * (p.q[t] @ rows.T)).max(axis=1)
    return result


def check_against_oracle(tmp_path, kwargs, out, lse):
    """out, lse (smla's convention) against the oracle's float64 result for sparse_mla's
    keyword arguments kwargs."""
    tensors, metadata = cases.oracle_problem(kwargs)
    failures = cases.oracle_failures(tmp_path, tensors, metadata, out, lse)
    assert not failures, "; ".join(failures)
    return tensors, metadata


# ------------------------------------------------------------------ flash_mla_sparse_fwd

def prefill_case(rng, s_q=7, s_kv=50, topk=24, heads=HEADS, sink=True, lengths=True):
    """flash_mla_sparse_fwd's arguments (NumPy), every array strided as in FlashMLA's tests;
    token 0 has no valid index, token 1 a length of 0."""
    q = smla.quantize(rng.normal(size=(s_q, heads, 512)) * 0.3, "bf16")
    kv = smla.quantize(rng.normal(size=(s_kv, 1, 512)), "bf16")
    indices = random_indices(rng, (s_q, 1, topk), s_kv)
    indices[0] = -1
    topk_length = rng.integers(0, topk + 3, s_q).astype(I32)
    topk_length[1] = 0
    return dict(q=strided(q, 0x7FC0), kv=strided(kv, 0x7FC0),
                indices=strided(indices, 0), sm_scale=0.07,
                attn_sink=random_sinks(rng, heads) if sink else None,
                topk_length=topk_length if lengths else None)


def prefill_as_sparse_mla(a):
    """The sparse_mla arguments of a prefill: one index set, no positions (q contiguous:
    sparse_mla reads its heads 512 apart)."""
    return dict(q=np.ascontiguousarray(a["q"]), swa_cache=a["kv"],
                swa_indices=a["indices"][:, 0], swa_lens=a["topk_length"], sinks=a["attn_sink"], bmm1_scale=a["sm_scale"],
                kv_format="bf16")


@pytest.mark.parametrize("sink,lengths", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("heads", [16, 64])
def test_sparse_fwd_matches_oracle(rng, tmp_path, sink, lengths, heads):
    a = prefill_case(rng, heads=heads, sink=sink, lengths=lengths)
    out, max_logits, lse = flash_mla_sparse_fwd(**a)
    assert out.shape == (7, heads, 512) and out.dtype == np.uint16
    assert max_logits.shape == lse.shape == (7, heads)
    assert max_logits.dtype == lse.dtype == np.float32
    kwargs = prefill_as_sparse_mla(a)
    tensors, metadata = check_against_oracle(tmp_path, kwargs, out, smla_lse(lse))
    want = oracle_max_logits(tensors, metadata)
    assert np.array_equal(np.isneginf(max_logits), np.isneginf(want))
    finite = np.isfinite(want)
    assert np.all(np.abs(max_logits[finite] - want[finite])
                  <= 2.0 ** -20 * np.maximum(1, np.abs(want[finite])))
    assert np.all(np.isposinf(lse[0])) and np.all(out[0] == 0)  # no valid index
    if lengths:
        assert np.all(np.isposinf(lse[1])) and np.all(np.isneginf(max_logits[1]))
    want_out, want_lse = smla.sparse_mla(**kwargs, return_lse=True)
    assert cases.same_bits(out, want_out) and cases.same_bits(smla_lse(lse), want_lse)


def test_sparse_fwd_layouts_give_the_same_bits(rng):
    """Strided inputs (q's heads too: copied) and contiguous ones; a tensor scale."""
    a = prefill_case(rng)
    want = flash_mla_sparse_fwd(**a)
    plain = {k: np.ascontiguousarray(v) if isinstance(v, np.ndarray) else v
             for k, v in a.items()}
    for got in (flash_mla_sparse_fwd(**plain),
                flash_mla_sparse_fwd(**dict(a, sm_scale=np.float32(a["sm_scale"])))):
        assert all(cases.same_bits(g, w) for g, w in zip(got, want))


def test_sparse_fwd_empty_kv(rng):
    a = prefill_case(rng)
    out, max_logits, lse = flash_mla_sparse_fwd(**dict(a, kv=a["kv"][:0]))
    assert np.all(out == 0) and np.all(np.isneginf(max_logits)) and np.all(np.isposinf(lse))


def test_sparse_fwd_without_max_logits(rng):
    a = prefill_case(rng)
    out, max_logits, lse = flash_mla_sparse_fwd(**a, return_max_logits=False)
    want = flash_mla_sparse_fwd(**a)
    assert max_logits is None
    assert cases.same_bits(out, want[0]) and cases.same_bits(lse, want[2])


def test_sparse_fwd_defaults(rng):
    a = prefill_case(rng)
    out, _, lse = flash_mla_sparse_fwd(a["q"], a["kv"], a["indices"], a["sm_scale"])
    want = smla.sparse_mla(**dict(prefill_as_sparse_mla(a), swa_lens=None, sinks=None),
                           return_lse=True)
    assert cases.same_bits(out, want[0]) and cases.same_bits(smla_lse(lse), want[1])


# ---------------------------------------------------------------- flash_mla_with_kvcache

def model1_view(cache, block_size):
    """FlashMLA's [num_blocks, block_size, 1, 584] view of an fp8_ds_mla cache
    [num_blocks, block_bytes], as its quantize_k_cache makes it."""
    return cache[:, :block_size * TOKEN_BYTES].reshape(len(cache), block_size, 1, TOKEN_BYTES)


def model1_cache(rng, num_blocks, block_size):
    """(FlashMLA's view, the fp8_ds_mla cache under it) of random rows."""
    cache = smla.kv_pack(rng.normal(size=(num_blocks * block_size, 512)), "fp8_ds_mla",
                         block_size)
    return model1_view(cache, block_size), cache


def decode_case(rng, b=3, s_q=2, block_size=64, extra_block_size=None, topk=20,
                extra_topk=12, lengths=True, heads=HEADS):
    """(flash_mla_with_kvcache's arguments, the caches under its views), NumPy; q and the
    index rows strided as in FlashMLA's tests."""
    blocks = 3
    k_cache, swa = model1_cache(rng, blocks, block_size)
    q = smla.quantize(rng.normal(size=(b, s_q, heads, 512)) * 0.3, "bf16")
    a = dict(q=strided(q, 0x7FC0), k_cache=k_cache, block_table=None, cache_seqlens=None,
             head_dim_v=512, tile_scheduler_metadata=get_mla_metadata()[0], num_splits=None,
             softmax_scale=0.05, causal=False, is_fp8_kvcache=True,
             indices=strided(random_indices(rng, (b, s_q, topk), blocks * block_size), 0),
             attn_sink=random_sinks(rng, heads))
    caches = dict(swa=swa)
    if lengths:
        a["topk_length"] = rng.integers(0, topk + 1, b).astype(I32)
    if extra_block_size is not None:
        a["extra_k_cache"], caches["extra"] = model1_cache(rng, blocks, extra_block_size)
        a["extra_indices_in_kvcache"] = strided(
            random_indices(rng, (b, s_q, extra_topk), blocks * extra_block_size), 0)
        if lengths:
            a["extra_topk_length"] = rng.integers(0, extra_topk + 1, b).astype(I32)
    return a, caches


def decode_as_sparse_mla(a, caches):
    """The sparse_mla arguments of a decode: tokens [b * s_q], each request's lengths for
    each of its tokens, no positions (q contiguous)."""
    b, s_q = a["q"].shape[:2]
    tokens = b * s_q

    def per_token(name):
        lens = a.get(name)
        return None if lens is None else np.repeat(lens, s_q)

    kwargs = dict(q=np.ascontiguousarray(a["q"]).reshape(tokens, -1, 512),
                  swa_cache=caches["swa"], swa_indices=a["indices"].reshape(tokens, -1),
                  swa_lens=per_token("topk_length"), sinks=a["attn_sink"],
                  bmm1_scale=a["softmax_scale"], kv_format="fp8_ds_mla",
                  block_size=a["k_cache"].shape[1])
    if "extra" in caches:
        kwargs.update(extra_cache=caches["extra"],
                      extra_indices=a["extra_indices_in_kvcache"].reshape(tokens, -1),
                      extra_lens=per_token("extra_topk_length"),
                      extra_block_size=a["extra_k_cache"].shape[1])
    return kwargs


DECODE_SHAPES = [  # (block_size, extra_block_size or None, s_q, lengths)
    (64, None, 1, True), (61, None, 3, False), (256, 64, 2, True), (64, 2, 1, True),
    (2, 69, 2, False), (53, 53, 1, False)]


@pytest.mark.parametrize("block_size,extra_block_size,s_q,lengths", DECODE_SHAPES)
def test_decode_matches_oracle(rng, tmp_path, block_size, extra_block_size, s_q, lengths):
    a, caches = decode_case(rng, s_q=s_q, block_size=block_size,
                            extra_block_size=extra_block_size, lengths=lengths)
    out, lse = flash_mla_with_kvcache(**a)
    b = a["q"].shape[0]
    assert out.shape == (b, s_q, HEADS, 512) and out.dtype == np.uint16
    assert lse.shape == (b, HEADS, s_q) and lse.dtype == np.float32
    assert lse.strides == (4 * s_q * HEADS, 4, 4 * HEADS)  # [b, s_q, h_q] transposed
    tokens_lse = smla_lse(lse.swapaxes(1, 2).reshape(b * s_q, HEADS))
    kwargs = decode_as_sparse_mla(a, caches)
    check_against_oracle(tmp_path, kwargs, out.reshape(b * s_q, HEADS, 512), tokens_lse)
    want_out, want_lse = smla.sparse_mla(**kwargs, return_lse=True)
    assert cases.same_bits(out.reshape(want_out.shape), want_out)
    assert cases.same_bits(tokens_lse, want_lse)


def test_decode_lengths_are_per_request(rng):
    """topk_length[i] (and extra_topk_length[i]) holds for every query token of request i:
    the same as the indices cut to that many columns."""
    a, caches = decode_case(rng, s_q=3, extra_block_size=16)
    out, lse = flash_mla_with_kvcache(**a)
    cut = dict(a, topk_length=None, extra_topk_length=None)
    for name, lens in (("indices", a["topk_length"]),
                       ("extra_indices_in_kvcache", a["extra_topk_length"])):
        rows = a[name].copy()
        past = np.arange(rows.shape[2])[None, None, :] >= lens[:, None, None]
        rows[np.broadcast_to(past, rows.shape)] = -1
        cut[name] = rows
    want_out, want_lse = flash_mla_with_kvcache(**cut)
    assert cases.same_bits(out, want_out) and cases.same_bits(lse, want_lse)


def test_decode_layouts_and_cache_dtypes(rng):
    """Contiguous inputs, an unpadded view of the cache's last block, int8 bytes, one block,
    the default scale: the same bits."""
    a, caches = decode_case(rng, extra_block_size=32)
    want = flash_mla_with_kvcache(**a)
    plain = {k: np.ascontiguousarray(v) if k in ("q", "indices", "extra_indices_in_kvcache")
             else v for k, v in a.items()}
    as_int8 = dict(a, k_cache=a["k_cache"].view(np.int8),
                   extra_k_cache=a["extra_k_cache"].view(np.int8))
    for got in (flash_mla_with_kvcache(**plain), flash_mla_with_kvcache(**as_int8)):
        assert all(cases.same_bits(g, w) for g, w in zip(got, want))
    one_block, one = model1_cache(rng, 1, 64)
    indices = rng.integers(-1, 64, size=a["indices"].shape).astype(I32)
    got = flash_mla_with_kvcache(**dict(a, k_cache=one_block, indices=indices))
    more = model1_view(np.concatenate([one, caches["swa"]]), 64)  # the block, then others
    want_one = flash_mla_with_kvcache(**dict(a, k_cache=more, indices=indices))
    assert all(cases.same_bits(g, w) for g, w in zip(got, want_one))
    default = flash_mla_with_kvcache(**dict(a, softmax_scale=None))
    expected = smla.sparse_mla(**dict(decode_as_sparse_mla(a, caches), bmm1_scale=512 ** -0.5))
    assert cases.same_bits(default[0].reshape(expected.shape), expected)


def test_metadata_is_reusable(rng):
    meta, splits = get_mla_metadata(np.zeros(3, I32), 1, 1, HEADS, is_fp8_kvcache=True)
    assert isinstance(meta, FlashMLASchedMeta) and splits is None
    for s_q in (1, 2):  # one metadata object, calls of other shapes
        a, _ = decode_case(rng, s_q=s_q)
        flash_mla_with_kvcache(**dict(a, tile_scheduler_metadata=meta))


def test_signatures_are_flashmlas():
    assert list(inspect.signature(flash_mla_with_kvcache).parameters) == [
        "q", "k_cache", "block_table", "cache_seqlens", "head_dim_v", "tile_scheduler_metadata",
        "num_splits", "softmax_scale", "causal", "is_fp8_kvcache", "indices", "attn_sink",
        "extra_k_cache", "extra_indices_in_kvcache", "topk_length", "extra_topk_length"]
    assert list(inspect.signature(flash_mla_sparse_fwd).parameters) == [
        "q", "kv", "indices", "sm_scale", "d_v", "attn_sink", "topk_length",
        "return_max_logits"]
    assert smla.flash_mla.flash_mla_sparse_fwd is flash_mla_sparse_fwd


# ------------------------------------------------------------------------ argument checks

def escaped(text):
    return "".join("\\" + c if c in "[]().+*?" else c for c in text)


BAD_PREFILL = [  # (changes, exception, message part)
    (lambda a: dict(d_v=256), smla.ValueRangeError, "d_v: 256; expected 512"),
    (lambda a: dict(q=np.zeros((7, HEADS, 576), np.uint16)), smla.ShapeError,
     "q: head dim 576 is DeepSeek V3.2's layout"),
    (lambda a: dict(q=a["q"].astype(np.float32)), smla.DtypeError, "q: dtype float32"),
    (lambda a: dict(q=a["q"][None]), smla.ShapeError, "q: 4 dimensions"),
    (lambda a: dict(kv=np.zeros((50, 2, 512), np.uint16)), smla.ShapeError,
     "kv: shape [50, 2, 512], expected [s_kv, h_kv, d_qk] = [*, 1, 512]"),
    (lambda a: dict(kv=np.zeros((50, 1, 512), np.uint8)), smla.DtypeError, "kv: dtype uint8"),
    (lambda a: dict(kv=a["kv"][:, :, ::2]), smla.ShapeError, "kv: shape [50, 1, 256]"),
    (lambda a: dict(kv=np.repeat(a["kv"], 2, axis=2)[:, :, ::2]), smla.StrideError,
     "kv: strides [1024, 512, 2]; the values of a row must be contiguous"),
    (lambda a: dict(indices=a["indices"][:, 0]), smla.ShapeError,
     "indices: shape [7, 24], expected [s_q, h_kv, topk] = [7, 1, *]"),
    (lambda a: dict(indices=a["indices"].astype(np.int64)), smla.DtypeError,
     "indices: dtype int64"),
    (lambda a: dict(topk_length=a["topk_length"][:3]), smla.ShapeError,
     "topk_length: shape [3], expected [s_q] = [7]"),
    (lambda a: dict(attn_sink=a["attn_sink"][:2]), smla.ShapeError,
     "attn_sink: shape [2], expected [h_q] = [16]"),
    (lambda a: dict(attn_sink=a["attn_sink"].astype(np.float64)), smla.DtypeError,
     "attn_sink: dtype float64"),
    (lambda a: dict(sm_scale="x"), smla.DtypeError, "sm_scale: expected a float"),
    (lambda a: dict(sm_scale=float("inf")), smla.ValueRangeError, "sm_scale: inf"),
]


@pytest.mark.parametrize("change,error,message", BAD_PREFILL, ids=[m for _, _, m in BAD_PREFILL])
def test_bad_prefill_argument(rng, change, error, message):
    a = prefill_case(rng)
    with pytest.raises(error, match=escaped(message)):
        flash_mla_sparse_fwd(**dict(a, **change(a)))


BAD_DECODE = [  # (changes, exception, message part)
    (lambda a: dict(tile_scheduler_metadata=np.zeros(4, I32)), smla.DtypeError,
     "tile_scheduler_metadata: a ndarray; expected what smla.flash_mla.get_mla_metadata()"),
    (lambda a: dict(num_splits=np.zeros(4, I32)), smla.ValueRangeError,
     "num_splits: must be None"),
    (lambda a: dict(indices=None), smla.NullPointerError,
     "indices is required: smla runs FlashMLA's sparse attention, not its dense mode"),
    (lambda a: dict(causal=True), smla.ValueRangeError, "causal: True"),
    (lambda a: dict(is_fp8_kvcache=False), smla.ValueRangeError, "is_fp8_kvcache: False"),
    (lambda a: dict(head_dim_v=576), smla.ValueRangeError, "head_dim_v: 576; expected 512"),
    (lambda a: dict(q=np.zeros((3, 2, HEADS, 576), np.uint16)), smla.ShapeError,
     "q: head dim 576"),
    (lambda a: dict(q=a["q"][0]), smla.ShapeError, "q: 3 dimensions"),
    (lambda a: dict(q=np.zeros((3, 2, 12, 512), np.uint16),
                    attn_sink=np.zeros(12, np.float32)), smla.HeadsError, "q: 12 heads"),
    (lambda a: dict(k_cache=np.zeros((3, 64, 1, 656), np.uint8)), smla.KvFormatError,
     "k_cache: 656 bytes per token"),
    (lambda a: dict(k_cache=np.zeros((3, 64, 2, 584), np.uint8)), smla.ShapeError,
     "k_cache: shape [3, 64, 2, 584]; FlashMLA's sparse attention has one KV head"),
    (lambda a: dict(k_cache=a["k_cache"][:, :, 0]), smla.ShapeError, "k_cache: 3 dimensions"),
    (lambda a: dict(k_cache=np.zeros((3, 64, 1, 584), np.uint16)), smla.DtypeError,
     "k_cache: dtype uint16, expected float8_e4m3fn, int8 or uint8"),
    (lambda a: dict(k_cache=np.zeros((3, 64, 1, 584), np.uint8)), smla.KvFormatError,
     "k_cache: blocks 37376 bytes apart; 64 tokens of fp8_ds_mla take 37440"),
    (lambda a: dict(k_cache=a["k_cache"][:, ::2]), smla.StrideError,
     "k_cache: strides [37440, 1168, 584, 1]"),
    (lambda a: dict(indices=a["indices"][:, :1]), smla.ShapeError,
     "indices: shape [3, 1, 20], expected [b, s_q, topk] = [3, 2, *]"),
    (lambda a: dict(topk_length=np.repeat(a["topk_length"], 2)), smla.ShapeError,
     "topk_length: shape [6], expected [b] = [3]"),
    (lambda a: dict(extra_topk_length=a["topk_length"][:1]), smla.ShapeError,
     "extra_topk_length: shape [1], expected [b] = [3]"),
    (lambda a: dict(attn_sink=a["attn_sink"][:1]), smla.ShapeError,
     "attn_sink: shape [1], expected [h_q] = [16]"),
    (lambda a: dict(extra_k_cache=None), smla.NullPointerError,
     "extra_indices_in_kvcache given without extra_k_cache"),
    (lambda a: dict(extra_k_cache=None, extra_indices_in_kvcache=None), smla.NullPointerError,
     "extra_topk_length given without extra_k_cache"),
    (lambda a: dict(extra_indices_in_kvcache=None), smla.NullPointerError,
     "extra_k_cache given without extra_indices_in_kvcache"),
    (lambda a: dict(extra_indices_in_kvcache=a["indices"][:, :1]), smla.ShapeError,
     "extra_indices_in_kvcache: shape [3, 1, 20], expected [b, s_q, extra_topk]"),
    (lambda a: dict(softmax_scale=float("nan")), smla.ValueRangeError, "softmax_scale: nan"),
]


@pytest.mark.parametrize("change,error,message", BAD_DECODE, ids=[m for _, _, m in BAD_DECODE])
def test_bad_decode_argument(rng, change, error, message):
    a, _ = decode_case(rng, extra_block_size=64)
    with pytest.raises(error, match=escaped(message)):
        flash_mla_with_kvcache(**dict(a, **change(a)))
