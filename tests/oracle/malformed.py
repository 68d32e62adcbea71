"""Malformed and inconsistent problem files for `smla attend`, each with the exit code
and a part of the message it must give (written to manifest.tsv: file, code, needle).
Code "0|2" means either is fine (random corruptions): only a crash is wrong."""
import json
import struct

import numpy as np

import formats
import safetensors_np

T, H, W = 4, 8, 8


def base_problem(rng):
    """A small valid bf16 problem: tensors [(name, dtype, array)] and metadata."""
    def bf16(shape):
        return formats.f64_to_bf16(rng.normal(size=shape))

    tensors = [
        ("q", "BF16", bf16((T, H, formats.HEAD_DIM))),
        ("swa_cache", "BF16", bf16((2, 16, formats.HEAD_DIM))),
        ("extra_cache", "BF16", bf16((3, 16, formats.HEAD_DIM))),
        ("swa_indices", "I32", rng.integers(-1, 32, size=(T, W)).astype(np.int32)),
        ("extra_indices", "I32", rng.integers(-1, 48, size=(T, W)).astype(np.int32)),
        ("swa_lens", "I32", rng.integers(0, W + 1, size=T).astype(np.int32)),
        ("cu_seqlens_q", "I32", np.array([0, 1, 4], dtype=np.int32)),
        ("seq_lens", "I32", np.array([10, 20], dtype=np.int32)),
        ("sinks", "F32", rng.normal(size=H).astype(np.float32)),
    ]
    metadata = {"kv_format": "bf16", "bmm1_scale": "0.04", "window": "128"}
    return tensors, metadata


def replaced(tensors, name, dtype=None, array=None):
    return [(n, dtype or d, a if array is None else array) if n == name else (n, d, a)
            for n, d, a in tensors]


def dropped(tensors, *names):
    return [t for t in tensors if t[0] not in names]


def array_of(tensors, name):
    return next(a for n, _, a in tensors if n == name)


def raw_file(header, body):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def header_of(data):
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def cases(rng):
    """Yields (name, file bytes, exit code, needle)."""
    tensors, meta = base_problem(rng)
    good = safetensors_np.encode(tensors, meta)

    def enc(t=tensors, m=meta):
        return safetensors_np.encode(t, m)

    yield "valid_with_unknown_key", enc(m=dict(meta, note="x")), "0", \
        "ignoring unknown metadata key 'note'"
    yield "empty", b"", "2", "too short"
    yield "text", b"this is not a safetensors file at all\n", "2", "absurd"
    yield "cut_in_header", good[:30], "2", "exceeds"
    last = tensors[-1][0]
    yield "cut_in_data", good[:-5], "2", f"tensor '{last}': data_offsets end"
    header, body = header_of(good)
    text = json.dumps(header).encode()
    yield "bad_json", struct.pack("<Q", len(text)) + text[:-1] + b" " + body, "2", \
        "not valid JSON"
    yield "json_array", raw_file([1, 2, 3], b""), "2", "not a JSON object"
    # dtypes
    q = array_of(tensors, "q")
    yield "q_f32", enc(replaced(tensors, "q", "F32", q.astype(np.float32))), "2", "q: dtype"
    yield "q_f16", raw_file(dict(header, q=dict(header["q"], dtype="F16")), body), "2", \
        "tensor 'q': unsupported dtype 'F16'"
    idx = array_of(tensors, "swa_indices")
    yield "indices_f32", enc(replaced(tensors, "swa_indices", "F32", idx.astype(np.float32))), \
        "2", "swa_indices: dtype"
    cache = array_of(tensors, "swa_cache")
    yield "cache_fp8_for_bf16", enc(replaced(tensors, "swa_cache", "F8_E4M3",
                                             np.zeros(cache.shape, np.uint8))), "2", \
        "tensor 'swa_cache': dtype F8_E4M3, but kv_format bf16"
    # shapes and sizes between tensors
    yield "q_dim_256", enc(replaced(tensors, "q", array=q[:, :, :256])), "2", "tensor 'q': shape"
    yield "q_rank_2", enc(replaced(tensors, "q", array=q.reshape(T, -1))), "2", \
        "tensor 'q': shape"
    yield "cache_dim_256", enc(replaced(tensors, "extra_cache",
                                        array=array_of(tensors, "extra_cache")[:, :, :256])), \
        "2", "tensor 'extra_cache': shape"
    yield "indices_more_tokens", enc(replaced(tensors, "swa_indices",
                                              array=np.zeros((T + 1, W), np.int32))), "2", \
        "swa_indices"
    yield "extra_indices_fewer_tokens", enc(replaced(tensors, "extra_indices",
                                                     array=np.zeros((T - 2, W), np.int32))), \
        "2", "extra_indices"
    yield "lens_fewer_tokens", enc(replaced(tensors, "swa_lens",
                                            array=np.zeros(T - 1, np.int32))), "2", "swa_lens"
    yield "sinks_more_heads", enc(replaced(tensors, "sinks", array=np.zeros(H + 1, np.float32))), \
        "2", "sinks"
    yield "seq_lens_too_many", enc(replaced(tensors, "seq_lens",
                                            array=np.array([1, 2, 3], np.int32))), "2", "seq_lens"
    yield "cu_decreasing", enc(replaced(tensors, "cu_seqlens_q",
                                        array=np.array([0, 3, 1], np.int32))), "2", "cu_seqlens_q"
    yield "cu_without_seq_lens", enc(dropped(tensors, "seq_lens")), "2", "seq_lens"
    yield "heads_12", enc(replaced(dropped(tensors, "sinks"), "q",
                                   array=np.zeros((T, 12, formats.HEAD_DIM), np.uint16))), "2", \
        "12 heads"
    # offsets
    end = len(body)
    yield "offsets_outside", raw_file(dict(header, q=dict(header["q"], data_offsets=[
        end - header["q"]["data_offsets"][1] + header["q"]["data_offsets"][0] + 64, end + 64])),
        body), "2", "tensor 'q': data_offsets end"
    a, b = header["swa_lens"]["data_offsets"]
    yield "offsets_begin_after_end", raw_file(dict(header, swa_lens=dict(
        header["swa_lens"], data_offsets=[b, a])), body), "2", "'swa_lens': data_offsets begin"
    yield "offsets_overlap", raw_file(dict(header, seq_lens=dict(
        header["seq_lens"], data_offsets=header["cu_seqlens_q"]["data_offsets"][:1] * 2)),
        body), "2", "seq_lens"
    lo, _ = header["sinks"]["data_offsets"]
    yield "offsets_overlap_2", raw_file(dict(header, sinks=dict(
        header["sinks"], data_offsets=[lo - 4, lo - 4 + 4 * H])), body), "2", "overlap"
    yield "size_mismatch", raw_file(dict(header, swa_indices=dict(
        header["swa_indices"], shape=[T, W + 1])), body), "2", "'swa_indices': data_offsets hold"
    # names
    yield "missing_q", enc(dropped(tensors, "q")), "2", "missing tensor 'q'"
    yield "missing_swa_indices", enc(dropped(tensors, "swa_indices")), "2", \
        "missing tensor 'swa_indices'"
    yield "unknown_tensor", enc(tensors + [("sink", "F32", np.zeros(H, np.float32))]), "2", \
        "unknown tensor 'sink'"
    yield "extra_cache_alone", enc(dropped(tensors, "extra_indices")), "2", \
        "'extra_cache' is given without"
    # metadata
    for key, value, needle in [("bmm1_scale", "abc", "bmm1_scale"),
                               ("bmm2_scale", "inf", "bmm2_scale"),
                               ("bmm1_scale", "1e39", "bmm1_scale"),
                               ("window", "0", "window"), ("window", "12x", "window"),
                               ("kv_format", "fp16", "kv_format"),
                               ("block_size", "32", "block_size")]:
        yield f"meta_{key}_{value}", enc(m=dict(meta, **{key: value})), "2", needle
    yield "meta_no_kv_format", enc(m={k: v for k, v in meta.items() if k != "kv_format"}), \
        "2", "kv_format"
    yield "meta_not_string", raw_file(dict(header, __metadata__=dict(meta, window=128)), body), \
        "2", "metadata 'window' is not a string"
    # fp8_ds_mla pools
    short = formats.block_bytes("fp8_ds_mla", 16) - 16
    ds = [("swa_cache", "U8", np.zeros((2, short), np.uint8))]
    ds_tensors = dropped(tensors, "swa_cache", "extra_cache", "extra_indices") + ds
    yield "ds_mla_short_blocks", enc(ds_tensors, dict(meta, kv_format="fp8_ds_mla",
                                                      block_size="16")), "2", \
        f"tensor 'swa_cache': {short} bytes per block"
    yield "ds_mla_no_block_size", enc(ds_tensors, dict(meta, kv_format="fp8_ds_mla")), "2", \
        "'block_size' is required"
    yield "ds_mla_rank_3", enc(replaced(ds_tensors, "swa_cache", array=np.zeros((2, 16, 584),
                                                                                 np.uint8)),
                               dict(meta, kv_format="fp8_ds_mla", block_size="16")), "2", \
        "tensor 'swa_cache': shape"
    # random corruptions of the header: parsed or refused, never a crash
    (n,) = struct.unpack("<Q", good[:8])
    for i in range(40):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, 8 + n))] = int(rng.integers(0, 256))
        yield f"corrupt_{i:02d}", bytes(data), "0|2", ""
    for i in range(10):
        yield f"cut_{i:02d}", good[:int(rng.integers(0, len(good)))], "2", ""


def write_cases(directory, seed):
    rng = np.random.default_rng(seed)
    count = 0
    with open(f"{directory}/manifest.tsv", "w") as manifest:
        for name, data, code, needle in cases(rng):
            with open(f"{directory}/{name}.safetensors", "wb") as f:
                f.write(data)
            manifest.write(f"{name}.safetensors\t{code}\t{needle}\n")
            count += 1
    return count
