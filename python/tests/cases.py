"""Problems for the tests: the oracle's adversarial random problems (tests/oracle/problems.py)
as sparse_mla arguments and the oracle's verdict on a result, plus a small valid case to
break one argument at a time."""
import numpy as np

import compare
import problems
import safetensors_np
import smla

HEAD_DIM = smla.HEAD_DIM


def problem_kwargs(tensors, metadata):
    """The sparse_mla keyword arguments of an oracle problem ({name: array}, metadata)."""
    kwargs = {name: tensors[name] for name in
              ("q", "swa_cache", "swa_indices", "swa_lens", "extra_cache", "extra_indices",
               "extra_lens", "cu_seqlens_q", "seq_lens", "sinks") if name in tensors}
    kwargs["kv_format"] = metadata["kv_format"]
    if "block_size" in metadata:
        kwargs["block_size"] = int(metadata["block_size"])
    kwargs["window"] = int(metadata.get("window", smla.DEFAULT_WINDOW))
    kwargs["bmm1_scale"] = float(np.float32(metadata.get("bmm1_scale", "1")))
    kwargs["bmm2_scale"] = float(np.float32(metadata.get("bmm2_scale", "1")))
    return kwargs


def random_problem(rng):
    """(tensors list as in a problem file, metadata, description, sparse_mla kwargs).

    Skips the rare problem whose cu_seqlens_q starts past its last token (the generator
    can draw a first start of 2 for one token), which smla rightly refuses."""
    while True:
        tensors, metadata, description = problems.random_problem(rng)
        kwargs = problem_kwargs({name: array for name, _, array in tensors}, metadata)
        cu = kwargs.get("cu_seqlens_q")
        if cu is None or cu[-1] <= len(kwargs["q"]):
            return tensors, metadata, description, kwargs


def oracle_failures(directory, tensors, metadata, out, lse):
    """The oracle's complaints about (out, lse) for a problem (empty when right), at the
    tolerances of tests/oracle/compare.py; padding rows must stay out = 0, lse = NaN."""
    problem_path, result_path = directory / "problem.safetensors", directory / "out.safetensors"
    safetensors_np.write(str(problem_path), tensors, metadata)
    safetensors_np.write(str(result_path), [("out", "BF16", out), ("lse", "F32", lse)])
    return compare.compare(str(problem_path), str(result_path))


def small_case(rng, kv_format="bf16", q_dtype="bf16", tokens=6, heads=8, block_size=16):
    """Valid sparse_mla keyword arguments (NumPy): two pools, lens, positions, sinks."""
    rows = 4 * block_size
    swa_cache = smla.kv_pack(rng.normal(size=(rows, HEAD_DIM)), kv_format, block_size)
    extra_cache = smla.kv_pack(rng.normal(size=(rows, HEAD_DIM)), kv_format, block_size)
    q = smla.quantize(rng.normal(size=(tokens, heads, HEAD_DIM)),
                      "bf16" if q_dtype == "bf16" else "fp8_e4m3")
    return dict(
        q=q, swa_cache=swa_cache, extra_cache=extra_cache,
        swa_indices=rng.integers(-1, rows, size=(tokens, 6)).astype(np.int32),
        extra_indices=rng.integers(-1, rows, size=(tokens, 5)).astype(np.int32),
        swa_lens=rng.integers(0, 7, size=tokens).astype(np.int32),
        extra_lens=rng.integers(0, 6, size=tokens).astype(np.int32),
        cu_seqlens_q=np.array([0, 1, 2, tokens - 1], np.int32),
        seq_lens=np.array([7, 3, 40], np.int32),
        sinks=rng.normal(size=heads).astype(np.float32),
        bmm1_scale=1 / 24, bmm2_scale=1.0, kv_format=kv_format,
        block_size=block_size if kv_format == "fp8_ds_mla" else None)


def same_bits(a, b):
    """Equal bit for bit (NaN included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()
