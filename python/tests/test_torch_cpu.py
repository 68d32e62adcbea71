"""PyTorch CPU tensors give the bits of the NumPy path (skipped where PyTorch is not
installed: it is optional, and CI runs without it); CUDA is the GPU suite's."""
import numpy as np
import pytest

import cases
import smla

torch = pytest.importorskip("torch")

TORCH_DTYPES = {np.dtype(np.uint16): torch.bfloat16, np.dtype(np.uint8): torch.float8_e4m3fn}


def as_torch(value, name):
    """NumPy bits as the torch tensor an engine would hold (bf16 / fp8 / int32 / f32)."""
    if not isinstance(value, np.ndarray):
        return value
    tensor = torch.from_numpy(np.ascontiguousarray(value))
    if name in ("q", "query", "swa_cache", "extra_cache", "swa_kv_cache",
                "compressed_kv_cache") and value.ndim >= 3:
        return tensor.view(TORCH_DTYPES[value.dtype])
    return tensor


def torch_kwargs(kwargs):
    return {name: as_torch(value, name) for name, value in kwargs.items()}


def bits(tensor):
    return tensor.view(torch.int16).numpy().view(np.uint16)


@pytest.mark.parametrize("kv_format,q_dtype", [("bf16", "bf16"), ("fp8", "fp8"),
                                               ("fp8_ds_mla", "fp8")])
def test_tensors_match_numpy(rng, kv_format, q_dtype):
    kwargs = cases.small_case(rng, kv_format, q_dtype)
    want_out, want_lse = smla.sparse_mla(**kwargs, return_lse=True)
    out, lse = smla.sparse_mla(**torch_kwargs(kwargs), return_lse=True)
    assert out.dtype == torch.bfloat16 and lse.dtype == torch.float32
    assert cases.same_bits(bits(out), want_out) and cases.same_bits(lse.numpy(), want_lse)
    given = torch.zeros(out.shape, dtype=torch.bfloat16)
    assert smla.sparse_mla(**torch_kwargs(kwargs), out=given) is given
    assert cases.same_bits(bits(given), want_out)


def test_uint8_tensors_are_fp8_bits(rng):
    kwargs = cases.small_case(rng, "fp8", "fp8")
    want = smla.sparse_mla(**kwargs)
    raw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    assert cases.same_bits(bits(smla.sparse_mla(**raw)), want)


def test_scales_as_tensors(rng):
    kwargs = cases.small_case(rng)
    want = smla.sparse_mla(**kwargs)
    got = smla.sparse_mla(**dict(kwargs, bmm1_scale=torch.tensor(kwargs["bmm1_scale"]),
                                 bmm2_scale=torch.ones(1)))
    assert cases.same_bits(got, want)
    with pytest.raises(smla.ShapeError, match="bmm1_scale: a tensor of 2 elements"):
        smla.sparse_mla(**dict(kwargs, bmm1_scale=torch.ones(2)))


def test_torch_dtype_errors(rng):
    kwargs = torch_kwargs(cases.small_case(rng))
    with pytest.raises(smla.DtypeError, match="q: dtype float16"):
        smla.sparse_mla(**dict(kwargs, q=kwargs["q"].to(torch.float16)))
    with pytest.raises(smla.DtypeError, match="swa_indices: dtype int64"):
        smla.sparse_mla(**dict(kwargs, swa_indices=kwargs["swa_indices"].long()))
    with pytest.raises(smla.StrideError, match="q: stride 2 of dimension 2"):
        smla.sparse_mla(**dict(kwargs, q=torch.cat([kwargs["q"]] * 2, dim=2)[:, :, ::2]))
    with pytest.raises(smla.DeviceError, match="q: on device meta"):
        smla.sparse_mla(**dict(kwargs, q=kwargs["q"].to("meta")))


def test_flashinfer_entry_with_tensors(rng):
    from test_flashinfer import engine_batch
    batch = engine_batch(rng)
    want = smla.trtllm_batch_decode_sparse_mla_dsv4(**batch)
    tensors = torch_kwargs(batch)
    tensors["workspace_buffer"] = torch.zeros(1 << 16, dtype=torch.int8)
    out = smla.trtllm_batch_decode_sparse_mla_dsv4(**tensors)
    assert cases.same_bits(bits(out), want)
    dense = dict(tensors, query=tensors["query"].view(-1, 1, 16, 512), cum_seq_lens_q=None,
                 max_q_len=None, seq_lens=tensors["seq_lens"][:0])
    with pytest.raises(smla.ShapeError):  # seq_lens [0] for len(query) requests
        smla.trtllm_batch_decode_sparse_mla_dsv4(**dense)
    dense["seq_lens"] = torch.full((len(tensors["query"]),), 500, dtype=torch.int32)
    out = smla.trtllm_batch_decode_sparse_mla_dsv4(**dense)
    assert out.shape == (len(tensors["query"]), 1, 16, 512)


def test_host_plan_with_tensors(rng):
    qsl, seq_lens = torch.tensor([0, 1, 5], dtype=torch.int32), torch.tensor([9, 30],
                                                                            dtype=torch.int32)
    plan = smla.Plan(8, 2).build(qsl, seq_lens, 1, torch.float8_e4m3fn, cap=3)
    assert plan.segment_seq_lens.tolist() == [28, 30]
    assert smla.Plan(8, 2).build(qsl, seq_lens, 1, torch.bfloat16).num_segments == 1


def test_device_plan_needs_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the GPU suite covers device plans")
    with pytest.raises((smla.BackendError, RuntimeError)):
        smla.Plan(4, 2, device="cuda:0")


def flash_mla_tensors(arguments):
    """FlashMLA call arguments (NumPy) as the tensors an engine holds, strides kept: q and
    kv bfloat16, MODEL1 caches float8_e4m3fn."""
    views = {"q": torch.bfloat16, "kv": torch.bfloat16, "k_cache": torch.float8_e4m3fn,
             "extra_k_cache": torch.float8_e4m3fn}
    tensors = {}
    for name, value in arguments.items():
        if isinstance(value, np.ndarray):
            value = torch.from_numpy(value)
            if name in views:
                value = value.view(views[name])
        tensors[name] = value
    return tensors


def test_flash_mla_sparse_fwd_with_tensors(rng):
    from test_flash_mla import prefill_case
    arguments = prefill_case(rng)
    want = smla.flash_mla.flash_mla_sparse_fwd(**arguments)
    out, max_logits, lse = smla.flash_mla.flash_mla_sparse_fwd(**flash_mla_tensors(arguments))
    assert out.dtype == torch.bfloat16 and max_logits.dtype == lse.dtype == torch.float32
    assert cases.same_bits(bits(out), want[0])
    assert cases.same_bits(max_logits.numpy(), want[1]) and cases.same_bits(lse.numpy(), want[2])


@pytest.mark.parametrize("s_q", [1, 2])
def test_flash_mla_with_kvcache_with_tensors(rng, s_q):
    """The MODEL1 caches as FlashMLA's views of [num_blocks, block_bytes] tensors (whose
    storage holds the last block's padding, as an engine's cache pool does)."""
    from test_flash_mla import decode_case, model1_view
    arguments, caches = decode_case(rng, s_q=s_q, block_size=256, extra_block_size=64)
    want_out, want_lse = smla.flash_mla.flash_mla_with_kvcache(**arguments)
    tensors = flash_mla_tensors(arguments)
    with pytest.raises(smla.ShapeError, match="k_cache: its storage ends inside the padding"):
        smla.flash_mla.flash_mla_with_kvcache(**tensors)  # from_numpy of the view: no padding
    for name, pool in (("k_cache", "swa"), ("extra_k_cache", "extra")):
        tensors[name] = model1_view(torch.from_numpy(caches[pool]),
                                    arguments[name].shape[1]).view(torch.float8_e4m3fn)
    out, lse = smla.flash_mla.flash_mla_with_kvcache(**tensors)
    assert out.shape == want_out.shape and lse.shape == want_lse.shape
    assert lse.stride() == tuple(s // 4 for s in want_lse.strides)
    assert cases.same_bits(bits(out), want_out) and cases.same_bits(lse.numpy(), want_lse)
