// A token's active KV entries (DESIGN section 2), as every kernel sees them: its position
// from the position parts, the active SWA and extra column counts, and the row each active
// entry reads. Device-resident values (cu_seqlens, seq_lens, lens, indices) are untrusted:
// anything out of range makes the token padding, clamps a count, or skips an entry.
#pragma once
#include <cstdint>

#include "smla.h"
#include "../prefill/params.cuh"
#include "softmax.cuh"

namespace smla {

// Position of token rel (relative to its part) among num_seqs sequences starting at
// cu[]: false when it is in none of them (padding).
__device__ inline bool position_in(const int32_t *cu, const int32_t *seq_lens, int num_seqs, int64_t rel,
                                   int64_t *pos)
{
    if (num_seqs <= 0 || rel < 0)
        return false;
    // Largest b with cu[b] <= rel (terminates whatever cu holds). Each step of a bisection
    // waits for the load before it (a batch of 128 decodes: 7 round trips, a seventh of a
    // decode CTA's time), so the sequence rel would be in if all had one length (engines'
    // decode batches mostly do) is tried first; the bisection narrows from it otherwise.
    int lo = 0, hi = num_seqs - 1;
    const int64_t total = cu[num_seqs];
    if (rel < total) {
        const int g = static_cast<int>(rel * num_seqs / total); // 0 <= g < num_seqs
        // All three loads at once: one round trip when g holds rel.
        const int64_t begin = cu[g], end = cu[g + 1], len = seq_lens[g];
        if (begin <= rel && rel < end) {
            *pos = len - (end - begin) + (rel - begin);
            return true;
        }
        if (begin > rel)
            hi = g > 0 ? g - 1 : 0;
        else
            lo = g + 1 < hi ? g + 1 : hi;
    }
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (cu[mid] <= rel)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int64_t begin = cu[lo], end = cu[lo + 1];
    if (rel < begin || rel >= end)
        return false;
    *pos = static_cast<int64_t>(seq_lens[lo]) - (end - begin) + (rel - begin);
    return true;
}

// *address, or `fallback` when address is null: a predicated load, never a branch. A
// token's first loads are made so that all of them issue before the first wait: behind
// branches, ptxas waits for each loaded value in the load's own block (moving it to a
// uniform register there), one round trip after another.
__device__ __forceinline__ int32_t load_or(const int32_t *address, int32_t fallback)
{
    int32_t v = fallback;
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u64 p, %1, 0;\n\t@p ld.global.b32 %0, [%1];\n\t}"
                 : "+r"(v)
                 : "l"(address)
                 : "memory");
    return v;
}

// What a one-trip lookup loads first, all at once (load_or): the token's lens and, with a
// plan, its decode position. A decode token needs nothing else. (The plan's counts, which
// only a prefill token needs, are loaded after: loaded here, ptxas waits for them before
// the first branch.)
struct TokenLoads {
    int32_t swa_len, ext_len; // the index widths when there are no lens
    int32_t decode_pos;       // SMLA_PLAN_NOT_DECODE: not a plan's decode token
};

__device__ __forceinline__ const int32_t *lens_address(const IndexParams &ix, int64_t t)
{
    return ix.width > 0 && ix.lens ? ix.lens + t * ix.lens_stride : nullptr;
}

__device__ __forceinline__ TokenLoads token_loads(const AttentionParams &p, int64_t t)
{
    const PlanPositions &pl = p.plan;
    TokenLoads l;
    l.swa_len = load_or(lens_address(p.swa_idx, t), p.swa_idx.width);
    l.ext_len = load_or(lens_address(p.extra_idx, t), p.extra_idx.width);
    l.decode_pos = load_or(p.has_plan && t < pl.max_tokens ? pl.decode_positions + t : nullptr, SMLA_PLAN_NOT_DECODE);
    return l;
}

// Finds token t's sequence. Returns false when t is padding (not covered by any
// sequence); otherwise sets *has_pos and *pos (absolute position, may be negative when a
// sequence's seq_len is shorter than its query length: such a token has no SWA column).
// decode_pos: t's plan decode position when the caller loaded it (one trip), else
// SMLA_PLAN_NOT_DECODE, and a decode token is found from the plan's decode arrays.
__device__ inline bool token_position(const AttentionParams &p, int64_t t, int32_t decode_pos, bool *has_pos,
                                      int64_t *pos)
{
    *has_pos = p.has_plan || p.num_parts > 0;
    *pos = 0;
    if (p.has_plan) { // decodes first, then the prefill segments
        const PlanPositions &pl = p.plan;
        if (decode_pos != SMLA_PLAN_NOT_DECODE) {
            *pos = decode_pos;
            return true;
        }
        const int32_t decodes = pl.counts[0], segments = pl.counts[1];
        const int64_t decode_tokens = decodes > 0 ? pl.decode_starts[decodes] : 0;
        if (t < decode_tokens)
            return position_in(pl.decode_starts, pl.decode_seq_lens, decodes, t, pos);
        return position_in(pl.segment_starts, pl.segment_seq_lens, segments, t - decode_tokens, pos);
    }
    if (p.num_parts == 0)
        return true;
    for (int i = 0; i < p.num_parts; i++) {
        const PositionPart &part = p.parts[i];
        const int64_t rel = t - part.token_offset;
        if (rel >= 0 && rel < part.num_tokens)
            return position_in(part.cu, part.seq_lens, part.num_seqs, rel, pos);
    }
    return false;
}

// Token t's active columns of an index set: its lens value within 0 .. width (the width
// without lens), loaded after whatever came before.
__device__ inline int active_columns(const IndexParams &ix, int64_t t)
{
    if (ix.width <= 0)
        return 0;
    if (!ix.lens)
        return ix.width;
    const int len = ix.lens[t * ix.lens_stride];
    return len < 0 ? 0 : (len > ix.width ? ix.width : len);
}

// The same from a lens value token_loads loaded. (Not shared with the above: fp8m's
// walking producer compiles to other code, with more spills, when it is.)
__device__ __forceinline__ int loaded_columns(int32_t len, int32_t width)
{
    return len < 0 ? 0 : (len > width ? width : len);
}

// Whether token t's KV work is split across work items: every token when the launch
// splits at fixed points (or has no plan), else only a plan's decode tokens (so that the
// prefill tokens' results do not depend on the batch). From the plan's arrays, for a
// lookup that did not load t's decode position.
__device__ inline bool token_is_split(const AttentionParams &p, int64_t t)
{
    if (p.splits <= 1)
        return false;
    if (p.split_all || !p.has_plan)
        return true;
    const int32_t decodes = p.plan.counts[0];
    return decodes > 0 && t < p.plan.decode_starts[decodes];
}

// How a kernel looks a token up. kOneTrip: the lens and the plan's decode position first,
// all at once (a decode token in one round trip: for kernels whose CTAs start by waiting
// for their token). kChain: the position through the plan's arrays, then the lens, one
// load after another, as before v30. fp8m's walking producer looks the next item up
// beside its copies in 56 registers: with kOneTrip it spilled in its copy loop (-4.8% on
// prefill), and variants of it moved its spills and cost ~1% (docs/perf/LOG.md, session 10);
// with kChain its SASS is that of before v30.
enum class Lookup { kOneTrip, kChain };

// Token t's active SWA and extra columns; false when t is padding. *split: whether its
// KV work is split across work items (as token_is_split), from the decode position
// kOneTrip loaded; false with kChain, whose caller asks token_is_split.
__device__ inline bool token_entries(const AttentionParams &p, int64_t t, Lookup how, int *n_swa, int *n_ext,
                                     bool *split)
{
    const bool one_trip = how == Lookup::kOneTrip;
    const TokenLoads l = one_trip ? token_loads(p, t) : TokenLoads{0, 0, SMLA_PLAN_NOT_DECODE};
    bool has_pos;
    int64_t pos;
    if (!token_position(p, t, l.decode_pos, &has_pos, &pos))
        return false;
    int swa = one_trip ? loaded_columns(l.swa_len, p.swa_idx.width) : active_columns(p.swa_idx, t);
    if (has_pos) {
        const int64_t allowed = pos + 1 < 0 ? 0 : (pos + 1 > p.window ? p.window : pos + 1);
        if (swa > allowed)
            swa = static_cast<int>(allowed);
    }
    *n_swa = swa;
    *n_ext = one_trip ? loaded_columns(l.ext_len, p.extra_idx.width) : active_columns(p.extra_idx, t);
    *split = one_trip && p.splits > 1 && (p.split_all || !p.has_plan || l.decode_pos != SMLA_PLAN_NOT_DECODE);
    return true;
}

// The part of token t's work one work item (heads h0 .. h0+heads-1, split `split`) does:
// entries, and tiles [first, first + ntiles) of tile_rows entries each.
struct WorkItem {
    int n_swa, n;   // active SWA entries, all active entries
    int first, ntiles;
    bool split;     // the token is split: the item writes partial results
};

// (item_kind and work_item below are not one function with the empty write on top: the
// heads-on-M kernels then compile to other code, fp8m's walking producer with 178 bytes of
// spills instead of 100, bf16m with 12 instead of 0 and 4.)
// What a work item has to do: nothing (t is padding, or an unsplit token's item other than
// split 0, or a split past the token's entries), write an unsplit token's empty output
// (no active entry: zeros, -inf), or compute its tiles (*w).
enum class ItemKind { kNothing, kEmptyToken, kTiles };
// Lookups as Lookup::kOneTrip.
__device__ inline ItemKind item_kind(const AttentionParams &p, int64_t t, int split, int tile_rows, WorkItem *w)
{
    int n_swa, n_ext;
    if (!token_entries(p, t, Lookup::kOneTrip, &n_swa, &n_ext, &w->split))
        return ItemKind::kNothing; // padding row: nothing is written
    w->n_swa = n_swa;
    w->n = n_swa + n_ext;
    if (!w->split && split > 0)
        return ItemKind::kNothing; // an unsplit token is done by its split-0 item
    const int all_tiles = (w->n + tile_rows - 1) / tile_rows;
    w->first = split * p.split_tiles;
    if (w->first >= all_tiles) // an empty split: combine_kernel knows the token's split count
        return !w->split && w->n == 0 ? ItemKind::kEmptyToken : ItemKind::kNothing;
    w->ntiles = w->split ? min(all_tiles - w->first, p.split_tiles) : all_tiles;
    return ItemKind::kTiles;
}

// False when the item has nothing to compute: t is padding, or an unsplit token's item
// other than split 0, or a split past the token's entries. An unsplit token with no
// active entry gets its output (zeros, -inf) written here, by `threads` threads.
__device__ inline bool work_item(const AttentionParams &p, int64_t t, Lookup how, int h0, int heads, int split,
                                 int tile_rows, int tid, int threads, WorkItem *w)
{
    int n_swa, n_ext;
    if (!token_entries(p, t, how, &n_swa, &n_ext, &w->split))
        return false; // padding row: nothing is written
    w->n_swa = n_swa;
    w->n = n_swa + n_ext;
    if (how == Lookup::kChain) // after the entries: the walker's code of before v30
        w->split = token_is_split(p, t);
    if (!w->split && split > 0)
        return false; // an unsplit token is done by its split-0 item
    const int all_tiles = (w->n + tile_rows - 1) / tile_rows;
    w->first = split * p.split_tiles;
    if (!w->split && w->n == 0)
        write_empty_token(p, t, h0, heads, tid, threads);
    if (w->first >= all_tiles)
        return false; // an empty split: combine_kernel knows the token's split count
    w->ntiles = w->split ? min(all_tiles - w->first, p.split_tiles) : all_tiles;
    return true;
}

// Address of the row entry e (< n_swa + n_ext) of token t reads, or 0 when its index is
// invalid. Rows are 16-byte aligned, so the low bits are free to tag the format:
// kRowE4M3 for `fp8` rows, kRowDsMla for `fp8_ds_mla` rows, whose scale row's address
// goes to *scale_row (when given). Kernels that compute in BF16 convert tagged rows.
constexpr uint64_t kRowE4M3 = 1, kRowDsMla = 2, kRowTags = 3;

// fp8_ds_mla rows: 28 16-byte chunks of E4M3 NoPE data, then 8 chunks of BF16 RoPE.
constexpr int kDsNopeChunks = SMLA_DS_MLA_NOPE / 16, kDsRopeChunks = SMLA_DS_MLA_ROPE * 2 / 16;

// The slot id of entry e of token t (one global load) and its pool, split from the
// address computation so that kernels can issue the load early and use it late.
struct EntrySlot {
    int32_t slot;
    bool swa;
};

__device__ inline EntrySlot entry_slot(const AttentionParams &p, int64_t t, int e, int n_swa)
{
    const bool swa = e < n_swa;
    const IndexParams &ix = swa ? p.swa_idx : p.extra_idx;
    return EntrySlot{ix.indices[t * ix.row_stride + (swa ? e : e - n_swa)], swa};
}

__device__ inline uint64_t slot_row(const AttentionParams &p, EntrySlot es, uint64_t *scale_row = nullptr)
{
    const PoolParams &pool = es.swa ? p.swa : p.extra;
    if (es.slot < 0 || es.slot >= pool.rows)
        return 0;
    const int64_t block = es.slot / pool.block_size, row = es.slot % pool.block_size;
    const uint8_t *block_base = pool.data + block * pool.block_stride;
    if (pool.format == SMLA_KV_FP8_DS_MLA) {
        if (scale_row)
            *scale_row = reinterpret_cast<uint64_t>(block_base + int64_t(pool.block_size) * SMLA_DS_MLA_DATA_BYTES +
                                                    row * SMLA_DS_MLA_SCALE_BYTES);
        return reinterpret_cast<uint64_t>(block_base + row * SMLA_DS_MLA_DATA_BYTES) | kRowDsMla;
    }
    const bool fp8 = pool.format == SMLA_KV_FP8;
    return reinterpret_cast<uint64_t>(block_base + row * (fp8 ? 512 : 1024)) | (fp8 ? kRowE4M3 : 0);
}

__device__ inline uint64_t entry_row(const AttentionParams &p, int64_t t, int e, int n_swa,
                                     uint64_t *scale_row = nullptr)
{
    return slot_row(p, entry_slot(p, t, e, n_swa), scale_row);
}

} // namespace smla
