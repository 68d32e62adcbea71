"""sparse_mla on NumPy arrays (the CPU reference) against the independent float64 oracle of
tests/oracle, on its adversarial random problems; and every layout the binding passes
through (strides, padded blocks, the engine's one index buffer) against the plain call."""
import os

import numpy as np
import pytest

import cases
import smla

PROBLEMS = int(os.environ.get("SMLA_PY_PROBLEMS", "24"))
FORMATS = ["bf16", "fp8", "fp8_ds_mla"]


@pytest.mark.parametrize("index", range(PROBLEMS))
def test_random_problem_matches_oracle(rng, tmp_path, index):
    tensors, metadata, description, kwargs = cases.random_problem(rng)
    out, lse = smla.sparse_mla(**kwargs, return_lse=True)
    failures = cases.oracle_failures(tmp_path, tensors, metadata, out, lse)
    assert not failures, f"{description}: " + "; ".join(failures)


def run(kwargs, **changes):
    out, lse = smla.sparse_mla(**dict(kwargs, **changes), return_lse=True)
    return out, lse


@pytest.mark.parametrize("kv_format", FORMATS)
def test_small_case_matches_oracle(rng, tmp_path, kv_format):
    kwargs = cases.small_case(rng, kv_format, q_dtype="fp8")
    out, lse = run(kwargs)
    assert not cases.oracle_failures(tmp_path, *cases.oracle_problem(kwargs), out, lse)
    assert np.any(out != 0)  # the case computes something


@pytest.mark.parametrize("kv_format", FORMATS)
@pytest.mark.parametrize("block_size,extra_block_size", [(256, 64), (64, 2), (3, 17)])
def test_pools_with_their_own_block_sizes(rng, tmp_path, kv_format, block_size,
                                          extra_block_size):
    """Each pool is paged at its own size (FlashMLA's MODEL1: SWA 256, compressed 64 or 2):
    fp8_ds_mla takes extra_block_size, bf16 / fp8 read it from the cache's shape."""
    kwargs = cases.small_case(rng, kv_format, q_dtype="fp8", tokens=9,
                              block_size=block_size, extra_block_size=extra_block_size)
    out, lse = run(kwargs)
    assert not cases.oracle_failures(tmp_path, *cases.oracle_problem(kwargs), out, lse)
    assert np.any(out != 0)
    if kv_format != "fp8_ds_mla":  # sizes given for bf16 / fp8 must agree with the shapes
        given = run(kwargs, block_size=block_size, extra_block_size=extra_block_size)
        assert cases.same_bits(given[0], out) and cases.same_bits(given[1], lse)


def padded_blocks(cache, kv_format):
    """The same cache with a block stride larger than its natural one."""
    if kv_format == "fp8_ds_mla":
        big = np.full((cache.shape[0], cache.shape[1] + 64), 0xFF, cache.dtype)
        big[:, :cache.shape[1]] = cache
        return big[:, :cache.shape[1]]
    big = np.full((cache.shape[0], cache.shape[1] + 3, cache.shape[2]), 0x7F, cache.dtype)
    big[:, :cache.shape[1]] = cache
    return big[:, :cache.shape[1]]


def every_other(array, fill):
    """array as a view whose first dimension has twice its natural stride."""
    big = np.full((array.shape[0], 2) + array.shape[1:], fill, array.dtype)
    big[:, 0] = array
    return big[:, 0]


@pytest.mark.parametrize("kv_format", FORMATS)
def test_layouts_give_the_same_bits(rng, kv_format):
    kwargs = cases.small_case(rng, kv_format)
    want_out, want_lse = run(kwargs)
    engine_row = np.concatenate([kwargs["swa_indices"], kwargs["extra_indices"]], axis=1)
    width = kwargs["swa_indices"].shape[1]
    variants = {
        "engine index layout": dict(swa_indices=engine_row[:, :width],
                                    extra_indices=engine_row[:, width:]),
        "strided q": dict(q=every_other(kwargs["q"], 0x7FC0)),
        "strided lens": dict(swa_lens=every_other(kwargs["swa_lens"], 99),
                             extra_lens=every_other(kwargs["extra_lens"], 99)),
        "padded blocks": dict(swa_cache=padded_blocks(kwargs["swa_cache"], kv_format),
                              extra_cache=padded_blocks(kwargs["extra_cache"], kv_format)),
    }
    for name, changes in variants.items():
        out, lse = run(kwargs, **changes)
        assert cases.same_bits(out, want_out) and cases.same_bits(lse, want_lse), name
    out = every_other(np.zeros_like(want_out), 0)
    lse = every_other(np.full(want_lse.shape, np.nan, np.float32), np.nan)
    smla.sparse_mla(**kwargs, out=out, lse=lse)
    assert cases.same_bits(out, want_out) and cases.same_bits(lse, want_lse), "strided out"


def test_outputs_allocated_or_given(rng):
    kwargs = cases.small_case(rng)
    out, lse = run(kwargs)
    assert out.dtype == np.uint16 and out.shape == kwargs["q"].shape
    assert lse.dtype == np.float32 and lse.shape == kwargs["q"].shape[:2]
    padding = kwargs["cu_seqlens_q"][-1]  # the last token belongs to no sequence
    assert np.all(out[padding:] == 0) and np.all(np.isnan(lse[padding:]))
    only_out = smla.sparse_mla(**kwargs)
    assert cases.same_bits(only_out, out)
    given_out = np.full_like(out, 7)
    given_lse = np.zeros_like(lse)
    returned = smla.sparse_mla(**kwargs, out=given_out, lse=given_lse)
    assert returned is given_out
    assert cases.same_bits(given_out[:padding], out[:padding])
    assert np.all(given_out[padding:] == 7)  # rows not computed are left alone
    assert cases.same_bits(given_lse[:padding], lse[:padding])


def test_ml_dtypes_arrays_are_accepted(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kwargs = cases.small_case(rng, "fp8", q_dtype="fp8")
    want = run(kwargs)
    got = run(kwargs, q=kwargs["q"].view(ml_dtypes.float8_e4m3fn),
              swa_cache=kwargs["swa_cache"].view(ml_dtypes.float8_e4m3fn))
    assert cases.same_bits(got[0], want[0])
