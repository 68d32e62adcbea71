"""Random attention problems as safetensors files (the input format of `smla attend`).

Each problem draws: the KV format (bf16, fp8, fp8_ds_mla), block sizes, the query dtype,
head count, ragged widths and lens (some out of range), invalid slot ids of every kind
(-1, other negatives, >= rows, INT32 extremes), duplicates, positions (decode and prefill
sequences, empty ones, padding rows, sequences shorter than their queries), the window,
sinks (finite, -inf, +inf), SWA-only layers and scales. KV rows that no active entry uses
and queries of padding rows are filled with NaN, so reading one shows in the result.
"""
import numpy as np

import formats
import safetensors_np
from attention import Problem

HEADS = [8, 16, 32, 64, 128]
HEAD_WEIGHTS = [0.3, 0.3, 0.2, 0.12, 0.08]
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
MAX_TOKENS = 48
WORK_LIMIT = 250_000  # T * H * (Wswa + Wext): keeps the CPU reference quick
MAX_POOL_ROWS = 2000


def pick(rng, options, p=None):
    return options[rng.choice(len(options), p=p)]


def float32_text(value):
    """The shortest decimal that reads back as this float32 in C (strtod, then float)."""
    return repr(float(np.float32(value)))


# ---------------------------------------------------------------- values

def fp8_codes(rng, shape, mode):
    """E4M3 codes: 'normal' quantised N(0, sigma), or 'raw' uniform finite codes."""
    if mode == "raw":
        codes = rng.integers(0, 256, size=shape, dtype=np.int64).astype(np.uint8)
        codes[np.isin(codes, formats.E4M3_NAN_CODES)] = 0x38  # 1.0
        return codes
    sigma = np.exp(rng.uniform(np.log(0.05), np.log(60.0)))
    return formats.f64_to_e4m3(rng.normal(0.0, sigma, size=shape))


def bf16_values(rng, shape):
    sigma = 2.0 ** rng.uniform(-4, 4)
    values = rng.normal(0.0, sigma, size=shape)
    values[rng.random(shape) < 0.002] *= 2.0 ** 12  # a few outliers
    return formats.f64_to_bf16(values)


def writable_regions(raw, block_size):
    """formats.ds_mla_regions, checked to be views: writes to them must reach raw."""
    data, scales = formats.ds_mla_regions(raw, block_size)
    assert raw.size == 0 or (np.shares_memory(data, raw) and np.shares_memory(scales, raw))
    return data, scales


def make_pool(rng, kv_format, num_blocks, block_size, block_bytes, mode):
    """The stored tensor of one pool, filled with valid values."""
    if kv_format == "bf16":
        return bf16_values(rng, (num_blocks, block_size, formats.HEAD_DIM))
    if kv_format == "fp8":
        return fp8_codes(rng, (num_blocks, block_size, formats.HEAD_DIM), mode)
    raw = rng.integers(0, 256, size=(num_blocks, block_bytes), dtype=np.int64).astype(np.uint8)
    data, scales = writable_regions(raw, block_size)
    nope, rope = data[..., :formats.DS_MLA_NOPE], data[..., formats.DS_MLA_NOPE:]
    nope[...] = fp8_codes(rng, nope.shape, mode)
    rope_values = bf16_values(rng, (num_blocks, block_size, formats.DS_MLA_ROPE))
    rope[...] = rope_values.view(np.uint8).reshape(rope.shape)
    scales[..., :formats.DS_MLA_SCALES] = rng.integers(
        127 - 10, 127 + 7, size=scales[..., :formats.DS_MLA_SCALES].shape)
    return raw  # the pad byte of each scale row and the block padding stay random


def poison_rows(pool, kv_format, block_size, unused):
    """Fills the slots in unused (flat slot ids) with NaN in place."""
    if kv_format in ("bf16", "fp8"):
        flat = pool.reshape(-1, formats.HEAD_DIM)
        flat[unused] = formats.BF16_NAN if kv_format == "bf16" else 0x7F
        return
    data, scales = writable_regions(pool, block_size)
    block, row = np.divmod(unused, block_size)
    data[block, row, :formats.DS_MLA_NOPE] = 0x7F
    data[block, row, formats.DS_MLA_NOPE:] = 0xFF  # BF16 0xFFFF: NaN
    scales[block, row, :formats.DS_MLA_SCALES] = 0xFF


# ---------------------------------------------------------------- index sets

def invalid_ids(rng, count, rows):
    kinds = [
        lambda: np.full(count, -1),
        lambda: rng.integers(INT32_MIN, 0, size=count),
        lambda: rng.choice([INT32_MIN, -2, -rows - 1 if rows else -3], size=count),
        lambda: np.full(count, rows),
        lambda: rng.integers(rows, INT32_MAX, size=count, endpoint=True),
        lambda: rng.choice([rows + 1, INT32_MAX], size=count),
    ]
    return pick(rng, kinds)()


def make_indices(rng, tokens, width, rows):
    ids = rng.integers(0, max(rows, 1), size=(tokens, width))
    if rows == 0:
        ids[:] = -1
    p_invalid = pick(rng, [0.0, 0.05, 0.3, 1.0], p=[0.3, 0.35, 0.3, 0.05])
    mask = rng.random((tokens, width)) < p_invalid
    ids[mask] = invalid_ids(rng, int(mask.sum()), rows)
    if width > 1 and rng.random() < 0.5:  # duplicates: copies of other columns
        dup = rng.random((tokens, width)) < rng.uniform(0.05, 0.4)
        t, j = np.nonzero(dup)
        ids[t, j] = ids[t, rng.integers(0, width, size=len(t))]
    return ids.astype(np.int32)


def make_lens(rng, tokens, width):
    lens = rng.integers(0, width, size=tokens, endpoint=True)
    wild = rng.random(tokens) < 0.1  # out of range: clamped to [0, width]
    lens[wild] = rng.choice([-1, INT32_MIN, width + 1, INT32_MAX], size=int(wild.sum()))
    return lens.astype(np.int32)


def make_positions(rng, tokens):
    """cu_seqlens_q [B+1] and seq_lens [B]: decode sequences first, then prefill ones,
    some empty; rows past cu[B] (and before cu[0]) are padding."""
    padding = int(rng.integers(0, tokens // 3 + 1)) if rng.random() < 0.4 else 0
    start = min(int(rng.integers(0, 3)), tokens) if rng.random() < 0.1 else 0
    end = max(start, tokens - padding)  # <= tokens: cu never points past the last row
    cu = [start]
    while cu[-1] < end or (len(cu) == 1 and rng.random() < 0.5):
        left = end - cu[-1]
        if rng.random() < 0.1:
            q_len = 0
        elif len(cu) < 4 and rng.random() < 0.6:
            q_len = min(left, int(rng.integers(1, 3)))
        else:
            q_len = int(rng.integers(1, left + 1)) if left else 0
        cu.append(cu[-1] + q_len)
        if len(cu) > 40:
            break
    cu[-1] = min(cu[-1], end)
    q_lens = np.diff(cu)
    prefix = np.array([pick(rng, [0, int(rng.integers(0, 6)), int(rng.integers(0, 300)),
                                  int(rng.integers(0, 100000))]) for _ in q_lens], dtype=np.int64)
    short = rng.random(len(q_lens)) < 0.05  # a sequence shorter than its queries
    prefix[short] = -rng.integers(1, q_lens[short] + 4)
    seq_lens = np.maximum(q_lens + prefix, 0)
    return np.array(cu, dtype=np.int32), seq_lens.astype(np.int32)


# ---------------------------------------------------------------- problems

def random_problem(rng):
    """Returns (tensors [(name, dtype, array)], metadata {str: str}, description)."""
    kv_format = pick(rng, ["bf16", "fp8", "fp8_ds_mla"])
    q_dtype = pick(rng, ["BF16", "F8_E4M3"])
    heads = int(pick(rng, HEADS, p=HEAD_WEIGHTS))
    w_swa = int(pick(rng, [0, 1, int(rng.integers(1, 33)), 128, int(rng.integers(100, 161))],
                     p=[0.05, 0.1, 0.35, 0.3, 0.2]))
    has_extra = rng.random() < 0.75
    w_ext = int(pick(rng, [0, int(rng.integers(1, 65)), 512, int(rng.integers(200, 601))],
                     p=[0.05, 0.45, 0.25, 0.25])) if has_extra else 0
    tokens = 0 if rng.random() < 0.03 else int(rng.integers(1, MAX_TOKENS + 1))
    tokens = min(tokens, max(1, WORK_LIMIT // (heads * max(1, w_swa + w_ext))))
    mode = pick(rng, ["normal", "raw"], p=[0.7, 0.3])

    def block_size_choice():
        return int(pick(rng, [1, 2, 3, 16, 64, 128, 256, int(rng.integers(1, 300))]))

    shared_block_size = block_size_choice()
    give_block_size = kv_format == "fp8_ds_mla" or rng.random() < 0.5
    metadata = {"kv_format": kv_format}
    if give_block_size:
        metadata["block_size"] = str(shared_block_size)
    tensors = {}
    for name, present in (("swa", True), ("extra", has_extra)):
        if not present:
            continue
        block_size = shared_block_size if give_block_size else block_size_choice()
        target_rows = int(rng.integers(1, MAX_POOL_ROWS // 2))
        num_blocks = min(-(-target_rows // block_size), max(1, MAX_POOL_ROWS // block_size))
        if rng.random() < 0.03:
            num_blocks = 0
        block_bytes = formats.block_bytes(kv_format, block_size)
        if kv_format == "fp8_ds_mla" and rng.random() < 0.3:
            block_bytes += 16 * int(rng.integers(1, 40))  # a padded block stride
        pool = make_pool(rng, kv_format, num_blocks, block_size, block_bytes, mode)
        rows = num_blocks * block_size
        width = w_swa if name == "swa" else w_ext
        tensors[name + "_cache"] = pool
        tensors[name + "_indices"] = make_indices(rng, tokens, width, rows)
        if rng.random() < 0.5:
            tensors[name + "_lens"] = make_lens(rng, tokens, width)
    if rng.random() < 0.5:
        tensors["cu_seqlens_q"], tensors["seq_lens"] = make_positions(rng, tokens)
    if rng.random() < 0.6:
        metadata["window"] = str(pick(rng, [1, 2, 3, 5, 64, 127, 128, 129, 256,
                                            int(rng.integers(1, 200)), INT32_MAX]))
    if q_dtype == "BF16":
        tensors["q"] = bf16_values(rng, (tokens, heads, formats.HEAD_DIM))
    else:
        tensors["q"] = fp8_codes(rng, (tokens, heads, formats.HEAD_DIM), mode)

    dtypes = {"q": q_dtype, "swa_cache": None, "extra_cache": None}
    cache_dtype = {"bf16": "BF16", "fp8": "F8_E4M3", "fp8_ds_mla": "U8"}[kv_format]

    def dtype_of(name):
        if name.endswith("_cache"):
            return cache_dtype
        return dtypes.get(name) or ("F32" if name == "sinks" else "I32")

    def as_file(metadata_now):
        return Problem({k: (dtype_of(k), v) for k, v in tensors.items()}, metadata_now)

    # Scales: spread the logits over a random range; sinks in the range of the lse.
    problem = as_file(metadata)
    logits = []
    for t in rng.permutation(tokens)[:8]:  # a sample is enough
        rows = problem.token_rows(t)
        if rows is not None and len(rows):
            logits.append((problem.q[t, :4] @ rows.T).reshape(-1))
    spread = np.std(np.concatenate(logits)) if logits else 0.0
    if np.isfinite(spread) and spread > 0 and rng.random() < 0.9:
        target = np.exp(rng.uniform(np.log(0.25), np.log(10)))
        metadata["bmm1_scale"] = float32_text(target / spread)
    if rng.random() < 0.7:
        metadata["bmm2_scale"] = float32_text(rng.uniform(-2, 3))
    if rng.random() < 0.5:
        sinks = rng.normal(np.log(1 + w_swa + w_ext), 3, size=heads)
        special = rng.random(heads)
        sinks[special < 0.1] = -np.inf
        sinks[(special >= 0.1) & (special < 0.2)] = np.inf
        tensors["sinks"] = sinks.astype(np.float32)

    # NaN where nothing may be read: unused KV rows, queries of padding rows.
    problem = as_file(metadata)
    used = [set() for _ in problem.sets]
    for t in range(tokens):
        slots = problem.active_slots(t)
        if slots is None:
            tensors["q"][t] = formats.BF16_NAN if q_dtype == "BF16" else 0x7F
            continue
        for k, ids in enumerate(slots):
            used[k].update(int(s) for s in ids)
    if rng.random() < 0.9:
        for k, (name, (_, _, pool)) in enumerate(zip(("swa", "extra"), problem.sets)):
            unused = np.setdiff1d(np.arange(pool.rows()), np.fromiter(used[k], dtype=np.int64))
            poison_rows(tensors[name + "_cache"], kv_format, pool.block_size, unused)

    description = (f"{kv_format} block_size={metadata.get('block_size', 'per-cache')} "
                   f"q={q_dtype} T={tokens} H={heads} Wswa={w_swa} "
                   f"Wext={w_ext if has_extra else 'none'} mode={mode} "
                   f"tensors={','.join(sorted(tensors))} "
                   f"meta={','.join(f'{k}={v}' for k, v in sorted(metadata.items()))}")
    names = list(tensors)
    rng.shuffle(names)  # any tensor order must do
    return [(n, dtype_of(n), tensors[n]) for n in names], metadata, description


def write_random_problems(directory, seed, count):
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        tensors, metadata, description = random_problem(rng)
        path = f"{directory}/p{i:03d}.safetensors"
        safetensors_np.write(path, tensors, dict(metadata, description=description))
        paths.append(path)
    return paths
