"""The max_logits output of FlashMLA's sparse prefill, which smla's kernels do not produce:
for each token and head, scale * max_j q.k_j over the token's active entries, -inf where
it has none. Computed here in float64 from the gathered rows, a block of tokens at a
time: a pass of its own, about as costly as the attention's q.k products."""
import numpy as np

from ._arrays import is_torch, torch_module

GATHER_BYTES = 1 << 26  # float64 rows gathered at once


def _float64(values):
    """BF16 values (a bfloat16 tensor or array, or uint16 bits) as float64."""
    if is_torch(values):
        torch = torch_module()
        if values.dtype == torch.uint16:
            values = values.view(torch.bfloat16)
        return values.double()
    if values.dtype == np.uint16:
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def fill_max_logits(out, q, kv, indices, lens, scale):
    """out [T, H] float32 <- the max logits of q [T, H, 512] over kv [N, 512] (BF16, NumPy
    or torch alike), where token t attends to the valid ids (0 <= id < N) among the first
    lens[t] (all without lens) of indices[t]; out starts as -inf."""
    tokens, width = indices.shape
    if width == 0 or kv.shape[0] == 0:  # no valid entry anywhere
        return
    torch = torch_module() if is_torch(q) else None
    columns = (torch.arange(width, device=indices.device) if torch is not None
               else np.arange(width))
    step = max(1, GATHER_BYTES // (width * q.shape[-1] * 8))
    for start in range(0, tokens, step):
        ids = indices[start:start + step]
        valid = (ids >= 0) & (ids < kv.shape[0])
        if lens is not None:
            valid &= columns[None, :] < lens[start:start + step, None]
        safe = ids * valid  # invalid ids read row 0, then masked
        rows = _float64(kv[safe.long() if torch is not None else safe])
        einsum = np.einsum if torch is None else torch.einsum  # (NumPy's @ is far slower)
        logits = einsum("thd,tjd->thj", _float64(q[start:start + step]), rows) * scale
        hidden = ~valid[:, None, :]
        if torch is not None:
            logits.masked_fill_(hidden, float("-inf"))
            out[start:start + step] = logits.amax(-1)
        else:
            logits[np.broadcast_to(hidden, logits.shape)] = -np.inf
            out[start:start + step] = logits.max(-1)
