"""The Python binding driven the way an engine drives it, on the GPU.

20 steps of a batch of decodes and chunked prefills whose prefixes grow every step (FP8
queries, paged fp8 SWA and compressed caches, the engine's [window | top-k] index rows):
every step draws new query lengths (1 or 2 for decodes, a varying chunk for prefills; a
prefill whose prompt is done turns into a decode and moves to the front), writes its
inputs into static buffers, rebuilds the device plan, and replays a CUDA graph that
captured smla.sparse_mla once, at step 0. Each step's out and lse are checked against the
CPU reference (DESIGN section 8's limits for the query dtype; FP8: rel. Frobenius error of
out <= 3e-2, |lse error| <= 1e-2), rows past the batch must stay untouched, and the plan's
segments must be DESIGN section 4's.

The same loop runs through smla.flash_mla as an engine written for FlashMLA drives it
(BF16 queries, MODEL1 fp8_ds_mla caches paged at 256 and 2 tokens): the decode tokens as
one-token requests of flash_mla_with_kvcache captured once in a CUDA graph, the prefill
tokens through flash_mla_sparse_fwd over a BF16 copy of both caches; checked against the
same reference.

Needs PyTorch and a GPU: scripts/gpu-check.sh runs
    PYTHONPATH=python SMLA_LIBRARY=build-gpu/libsmla.so python3 -m pytest -q tests/gpu/test_python_engine_loop.py
The host half (workload, plan rebuilds, reference check) also runs on the CPU in
python/tests/test_engine_loop_host.py, through HostRunner.
"""
import numpy as np

import smla

HEADS = 16
WINDOW = 128
TOPK = 64               # compressed columns after the window columns
COMPRESS_RATIO = 4      # one compressed entry per 4 positions
BLOCK = 64              # tokens per cache block
DECODE_THRESHOLD = 2    # 1 + one speculative token
SEGMENT_CAP = 64        # small, so the prefill chunks are split into segments
PADDING_ROWS = 5        # rows after the largest batch: never computed, never written
STEPS = 20
# (chunk length, prefix before step 0, prompt length): decodes have their prompt done;
# the first request finishes its prompt after about 5 steps, then decodes (and so moves
# ahead of the prefills in the batch).
REQUESTS = [(48, 0, 260), (1, 300, 300), (2, 5, 5), (1, 1000, 1000), (2, 90, 90),
            (200, 130, 10**6), (97, 2000, 10**6)]
BMM1_SCALE = 512 ** -0.5
# DESIGN section 8, per query dtype (smla.quantize's names): (out rel. Frobenius error,
# |lse error|) limits
LIMITS = {"fp8_e4m3": (3e-2, 1e-2), "bf16": (4e-3, 1e-3)}
OUT_POISON = 0x7FC0     # BF16 NaN


FP8_WORKLOAD = dict(kv_format="fp8", q_dtype="fp8_e4m3", block_sizes=(BLOCK, BLOCK))


class Workload:
    """The engine's state: paged caches (random contents, fixed; kv_format, each pool with
    its own block size), block tables, prefixes, and each step's batch: queries (q_dtype),
    index rows, lens, query starts and sequence lengths."""

    def __init__(self, rng, requests, steps, kv_format, q_dtype, block_sizes):
        self.rng = rng
        self.kv_format, self.q_dtype = kv_format, q_dtype
        self.swa_block, self.extra_block = block_sizes
        self.chunks = np.array([c for c, _, _ in requests])
        self.prefixes = np.array([p for _, p, _ in requests])
        self.prompts = np.array([n for _, _, n in requests])
        self.longest = np.maximum(self.chunks + self.chunks // 4, DECODE_THRESHOLD)
        self.rows = int(self.longest.sum()) + PADDING_ROWS
        last = self.prefixes + steps * self.longest  # positions the last step may reach
        self.swa_table = self._block_tables(last, self.swa_block)
        self.extra_table = self._block_tables(last // COMPRESS_RATIO + 1, self.extra_block)
        self.swa_cache = self._cache(self.swa_table, self.swa_block)
        self.extra_cache = self._cache(self.extra_table, self.extra_block)

    def _block_tables(self, lengths, block):
        """Per request, the shuffled physical blocks that hold its positions."""
        counts = -(-lengths // block)
        blocks = self.rng.permutation(int(counts.sum()))
        return np.split(blocks, np.cumsum(counts)[:-1])

    def _cache(self, tables, block):
        rows = sum(len(t) for t in tables) * block
        return smla.kv_pack(self.rng.normal(size=(rows, smla.HEAD_DIM)), self.kv_format, block)

    @staticmethod
    def _slots(table, positions, block):
        return table[positions // block] * block + positions % block

    def _query_lens(self):
        """This step's query length of every request (prefills: a chunk of the prompt)."""
        q_lens = self.rng.integers(1, DECODE_THRESHOLD + 1, len(self.chunks))
        prefilling = self.prefixes < self.prompts
        chunks = self.rng.integers(self.chunks * 3 // 4, self.longest + 1)
        q_lens[prefilling] = np.minimum(chunks, self.prompts - self.prefixes)[prefilling]
        return q_lens

    def step(self):
        """The next step's batch (NumPy), requests in engine order (decodes first); the
        prefixes then move past it."""
        q_lens = self._query_lens()
        order = np.argsort(q_lens > DECODE_THRESHOLD, kind="stable")
        q_lens = q_lens[order]
        query_start_loc = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
        seq_lens = (self.prefixes[order] + q_lens).astype(np.int32)
        tokens = int(query_start_loc[-1])
        indices = np.full((tokens, WINDOW + TOPK), -1, np.int32)
        extra_lens = np.zeros(tokens, np.int32)
        for b, r in enumerate(order):
            start, end = query_start_loc[b], query_start_loc[b + 1]
            for t in range(start, end):
                position = seq_lens[b] - (end - start) + (t - start)
                window = np.arange(max(0, position - WINDOW + 1), position + 1)
                indices[t, :len(window)] = self._slots(self.swa_table[r], window,
                                                       self.swa_block)
                available = (position + 1) // COMPRESS_RATIO
                picked = self.rng.choice(available, min(TOPK, available), replace=False)
                indices[t, WINDOW:WINDOW + len(picked)] = self._slots(self.extra_table[r],
                                                                      picked, self.extra_block)
                extra_lens[t] = max(0, len(picked) - int(self.rng.integers(0, 3)))
        self.prefixes[order] += q_lens
        q = smla.quantize(self.rng.normal(size=(tokens, HEADS, smla.HEAD_DIM)), self.q_dtype)
        return dict(q=q, indices=indices, extra_lens=extra_lens, seq_lens=seq_lens,
                    query_start_loc=query_start_loc, tokens=tokens)

    def reference(self, batch, sinks):
        """The CPU reference, positioned by query starts (no plan): (out bits, lse)."""
        return smla.sparse_mla(
            batch["q"], self.swa_cache, batch["indices"][:, :WINDOW],
            extra_cache=self.extra_cache, extra_indices=batch["indices"][:, WINDOW:],
            extra_lens=batch["extra_lens"], cu_seqlens_q=batch["query_start_loc"],
            seq_lens=batch["seq_lens"], sinks=sinks, bmm1_scale=BMM1_SCALE, window=WINDOW,
            block_size=self.swa_block, extra_block_size=self.extra_block, return_lse=True)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def planned_segments(batch):
    """(request, segment sequence length) of every prefill segment, by DESIGN section 4."""
    segments = []
    q_lens = np.diff(batch["query_start_loc"])
    for r, (q_len, seq_len) in enumerate(zip(q_lens, batch["seq_lens"])):
        if q_len > DECODE_THRESHOLD:
            pieces = -(-q_len // SEGMENT_CAP)
            ends = np.cumsum([q_len // pieces + (k < q_len % pieces) for k in range(pieces)])
            segments += [(r, int(seq_len - q_len + e)) for e in ends]
    return segments


def check_step(step, batch, q_dtype, plan_segments, out_bits, lse, want_bits, want_lse):
    """Compares one step's result with the reference, within the limits of q_dtype (and
    the plan's segments, unless None); raises AssertionError."""
    out_limit, lse_limit = LIMITS[q_dtype]
    n = batch["tokens"]
    got, want = bf16_values(out_bits[:n]), bf16_values(want_bits)
    error = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert error <= out_limit, f"step {step}: out rel. Frobenius error {error:.3g}"
    finite = np.isfinite(want_lse)
    assert np.array_equal(np.isfinite(lse[:n]), finite), f"step {step}: lse -inf differ"
    lse_error = np.max(np.abs(lse[:n][finite] - want_lse[finite]), initial=0.0)
    assert lse_error <= lse_limit, f"step {step}: lse error {lse_error:.3g}"
    assert np.all(out_bits[n:] == OUT_POISON) and np.all(np.isnan(lse[n:])), \
        f"step {step}: rows past the batch were written"
    assert plan_segments is None or plan_segments == planned_segments(batch), \
        f"step {step}: plan segments {plan_segments}"


def rows_of(array, rows, fill):
    """array padded with rows of fill to `rows` rows."""
    pad = np.full((rows - len(array),) + array.shape[1:], fill, array.dtype)
    return np.concatenate([array, pad])


class HostRunner:
    """The loop on the host: a host plan rebuilt every step, the CPU reference through it."""
    WORKLOAD = FP8_WORKLOAD

    def __init__(self, workload, sinks):
        self.workload, self.sinks = workload, sinks
        self.plan = smla.Plan(workload.rows, len(workload.chunks))

    def run(self, batch):
        w = self.workload
        self.plan.build(batch["query_start_loc"], batch["seq_lens"], DECODE_THRESHOLD, "fp8",
                        SEGMENT_CAP)
        indices = rows_of(batch["indices"], w.rows, -1)
        out = np.full((w.rows, HEADS, smla.HEAD_DIM), OUT_POISON, np.uint16)
        lse = np.full((w.rows, HEADS), np.nan, np.float32)
        smla.sparse_mla(rows_of(batch["q"], w.rows, 0x7F), w.swa_cache, indices[:, :WINDOW],
                        extra_cache=w.extra_cache, extra_indices=indices[:, WINDOW:],
                        extra_lens=rows_of(batch["extra_lens"], w.rows, 0), plan=self.plan,
                        sinks=self.sinks, bmm1_scale=BMM1_SCALE, window=WINDOW, out=out,
                        lse=lse)
        segments = list(zip(self.plan.segment_requests.tolist(),
                            self.plan.segment_seq_lens.tolist()))
        return out, lse, segments


class CudaRunner:
    """The loop on the GPU: static device buffers, a device plan rebuilt every step on the
    current stream, and the attention captured once in a CUDA graph and replayed."""
    WORKLOAD = FP8_WORKLOAD

    def __init__(self, workload, sinks):
        import torch
        self.torch, self.workload = torch, workload
        rows, cuda, fp8 = workload.rows, torch.device("cuda"), torch.float8_e4m3fn

        def device(array, dtype=None):
            t = torch.from_numpy(np.ascontiguousarray(array)).to(cuda)
            return t.view(dtype) if dtype else t

        self.swa_cache = device(workload.swa_cache, fp8)
        self.extra_cache = device(workload.extra_cache, fp8)
        self.sinks = device(sinks)
        self.q = torch.zeros((rows, HEADS, smla.HEAD_DIM), dtype=fp8, device=cuda)
        self.indices = torch.full((rows, WINDOW + TOPK), -1, dtype=torch.int32, device=cuda)
        self.extra_lens = torch.zeros(rows, dtype=torch.int32, device=cuda)
        self.seq_lens = torch.zeros(len(workload.chunks), dtype=torch.int32, device=cuda)
        self.out = torch.empty((rows, HEADS, smla.HEAD_DIM), dtype=torch.bfloat16, device=cuda)
        self.lse = torch.empty((rows, HEADS), dtype=torch.float32, device=cuda)
        self.plan = smla.Plan(rows, len(workload.chunks), device=cuda)
        self.graph = None

    def _attend(self):
        smla.sparse_mla(self.q, self.swa_cache, self.indices[:, :WINDOW],
                        extra_cache=self.extra_cache, extra_indices=self.indices[:, WINDOW:],
                        extra_lens=self.extra_lens, plan=self.plan, sinks=self.sinks,
                        bmm1_scale=BMM1_SCALE, window=WINDOW, out=self.out, lse=self.lse)

    def run(self, batch):
        torch, n = self.torch, batch["tokens"]
        self.q.view(torch.uint8)[:n].copy_(torch.from_numpy(batch["q"]))
        self.q.view(torch.uint8)[n:].fill_(0x7F)  # NaN: rows past the batch are not read
        self.indices[:n].copy_(torch.from_numpy(batch["indices"]))
        self.extra_lens[:n].copy_(torch.from_numpy(batch["extra_lens"]))
        requests = len(batch["seq_lens"])
        self.seq_lens[:requests].copy_(torch.from_numpy(batch["seq_lens"]))
        self.plan.build(batch["query_start_loc"], self.seq_lens, DECODE_THRESHOLD,
                        torch.float8_e4m3fn, SEGMENT_CAP, num_requests=requests)
        if self.graph is None:  # warm up, then capture once
            self._attend()
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self._attend()
        self.out.view(torch.int16).fill_(OUT_POISON)
        self.lse.fill_(float("nan"))
        self.graph.replay()
        segments = list(zip(self.plan.segment_requests.tolist(),
                            self.plan.segment_seq_lens.tolist()))
        torch.cuda.synchronize()
        out = self.out.view(torch.int16).cpu().numpy().view(np.uint16)
        return out, self.lse.cpu().numpy(), segments


def model1_view(cache, block_size):
    """FlashMLA's [num_blocks, block_size, 1, 584] view of an fp8_ds_mla cache [num_blocks,
    block_bytes] (a NumPy array or a tensor), as its quantize_k_cache makes it."""
    return cache[:, :block_size * 584].reshape(cache.shape[0], block_size, 1, 584)


class FlashMlaRunner:
    """The loop through smla.flash_mla, as an engine written for FlashMLA drives it: every
    decode token a one-token request of flash_mla_with_kvcache (window and compressed slots
    as two index sets with their own lengths), in a batch padded to the workload's rows
    whose padding rows have no valid index; the prefill tokens through flash_mla_sparse_fwd
    over a BF16 copy of both caches, one index row [window | compressed] each. On the host
    (NumPy); CudaFlashMlaRunner runs it on the GPU."""
    WORKLOAD = dict(kv_format="fp8_ds_mla", q_dtype="bf16", block_sizes=(256, 2))

    def __init__(self, workload, sinks):
        w = self.workload = workload
        swa = smla.kv_unpack(w.swa_cache, "fp8_ds_mla", w.swa_block)
        extra = smla.kv_unpack(w.extra_cache, "fp8_ds_mla", w.extra_block)
        self.swa_rows = len(swa)
        # BF16 holds the decoded values exactly (E4M3 times a power of two; BF16 RoPE).
        self.staging = self.device(smla.quantize(np.concatenate([swa, extra]), "bf16")[:, None])
        self.swa_cache = model1_view(self.device(w.swa_cache), w.swa_block)
        self.extra_cache = model1_view(self.device(w.extra_cache), w.extra_block)
        self.sinks = self.device(sinks)
        self.metadata, _ = smla.flash_mla.get_mla_metadata()

    def device(self, array):
        return array

    def host(self, value):
        return value

    def decode_call(self, q, indices, topk_length, extra_topk_length):
        return smla.flash_mla.flash_mla_with_kvcache(
            q, self.swa_cache, None, None, smla.HEAD_DIM, self.metadata,
            softmax_scale=BMM1_SCALE, is_fp8_kvcache=True, indices=indices[..., :WINDOW],
            attn_sink=self.sinks, extra_k_cache=self.extra_cache,
            extra_indices_in_kvcache=indices[..., WINDOW:], topk_length=topk_length,
            extra_topk_length=extra_topk_length)

    def decode(self, inputs):
        """(out, lse) of the padded decode batch (host arrays in, device values out)."""
        return self.decode_call(**{k: self.device(v) for k, v in inputs.items()})

    def run(self, batch):
        w, n, indices = self.workload, batch["tokens"], batch["indices"]
        q_lens = np.diff(batch["query_start_loc"])
        decodes = int(batch["query_start_loc"][np.count_nonzero(q_lens <= DECODE_THRESHOLD)])
        window_lens = np.count_nonzero(indices[:, :WINDOW] >= 0, axis=1).astype(np.int32)
        out_dec, lse_dec = (self.host(x) for x in self.decode(dict(
            q=rows_of(batch["q"][:decodes], w.rows, 0)[:, None],
            indices=rows_of(indices[:decodes], w.rows, -1)[:, None],
            topk_length=rows_of(window_lens[:decodes], w.rows, 0),
            extra_topk_length=rows_of(batch["extra_lens"][:decodes], w.rows, 0))))
        assert np.all(out_dec[decodes:] == 0) and np.all(np.isposinf(lse_dec[decodes:])), \
            "decode padding rows (no valid index): FlashMLA's out 0 and lse +inf"

        combined = indices[decodes:n].copy()  # compressed slots follow the SWA rows
        combined[:, WINDOW:] += np.where(combined[:, WINDOW:] >= 0, self.swa_rows, 0)
        extra_lens = batch["extra_lens"][decodes:n]
        prefill = smla.flash_mla.flash_mla_sparse_fwd(
            self.device(batch["q"][decodes:n]), self.staging, self.device(combined[:, None]),
            BMM1_SCALE, attn_sink=self.sinks,
            topk_length=self.device((WINDOW + extra_lens).astype(np.int32)))
        out_pre, max_logits, lse_pre = (self.host(x) for x in prefill)
        check_max_logits(max_logits, lse_pre, window_lens[decodes:n] + extra_lens, LIMITS[w.q_dtype][1])

        out = np.full((w.rows, HEADS, smla.HEAD_DIM), OUT_POISON, np.uint16)
        lse = np.full((w.rows, HEADS), np.nan, np.float32)
        out[:decodes], lse[:decodes] = out_dec[:decodes, 0], lse_dec[:decodes, :, 0]
        out[decodes:n], lse[decodes:n] = out_pre, lse_pre
        lse[:n][np.isposinf(lse[:n])] = -np.inf  # FlashMLA's lse without entries; smla's
        return out, lse, None


def check_max_logits(max_logits, lse, counts, lse_limit):
    """lse - log(count) <= max_logits <= lse (each within lse_limit) for tokens with count
    entries (FlashMLA's lse: +inf, max_logits -inf where count is 0)."""
    empty = counts == 0
    assert np.all(np.isneginf(max_logits[empty])) and np.all(np.isposinf(lse[empty]))
    bound = np.log(counts[~empty])[:, None]
    top, low = lse[~empty], lse[~empty] - bound
    assert np.all(max_logits[~empty] <= top + lse_limit), "max_logits above lse"
    assert np.all(max_logits[~empty] >= low - lse_limit), "max_logits below lse - log(n)"


class CudaFlashMlaRunner(FlashMlaRunner):
    """FlashMlaRunner on the GPU: each step's inputs copied to the device, the decode call
    captured once in a CUDA graph over static buffers and replayed."""

    def __init__(self, workload, sinks):
        import torch
        self.torch, self.graph = torch, None
        super().__init__(workload, sinks)

    def device(self, array):
        torch = self.torch
        if array.dtype == np.uint16:  # BF16 bits
            return torch.from_numpy(array.view(np.int16)).cuda().view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(array)).cuda()

    def host(self, value):
        if value.dtype == self.torch.bfloat16:
            return value.view(self.torch.int16).cpu().numpy().view(np.uint16)
        return value.cpu().numpy()

    def decode(self, inputs):
        torch = self.torch
        if self.graph is None:  # warm up, then capture once
            self.static = {k: self.device(v) for k, v in inputs.items()}
            self.decode_call(**self.static)
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.results = self.decode_call(**self.static)
        else:
            for k, v in inputs.items():
                self.static[k].copy_(self.device(v))
        self.graph.replay()
        torch.cuda.synchronize()
        return self.results


def run_engine_loop(runner_class, steps=STEPS, seed=None):
    """Runs the loop; raises AssertionError at the first step that is wrong."""
    rng = np.random.default_rng(seed)
    workload = Workload(rng, REQUESTS, steps, **runner_class.WORKLOAD)
    sinks = rng.normal(2.0, 1.0, HEADS).astype(np.float32)
    runner = runner_class(workload, sinks)
    shapes = set()
    for step in range(steps):
        batch = workload.step()
        out, lse, segments = runner.run(batch)
        want_out, want_lse = workload.reference(batch, sinks)
        check_step(step, batch, workload.q_dtype, segments, out, lse, want_out, want_lse)
        shapes.add(tuple(batch["query_start_loc"]))
    assert len(shapes) > 1, "the batch never changed shape"


def require_cuda():
    import torch
    assert torch.cuda.is_available(), "this test needs a CUDA GPU"
    assert smla.has_cuda(), f"{smla.library_path} was built without CUDA or sees no GPU"
    return torch


def test_engine_loop_cuda_graph():
    require_cuda()
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    run_engine_loop(CudaRunner, seed=seed)


def test_engine_loop_flash_mla():
    require_cuda()
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    run_engine_loop(CudaFlashMlaRunner, seed=seed)


def test_flashinfer_entry_on_gpu():
    """The FlashInfer-style call on CUDA tensors agrees with the same call on the host."""
    torch = require_cuda()
    rng = np.random.default_rng()
    workload = Workload(rng, REQUESTS[1:5], 1, **FP8_WORKLOAD)  # the decodes
    batch = workload.step()
    lens = (batch["extra_lens"] + WINDOW).astype(np.int32)
    host = dict(query=batch["q"], swa_kv_cache=workload.swa_cache,
                workspace_buffer=np.zeros(1 << 20, np.uint8), sparse_indices=batch["indices"],
                compressed_kv_cache=workload.extra_cache, sparse_topk_lens=lens,
                seq_lens=batch["seq_lens"], bmm1_scale=BMM1_SCALE,
                cum_seq_lens_q=batch["query_start_loc"], max_q_len=2)
    want = bf16_values(smla.trtllm_batch_decode_sparse_mla_dsv4(**host))
    fp8 = torch.float8_e4m3fn
    device = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in host.items()
              if isinstance(v, np.ndarray)}
    for k in ("query", "swa_kv_cache", "compressed_kv_cache"):
        device[k] = device[k].view(fp8)
    out = smla.trtllm_batch_decode_sparse_mla_dsv4(**dict(host, **device))
    assert out.dtype == torch.bfloat16 and out.is_cuda
    got = out.float().cpu().numpy().astype(np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) <= LIMITS["fp8_e4m3"][0]


def test_device_arguments_are_checked():
    torch = require_cuda()
    q = torch.zeros((2, HEADS, smla.HEAD_DIM), dtype=torch.bfloat16, device="cuda")
    cache = torch.zeros((1, BLOCK, smla.HEAD_DIM), dtype=torch.bfloat16, device="cuda")
    indices = torch.zeros((2, 4), dtype=torch.int32)
    try:
        smla.sparse_mla(q, cache, indices, bmm1_scale=1.0)
        raise AssertionError("host indices with a CUDA query were accepted")
    except smla.DeviceError as e:
        assert "swa_indices is on cpu but q is on cuda:0" in str(e)
    plan = smla.Plan(4, 2, device="cuda")
    try:
        plan.build(np.array([0, 1, 2], np.int32), np.array([3, 4], np.int32), 1, "bf16")
        raise AssertionError("host seq_lens were accepted by a device plan")
    except smla.DeviceError as e:
        assert "seq_lens is on cpu but the plan is on cuda:0" in str(e)
    seq_lens = torch.tensor([3, 4], dtype=torch.int32, device="cuda")
    plan.build(np.array([0, 1, 2], np.int32), seq_lens, 1, "bf16")
    assert plan.decode_seq_lens.is_cuda and plan.decode_seq_lens.tolist() == [3, 4]


if __name__ == "__main__":  # without pytest: run every test, fail on the first error
    for name, test in list(globals().items()):
        if name.startswith("test_") and callable(test):
            test()
            print(f"{name}: pass")
