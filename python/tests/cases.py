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


def small_case(rng, kv_format="bf16", q_dtype="bf16", tokens=6, heads=8, block_size=16,
               extra_block_size=None):
    """Valid sparse_mla keyword arguments (NumPy): two pools of 4 blocks (the extra pool's
    of extra_block_size tokens when given), lens, positions, sinks."""
    extra_block = extra_block_size or block_size
    swa_rows, extra_rows = 4 * block_size, 4 * extra_block
    swa_cache = smla.kv_pack(rng.normal(size=(swa_rows, HEAD_DIM)), kv_format, block_size)
    extra_cache = smla.kv_pack(rng.normal(size=(extra_rows, HEAD_DIM)), kv_format, extra_block)
    q = smla.quantize(rng.normal(size=(tokens, heads, HEAD_DIM)),
                      "bf16" if q_dtype == "bf16" else "fp8_e4m3")
    ds_mla = kv_format == "fp8_ds_mla"
    return dict(
        q=q, swa_cache=swa_cache, extra_cache=extra_cache,
        swa_indices=rng.integers(-1, swa_rows, size=(tokens, 6)).astype(np.int32),
        extra_indices=rng.integers(-1, extra_rows, size=(tokens, 5)).astype(np.int32),
        swa_lens=rng.integers(0, 7, size=tokens).astype(np.int32),
        extra_lens=rng.integers(0, 6, size=tokens).astype(np.int32),
        cu_seqlens_q=np.array([0, 1, 2, tokens - 1], np.int32),
        seq_lens=np.array([7, 3, 40], np.int32),
        sinks=rng.normal(size=heads).astype(np.float32),
        bmm1_scale=1 / 24, bmm2_scale=1.0, kv_format=kv_format,
        block_size=block_size if ds_mla else None,
        extra_block_size=extra_block_size if ds_mla else None)


CACHE_DTYPES = {"bf16": "BF16", "fp8": "F8_E4M3", "fp8_ds_mla": "U8"}


def oracle_problem(kwargs):
    """(tensors, metadata) of the oracle's problem for sparse_mla keyword arguments (NumPy,
    kv_format given): what oracle_failures takes."""
    q = kwargs["q"]
    tensors = [("q", "BF16" if q.dtype == np.uint16 else "F8_E4M3", q)]
    for name in ("swa_cache", "extra_cache"):
        if kwargs.get(name) is not None:
            tensors.append((name, CACHE_DTYPES[kwargs["kv_format"]], kwargs[name]))
    for name in ("swa_indices", "extra_indices", "swa_lens", "extra_lens", "cu_seqlens_q",
                 "seq_lens"):
        if kwargs.get(name) is not None:
            tensors.append((name, "I32", kwargs[name]))
    if kwargs.get("sinks") is not None:
        tensors.append(("sinks", "F32", kwargs["sinks"]))
    metadata = {"kv_format": kwargs["kv_format"], "bmm1_scale": repr(kwargs["bmm1_scale"]),
                "bmm2_scale": repr(kwargs.get("bmm2_scale", 1.0)),
                "window": str(kwargs.get("window", smla.DEFAULT_WINDOW))}
    for name in ("block_size", "extra_block_size"):
        if kwargs.get(name) is not None:
            metadata[name] = str(kwargs[name])
    return tensors, metadata


def same_bits(a, b):
    """Equal bit for bit (NaN included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()
