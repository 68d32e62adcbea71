// A token's active KV entries (DESIGN section 2), as every kernel sees them: its position
// from the position parts, the active SWA and extra column counts, and the row each active
// entry reads. Device-resident values (cu_seqlens, seq_lens, lens, indices) are untrusted:
// anything out of range makes the token padding, clamps a count, or skips an entry.
#pragma once
#include <cstdint>

#include "smla.h"
#include "../prefill/params.cuh"

namespace smla {

// Finds token t's sequence. Returns false when t is padding (not covered by any
// sequence); otherwise sets *has_pos and *pos (absolute position, may be negative when a
// sequence's seq_len is shorter than its query length: such a token has no SWA column).
__device__ inline bool token_position(const AttentionParams &p, int64_t t, bool *has_pos,
                                      int64_t *pos)
{
    *has_pos = false;
    *pos = 0;
    if (p.num_parts == 0)
        return true;
    for (int i = 0; i < p.num_parts; i++) {
        const PositionPart &part = p.parts[i];
        const int64_t rel = t - part.token_offset;
        if (rel < 0 || rel >= part.num_tokens || part.num_seqs <= 0)
            continue;
        // Largest b with cu[b] <= rel (terminates whatever cu holds).
        int lo = 0, hi = part.num_seqs - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (part.cu[mid] <= rel)
                lo = mid;
            else
                hi = mid - 1;
        }
        const int64_t begin = part.cu[lo], end = part.cu[lo + 1];
        if (rel < begin || rel >= end)
            return false;
        *has_pos = true;
        *pos = static_cast<int64_t>(part.seq_lens[lo]) - (end - begin) + (rel - begin);
        return true;
    }
    return false;
}

__device__ inline int active_columns(const IndexParams &ix, int64_t t)
{
    if (ix.width <= 0)
        return 0;
    if (!ix.lens)
        return ix.width;
    const int len = ix.lens[t * ix.lens_stride];
    return len < 0 ? 0 : (len > ix.width ? ix.width : len);
}

// Active SWA and extra columns of token t; false when t is padding.
__device__ inline bool token_entries(const AttentionParams &p, int64_t t, int *n_swa, int *n_ext)
{
    bool has_pos;
    int64_t pos;
    if (!token_position(p, t, &has_pos, &pos))
        return false;
    int swa = active_columns(p.swa_idx, t);
    if (has_pos) {
        const int64_t allowed = pos + 1 < 0 ? 0 : (pos + 1 > p.window ? p.window : pos + 1);
        if (swa > allowed)
            swa = static_cast<int>(allowed);
    }
    *n_swa = swa;
    *n_ext = active_columns(p.extra_idx, t);
    return true;
}

// Address of the row entry e (< n_swa + n_ext) of token t reads, or 0 when its index is
// invalid. Rows are 16-byte aligned, so bit 0 is free: it is set for E4M3 (`fp8`) rows,
// which kernels that compute in BF16 convert.
__device__ inline uint64_t entry_row(const AttentionParams &p, int64_t t, int e, int n_swa)
{
    const bool swa = e < n_swa;
    const IndexParams &ix = swa ? p.swa_idx : p.extra_idx;
    const PoolParams &pool = swa ? p.swa : p.extra;
    const int col = swa ? e : e - n_swa;
    const int32_t slot = ix.indices[t * ix.row_stride + col];
    if (slot < 0 || slot >= pool.rows)
        return 0;
    const bool fp8 = pool.format == SMLA_KV_FP8;
    const int64_t row_bytes = fp8 ? 512 : 1024;
    const int64_t offset = static_cast<int64_t>(slot / pool.block_size) * pool.block_stride +
                           static_cast<int64_t>(slot % pool.block_size) * row_bytes;
    return reinterpret_cast<uint64_t>(pool.data + offset) | (fp8 ? 1u : 0u);
}

} // namespace smla
