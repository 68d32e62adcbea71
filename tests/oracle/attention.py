"""The attention operation of DESIGN section 2, in float64, from a problem's raw tensors.

Independent of the C code: it reads DESIGN's rules directly.
  - an index < 0 or >= the pool's row count is invalid and skipped (never read);
  - lens: only the first n columns of a row are active (n clamped to [0, width]);
  - positions: token t of sequence b (cu[b] <= t < cu[b+1]) is at
    pos = seq_lens[b] - (cu[b+1] - cu[b]) + (t - cu[b]) and only its first
    min(pos + 1, window) SWA columns are active; tokens in no sequence are padding (not
    computed); without positions every row is computed;
  - s_j = bmm1 * q.k_j; m = max(max_j s_j, sink); out = bmm2 * sum e^(s_j-m) k_j /
    (sum e^(s_j-m) + e^(sink-m)); lse = log sum e^(s_j) (sink excluded);
  - no active entry: out = 0, lse = -inf; sink -inf: no effect; sink +inf: out = 0.
"""
import numpy as np

import formats

DEFAULT_WINDOW = 128


class Problem:
    """A problem file's contents, decoded: tensors {name: (dtype, array)}, metadata."""

    def __init__(self, tensors, metadata):
        self.kv_format = metadata["kv_format"]
        self.bmm1 = float(np.float32(metadata.get("bmm1_scale", "1")))
        self.bmm2 = float(np.float32(metadata.get("bmm2_scale", "1")))
        self.window = int(metadata.get("window", DEFAULT_WINDOW))
        q_dtype, q = tensors["q"]
        self.q_dtype = q_dtype
        self.q_raw = q
        self.num_tokens, self.num_heads = q.shape[0], q.shape[1]
        self.q = formats.bf16_to_f64(q) if q_dtype == "BF16" else formats.e4m3_to_f64(q)

        def block_size_of(prefix, cache):
            """fp8_ds_mla: metadata block_size; the extra pool's may differ (extra_block_size,
            which only the Python binding's tests write)."""
            if self.kv_format == "fp8_ds_mla":
                return int(metadata.get(prefix + "_block_size", metadata["block_size"]))
            return cache.shape[1]

        def array(name):
            return tensors[name][1] if name in tensors else None

        self.sets = []  # (indices [T][W], lens [T] or None, Pool)
        for prefix in ("swa", "extra"):
            cache = array(prefix + "_cache")
            if cache is None:
                continue
            pool = formats.Pool(self.kv_format, cache, block_size_of(prefix, cache))
            self.sets.append((array(prefix + "_indices"), array(prefix + "_lens"), pool))
        self.cu = array("cu_seqlens_q")
        self.seq_lens = array("seq_lens")
        sinks = array("sinks")
        self.sinks = None if sinks is None else sinks.astype(np.float64)

    def position(self, t):
        """Token t's absolute position, or None when it is padding; 0 without positions
        (every token is computed, no window)."""
        if self.cu is None:
            return 0
        for b in range(len(self.cu) - 1):
            begin, end = int(self.cu[b]), int(self.cu[b + 1])
            if begin <= t < end:
                return int(self.seq_lens[b]) - (end - begin) + (t - begin)
        return None

    def active_slots(self, t):
        """The valid slot ids token t attends to, per index set (duplicates kept), or None
        for a padding token."""
        pos = self.position(t)
        if pos is None:
            return None
        result = []
        for k, (indices, lens, pool) in enumerate(self.sets):
            width = indices.shape[1]
            n = width if lens is None else min(max(int(lens[t]), 0), width)
            if k == 0 and self.cu is not None:  # the SWA set with positions: the window
                n = min(n, max(0, min(pos + 1, self.window)))
            ids = indices[t, :n].astype(np.int64)
            result.append(ids[(ids >= 0) & (ids < pool.rows())])
        return result

    def token_rows(self, t):
        """[n][512] decoded KV rows token t attends to, or None for padding."""
        slots = self.active_slots(t)
        if slots is None:
            return None
        return np.concatenate([pool.values[ids] for ids, (_, _, pool) in zip(slots, self.sets)]
                              + [np.zeros((0, formats.HEAD_DIM))])


def attend_token(p, t):
    """(out [H][512], lse [H]) of token t in float64, or None when it is padding."""
    k = p.token_rows(t)
    if k is None:
        return None
    H = p.num_heads
    if len(k) == 0:
        return np.zeros((H, formats.HEAD_DIM)), np.full(H, -np.inf)
    s = p.bmm1 * (p.q[t] @ k.T)                      # [H][n]
    s_max = s.max(axis=1)
    lse = s_max + np.log(np.exp(s - s_max[:, None]).sum(axis=1))
    sink = np.full(H, -np.inf) if p.sinks is None else p.sinks
    m = np.maximum(s_max, sink)
    e = np.exp(s - m[:, None])
    with np.errstate(invalid="ignore"):
        e_sink = np.where(sink == np.inf, 1.0, np.exp(sink - m))  # +inf sink: all weight
    out = p.bmm2 * (e @ k) / (e.sum(axis=1) + e_sink)[:, None]
    out[sink == np.inf] = 0.0
    return out, lse


def attend(p):
    """(out [T][H][512], lse [T][H], computed [T] bool), float64; padding rows are 0/NaN."""
    T, H = p.num_tokens, p.num_heads
    out = np.zeros((T, H, formats.HEAD_DIM))
    lse = np.full((T, H), np.nan)
    computed = np.zeros(T, dtype=bool)
    for t in range(T):
        r = attend_token(p, t)
        if r is not None:
            out[t], lse[t] = r
            computed[t] = True
    return out, lse, computed
